package workbench

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// RewindTokenTTL is how long a rewind preview's token stays applicable.
const RewindTokenTTL = time.Hour

// MaxRewindTokenBytes bounds a token a caller hands back (it is about 150 bytes); a longer
// one is refused like a forged one. The cairn_rewind schema (api/mcp) states the same.
const MaxRewindTokenBytes = 512

// rewindToken is what a preview hands out and an apply checks: self-verifying, with no
// server state behind it. It names the workbench incarnation and the shard version the
// preview read (Since), and the digest of the plan — the target as resolved, the scope,
// and every change with the generation it expects and the version it sets — so an apply
// recomputes the plan and applies it only when the digest matches and nothing in the
// scope changed after Since. It is signed with the node's cursor key for the agent root
// and the principal (cursor.go), so a token of another root or principal, or an edited
// one, is refused like a forged one.
type rewindToken struct {
	Workbench   string `json:"w"`
	Incarnation uint64 `json:"i"`
	// Created is the workbench's CreatedVersion, which a move of its root to another shard
	// keeps while it renumbers Incarnation: it tells the refusal of a token after a move
	// from one after the workbench was made again (incarnationChanged).
	Created    uint64 `json:"c,omitempty"`
	Since      uint64 `json:"s"`
	Plan       string `json:"d"` // the plan's SHA-256, base64url (planDigest)
	IssuedAtMs int64  `json:"t"`
}

// encodeToken signs t for kind ("rewind" or "merge": a token of one kind never applies
// the other).
func (s *Attempts) encodeToken(ctx context.Context, agent, kind string, t rewindToken) string {
	payload, _ := json.Marshal(t)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(s.base.cursors.sign(ctx, agent, append([]byte(kind+"\x00"), payload...)))
}

// decodeToken verifies a token's kind, signature, age and workbench. Any mismatch is
// InvalidArguments naming "token".
func (s *Attempts) decodeToken(ctx context.Context, agent, kind, id, text string) (rewindToken, *Error) {
	bad := func(why string) (rewindToken, *Error) { return rewindToken{}, invalidArgument("token", "%s", why) }
	foreign := "is not a " + kind + " token this server issued"
	p, sig, ok := strings.Cut(text, ".")
	if !ok || len(text) > MaxRewindTokenBytes {
		return bad(foreign)
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p)
	mac, err2 := enc.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, s.base.cursors.sign(ctx, agent, append([]byte(kind+"\x00"), payload...))) {
		return bad(foreign)
	}
	var t rewindToken
	if err := json.Unmarshal(payload, &t); err != nil {
		return bad(foreign)
	}
	if t.Workbench != id {
		return bad("was issued for another workbench")
	}
	if age := s.base.now().Sub(time.UnixMilli(t.IssuedAtMs)); age > RewindTokenTTL {
		e := invalidArgument("token", "expired %s ago (a preview's token is valid for %s); preview again", (age - RewindTokenTTL).Round(time.Second), RewindTokenTTL)
		e.Details["rule"] = "expired"
		return rewindToken{}, e
	}
	return t, nil
}

// planDigest is the digest a token carries: the resolved target, the scope and every
// change, each part length-prefixed.
func planDigest(target string, sc RewindScope, changes []meta.PathChange) string {
	h := sha256.New()
	var n [8]byte
	part := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	part(target)
	part(sc.String())
	for _, c := range changes {
		part(c.Path)
		part(strconv.FormatUint(c.ExpectGeneration, 10))
		part(c.SourcePath)
		part(strconv.FormatUint(c.SourceGeneration, 10))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Token kinds: the domain a token is signed under.
const (
	tokenRewind = "rewind"
	tokenMerge  = "merge"
)

// incarnationChanged is the refusal of an apply whose token names another incarnation of
// workbench name than ws, the one the apply found: it was deleted and made again since
// the preview, or it moved with its root to another shard, which renumbers incarnations
// (the token's creation version tells which). Either way the plan is previewed again.
func incarnationChanged(ws *meta.Workspace, tok rewindToken, name string) error {
	if ws.Incarnation == tok.Incarnation {
		return nil
	}
	why := "was deleted and created again since the preview"
	if tok.Created != 0 && tok.Created == ws.CreatedVersion {
		why = "moved with its root to another shard since the preview"
	}
	return PreconditionFailed(newError(CodeConflict, "workbench %q %s; preview again", name, why))
}
