package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// MintPath is the client listener's route by which a key makes a key narrower than itself
// (workbench/auth/mint.go): an agent hands a sub-agent a key for one workbench, a few
// directories and an hour, without an operator.
//
//	POST /v1/keys   body KeyRequest; 201 as POST /v1/admin/keys: the new key and its secret, once;
//	                403 PermissionDenied (details.field) when the key would reach, hold or outlive more than the caller's
const MintPath = "/v1/keys"

// mintRoute serves MintPath over keys in front of next, after authentication (authn): the
// caller's principal is the minter, its key's record (keys.Lookup) gives its expiry and
// how deep it stands in a minting chain. A node without authentication mints as the
// local operator.
type mintRoute struct {
	keys auth.Store
	next http.Handler
}

func (m mintRoute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.EscapedPath() != MintPath {
		m.next.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST")
		return
	}
	var in KeyRequest
	if err := decodeJSON(r, &in); err != nil {
		keyError(w, err)
		return
	}
	now := time.Now()
	p, ok := auth.FromContext(r.Context())
	if !ok {
		p = auth.Local
	}
	var minter auth.Key
	if p.ID != auth.LocalID {
		var err error
		if minter, err = m.keys.Lookup(p.ID); err != nil {
			keyError(w, err)
			return
		}
		if auth.MintDepth(m.keys, minter) >= auth.MaxMintDepth {
			mintDenied(w, &auth.InvalidSpecError{Field: "minted_by", Rule: "is too deep a chain: a key minted by a minted key… at most 8 deep"})
			return
		}
	}
	k, token, err := newKeyOf(in, now)
	if err == nil {
		if err = auth.Narrower(p, minter.ExpiresAt, in.spec()); err != nil {
			mintDenied(w, err)
			return
		}
		k.MintedBy = minter.ID
		err = m.keys.Create(r.Context(), k)
	}
	if err != nil {
		keyError(w, err)
		return
	}
	writeNewKey(w, k, token)
}

// mintDenied answers a key that would be broader than its minter: 403 naming the field.
func mintDenied(w http.ResponseWriter, err error) {
	var ie *auth.InvalidSpecError
	if !errors.As(err, &ie) {
		keyError(w, err)
		return
	}
	writeEnvelope(w, http.StatusForbidden, &workbench.Error{Code: workbench.CodePermissionDenied,
		Message: "a minted key must be no broader than the key that mints it: " + ie.Error(), Details: map[string]any{"field": ie.Field}})
}
