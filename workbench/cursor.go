package workbench

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// MaxCursorAge bounds how long a cursor stays usable (docs/architecture.md#surfaces).
const MaxCursorAge = 24 * time.Hour

// cursor is the signed state of a paginated call. It binds everything that shaped the
// result, so it cannot be replayed against other arguments, another workbench or another
// incarnation of the same name.
type cursor struct {
	Kind        string `json:"k"` // "list", "read"
	Agent       string `json:"a"`
	Workbench   string `json:"w"`
	Incarnation uint64 `json:"i"`
	// Created is the workbench's CreatedVersion: a move of its root to another shard
	// keeps it and renumbers Incarnation, so it decides when set (issuedFor).
	Created uint64 `json:"c,omitempty"`
	Path    string `json:"p"`
	// Args is a digest of the remaining arguments that shaped the result (format, …).
	Args string `json:"x,omitempty"`
	// Fence is the workbench revision (list) or file generation (read) of the first page.
	Fence uint64 `json:"f"`
	// After is the last name returned (list); Offset the next record or byte (read).
	After  string `json:"n,omitempty"`
	Offset int64  `json:"o,omitempty"`
	// Snapshot is the snapshot id a snapshot read resolved to on the first page.
	Snapshot uint64 `json:"s,omitempty"`
	// Position is where a search resumes.
	Position *meta.Position `json:"q,omitempty"`
	IssuedAt int64          `json:"t"`
}

// issuedFor reports whether c was issued for ws, the workbench as the answering view
// holds it: the incarnation created at the version c names, which a move of the root to
// another shard keeps (docs/architecture.md, "Feed cursors from before the move"), or
// for a cursor without it the incarnation number, which the move renumbers.
func (c cursor) issuedFor(ws *meta.Workspace) bool {
	if c.Created != 0 {
		return c.Created == ws.CreatedVersion
	}
	return c.Incarnation == ws.Incarnation
}

type cursorCodec struct{ key []byte }

// sign is the cursor's MAC: over the payload, the agent root it was issued in and the
// principal it was issued to (access.go), so that a cursor of another root or another
// principal fails exactly as a forged one does.
func (c cursorCodec) sign(ctx context.Context, agent string, payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	var n [8]byte
	for _, part := range []string{caller(ctx).ID, agent} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		m.Write(n[:])
		m.Write([]byte(part))
	}
	m.Write(payload)
	return m.Sum(nil)[:16]
}

func (c cursorCodec) encode(ctx context.Context, cur cursor) string {
	cur.IssuedAt = time.Now().Unix()
	payload, _ := json.Marshal(cur)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(c.sign(ctx, cur.Agent, payload))
}

// decode verifies a cursor's signature (for this root and the caller) and age and that it
// was issued for the same kind of call on the same workbench and path. Any mismatch is
// InvalidArguments naming "cursor" (a forged, foreign or stale cursor gets no further).
func (c cursorCodec) decode(ctx context.Context, s, kind, agent, workbench, path string) (cursor, *Error) {
	bad := func(why string) (cursor, *Error) {
		return cursor{}, invalidArgument("cursor", "%s", why)
	}
	p, sig, ok := strings.Cut(s, ".")
	if !ok || len(s) > 8192 {
		return bad("is not a cursor this server issued")
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p)
	mac, err2 := enc.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, c.sign(ctx, agent, payload)) {
		return bad("is not a cursor this server issued")
	}
	var cur cursor
	if err := json.Unmarshal(payload, &cur); err != nil {
		return bad("is not a cursor this server issued")
	}
	if time.Since(time.Unix(cur.IssuedAt, 0)) > MaxCursorAge {
		return bad("has expired; start again without a cursor")
	}
	if cur.Kind != kind || cur.Agent != agent || cur.Workbench != workbench || cur.Path != path {
		return bad("was issued for other arguments")
	}
	return cur, nil
}
