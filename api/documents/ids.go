package documents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/gowebpki/jcs"
)

// StableKey is the identity function the working-documents design names but does not
// define (docs/documents.md#identities): the lower-case hex SHA-256 of the RFC 8785 (JCS)
// form of the JSON array of its parts, each a JSON string. StableKey("a", "b") is
// hex(sha256(`["a","b"]`)). Parts are never joined with a separator, so no two lists of
// parts share a key.
func StableKey(parts ...string) string {
	if parts == nil {
		parts = []string{}
	}
	b, err := json.Marshal(parts)
	if err != nil {
		panic(err) // a []string always marshals
	}
	c, err := jcs.Transform(b)
	if err != nil {
		panic(err) // json.Marshal output of strings is I-JSON
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// sha256Hex is the lower-case hex SHA-256 of s's UTF-8 bytes.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Source is the source of every working-document record and event (the design's Kind).
const Source = "workbench:documents"

// The design's identities (docs/documents.md#identities).

// DocumentID = stableKey("working-document", originEventId, createRequestId).
func DocumentID(originEventID, createRequestID string) string {
	return StableKey("working-document", originEventID, createRequestID)
}

// VersionID = stableKey("version", "workbench:documents", documentId, sha256(content)).
func VersionID(documentID, content string) string {
	return StableKey("version", Source, documentID, sha256Hex(content))
}

// DocumentRowID = stableKey("document", "workbench:documents", documentId).
func DocumentRowID(documentID string) string { return StableKey("document", Source, documentID) }

// SnapshotVersionID = stableKey("workbench-context-snapshot", documentId,
// sha256(canonical {baseVersionId, ids: sorted selected ids})), the selected event and
// version ids together, sorted by code point, deduplicated.
func SnapshotVersionID(documentID, baseVersionID string, eventIDs, versionIDs []string) string {
	ids := slices.Concat(eventIDs, versionIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return StableKey("workbench-context-snapshot", documentID, sha256Hex(string(canonical(map[string]any{"baseVersionId": baseVersionID, "ids": ids}))))
}

// RunID = stableKey("workbench-run", documentId, requestId).
func RunID(documentID, requestID string) string {
	return StableKey("workbench-run", documentID, requestID)
}

// SelectionID = stableKey("workbench-selection", documentId, requestId): Cairn's
// definition (the design names selectionId and keys the selected event by it, but does
// not derive it), so a replayed selection converges on one id.
func SelectionID(documentID, requestID string) string {
	return StableKey("workbench-selection", documentID, requestID)
}

// EventID is the id of a workbench event: stableKey(type, idempotency key parts…), so
// the event's id is its idempotency key (docs/documents.md#events).
func EventID(eventType string, keyParts ...string) string {
	return StableKey(append([]string{eventType}, keyParts...)...)
}

// JudgmentID = stableKey("workbench-judgment", decisionEventId): one judgment per decision.
func JudgmentID(decisionEventID string) string {
	return StableKey("workbench-judgment", decisionEventID)
}

// canonical is the RFC 8785 form of v (a value of JSON-able Go types).
func canonical(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c, err := jcs.Transform(b)
	if err != nil {
		panic(err)
	}
	return c
}

// jsonString is s as ECMAScript's JSON.stringify writes it (RFC 8785's string form).
func jsonString(s string) string { return string(canonical(s)) }

// Chars counts s as the design counts characters: UTF-16 code units (a JavaScript
// string's length), so a limit means what it means to the design's clients.
func Chars(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// Content is a version's content: frontmatter with the title (a JSON string), then the
// body (the design's Kind table).
func Content(title, body string) string { return "---\ntitle: " + jsonString(title) + "\n---\n" + body }

// splitContent returns the title and body of a version's content (ok false when it is not
// of Content's form).
func splitContent(content string) (title, body string, ok bool) {
	rest, ok := strings.CutPrefix(content, "---\ntitle: ")
	if !ok {
		return "", "", false
	}
	line, body, ok := strings.Cut(rest, "\n---\n")
	if !ok || json.Unmarshal([]byte(line), &title) != nil {
		return "", "", false
	}
	return title, body, true
}
