package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
)

// resultEncoder writes the JSON of a tool's result: the values encoding/json gives (with
// SetEscapeHTML(false)) byte for byte, faster for the kinds tool results are built of.
// Maps with string keys (keys in byte order, as encoding/json sorts them), slices of them
// and of any, strings of printable ASCII, integers, booleans and nil are written here;
// every other value (floats, json.Number, RawMessage, structs, named types, strings that
// need escaping) goes through encoding/json's Encoder, so its bytes are encoding/json's by
// construction. FuzzResultEncoderMatchesEncodingJSON holds the two together.
type resultEncoder struct {
	buf  bytes.Buffer
	enc  *json.Encoder // over buf, for the values above
	html *json.Encoder // over buf, escaping HTML characters as json.Marshal does (fastLane.encode)
}

// resultEncoders recycles encoders, so that a result is written into a buffer already
// grown to a result's size and copied out once, instead of growing a new one by doubling.
var resultEncoders = sync.Pool{New: func() any { return newResultEncoder() }}

// maxPooledResultBytes bounds the buffer an encoder keeps between results (a file read
// can make a result of several MiB; such a buffer is left to the collector).
const maxPooledResultBytes = 256 << 10

// release returns e to resultEncoders.
func (e *resultEncoder) release() {
	if e.buf.Cap() > maxPooledResultBytes {
		return
	}
	e.buf.Reset()
	resultEncoders.Put(e)
}

func newResultEncoder() *resultEncoder {
	e := &resultEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	e.html = json.NewEncoder(&e.buf)
	return e
}

// object writes m with the keys of first (those present) first, then the others in byte
// order.
func (e *resultEncoder) object(m map[string]any, first []string) error {
	if m == nil {
		e.buf.WriteString("null")
		return nil
	}
	keys := make([]string, 0, len(m))
	for _, k := range first {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
		}
	}
	rest := len(keys)
	for k := range m {
		if !slices.Contains(first, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys[rest:])
	e.buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		if err := e.str(k); err != nil {
			return err
		}
		e.buf.WriteByte(':')
		if err := e.value(m[k]); err != nil {
			return err
		}
	}
	e.buf.WriteByte('}')
	return nil
}

func (e *resultEncoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf.WriteString("null")
	case string:
		return e.str(x)
	case bool:
		e.buf.Write(strconv.AppendBool(e.buf.AvailableBuffer(), x))
	case int:
		e.buf.Write(strconv.AppendInt(e.buf.AvailableBuffer(), int64(x), 10))
	case int64:
		e.buf.Write(strconv.AppendInt(e.buf.AvailableBuffer(), x, 10))
	case uint64:
		e.buf.Write(strconv.AppendUint(e.buf.AvailableBuffer(), x, 10))
	case map[string]any:
		return e.object(x, nil)
	case []any:
		return array(e, x)
	case []map[string]any:
		return array(e, x)
	case []string:
		return array(e, x)
	default:
		return e.fallback(v)
	}
	return nil
}

// array writes s as encoding/json writes a slice (nil as null).
func array[T any](e *resultEncoder, s []T) error {
	if s == nil {
		e.buf.WriteString("null")
		return nil
	}
	e.buf.WriteByte('[')
	for i := range s {
		if i > 0 {
			e.buf.WriteByte(',')
		}
		if err := e.value(s[i]); err != nil {
			return err
		}
	}
	e.buf.WriteByte(']')
	return nil
}

// str writes s quoted: as it is when every byte is printable ASCII other than '"' and
// '\\' (what encoding/json writes unescaped with HTML escaping off), else through
// encoding/json.
func (e *resultEncoder) str(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return e.fallback(s)
		}
	}
	e.buf.WriteByte('"')
	e.buf.WriteString(s)
	e.buf.WriteByte('"')
	return nil
}

// fallback writes v with encoding/json, without the newline its Encoder ends with.
func (e *resultEncoder) fallback(v any) error {
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	e.buf.Truncate(e.buf.Len() - 1)
	return nil
}
