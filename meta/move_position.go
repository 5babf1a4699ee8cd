package meta

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// A MovePosition's After is a table key, and table keys are bytes (big-endian counters,
// NUL separators), not UTF-8 text: encoded as a CBOR text string, a key with such bytes
// would not decode (every decoder here rejects invalid UTF-8), so a move record walking
// past one would break a snapshot's restore and a forwarded answer. It is encoded as a
// byte string; a text string (what a record written before this encoding holds, always
// valid UTF-8 then) still decodes.

// movePositionWire is MovePosition as encoded: every field of MovePosition, each under
// its key there (TestMovePositionCodecCarriesEveryField walks them).
type movePositionWire struct {
	Table int    `cbor:"1,keyasint,omitempty"`
	After []byte `cbor:"2,keyasint,omitempty"`
	Sent  int64  `cbor:"3,keyasint,omitempty"`
}

// movePositionRead is MovePosition as decoded: After either a byte or a text string.
type movePositionRead struct {
	Table int             `cbor:"1,keyasint,omitempty"`
	After cbor.RawMessage `cbor:"2,keyasint,omitempty"`
	Sent  int64           `cbor:"3,keyasint,omitempty"`
}

// MarshalCBOR encodes the position with After as a byte string.
func (p MovePosition) MarshalCBOR() ([]byte, error) {
	w := movePositionWire{Table: p.Table, Sent: p.Sent}
	if p.After != "" {
		w.After = []byte(p.After)
	}
	return encMode.Marshal(w)
}

// UnmarshalCBOR decodes a position whose After is a byte string, or a text string.
func (p *MovePosition) UnmarshalCBOR(data []byte) error {
	var r movePositionRead
	if err := positionDecMode.Unmarshal(data, &r); err != nil {
		return err
	}
	p.Table, p.After, p.Sent = r.Table, "", r.Sent
	if len(r.After) == 0 {
		return nil
	}
	switch r.After[0] >> 5 { // the CBOR major type
	case 2:
		var b []byte
		if err := positionDecMode.Unmarshal(r.After, &b); err != nil {
			return err
		}
		p.After = string(b)
	case 3:
		if err := positionDecMode.Unmarshal(r.After, &p.After); err != nil {
			return err
		}
	default:
		return fmt.Errorf("meta: a move position's key is CBOR major type %d, want a byte or text string", r.After[0]>>5)
	}
	return nil
}

// positionDecMode decodes positions: small, flat values.
var positionDecMode, _ = cbor.DecOptions{MaxNestedLevels: 4, MaxMapPairs: 16}.DecMode()
