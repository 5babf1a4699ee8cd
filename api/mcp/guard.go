package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/cairnstore/cairn/internal/strictjson"
)

// stdioGuard sits between stdin and the SDK's stdio transport, and answers each line the
// SDK should not see as the HTTP endpoint answers such a body (checkInbound), with the
// same checks: a line longer than max bytes is an invalid request naming the limit
// (-32600 with data, oversize.go), as over HTTP; a line that is not valid JSON, not
// Unicode text or nested deeper than maxNestingDepth is a parse error (-32700, id null),
// in words that speak of a line; a line that is JSON but not one JSON-RPC 2.0 message (a batch, a
// scalar, a wrong "jsonrpc", an id that is not a string or a plainly written integer
// within ±(2^53-1), a member named as a JSON-RPC member but for case) is an invalid
// request (-32600), as are a request whose id is null and a notification with an id; an
// unknown method is -32601, params of the wrong shape -32602. Each is answered and the
// line dropped, so no line ends the session; valid messages pass unchanged. Blank lines
// are skipped. One difference from HTTP, where every POST gets an answer: a well-formed
// message without an id is a notification, which JSON-RPC 2.0 forbids answering, so one
// the checks refuse (an unknown method, a request's method sent without an id) is dropped
// unanswered.
type stdioGuard struct {
	r       *bufio.Reader
	out     *lineWriter
	max     int
	pending []byte
	err     error
}

func newStdioGuard(in io.Reader, out *lineWriter, max int) *stdioGuard {
	return &stdioGuard{r: bufio.NewReaderSize(in, 64<<10), out: out, max: max}
}

func (g *stdioGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, size, tooLong, err := g.readLine()
		g.err = err
		var m message
		switch {
		case tooLong:
			g.out.writeLine(messageTooLarge{leadingID(line), int64(size), int64(g.max)}.answer())
		case len(bytes.TrimSpace(line)) == 0:
		case !scanMessage(line, &m):
			g.refuseText(line)
		default:
			if e := checkClean(line, &m); e != nil {
				if !wellFormedNotification(line, &m) {
					g.out.rpcError(e.id, e.code, e.message)
				}
				continue
			}
			g.pending = append(line, '\n')
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// refuseText answers a line scanMessage finds not clean, as textError answers such a body
// but speaking of a line: not JSON, or nested deeper than the SDK's decoder reads (which
// would end the session), a parse error; a member named twice (which one wins is not ours
// to pick) as checkInbound answers it; text that is not Unicode (encoding/json would read
// it as U+FFFD: an argument so spelled would name another file) a parse error.
func (g *stdioGuard) refuseText(line []byte) {
	if !json.Valid(line) {
		g.out.parseError("the line is not valid JSON")
		return
	}
	if err := strictjson.Check(line); err != nil {
		if err.Duplicate {
			e := duplicateMember(line, err)
			g.out.rpcError(e.id, e.code, e.message)
			return
		}
		g.out.parseError("the line is not Unicode text (valid UTF-8, surrogate escapes in pairs): " + err.Error())
		return
	}
	if nestedDeeperThan(line, maxNestingDepth) {
		g.out.parseError(fmt.Sprintf("the line nests objects and arrays deeper than %d levels", maxNestingDepth))
		return
	}
	// Not reached while scanMessage is exact (FuzzInboundMatchesTheOldChecks).
	if e := decodedRequest(line).check(nil, nil); e != nil {
		g.out.rpcError(e.id, e.code, e.message)
		return
	}
	g.out.parseError("the line is not valid JSON")
}

// readLine returns the next line without its newline, and its size in bytes; a line above
// max bytes is read to its end and reported as tooLong with only its first idPrefixBytes
// bytes kept (for its id: oversize.go).
func (g *stdioGuard) readLine() (line []byte, size int, tooLong bool, err error) {
	var last [2]byte // the line's last two bytes read
	for {
		chunk, err := g.r.ReadSlice('\n')
		size += len(chunk)
		for _, b := range chunk[max(0, len(chunk)-2):] {
			last[0], last[1] = last[1], b
		}
		if !tooLong && size > g.max+1 {
			tooLong, line = true, bytes.Clone(line[:min(len(line), idPrefixBytes)])
		}
		switch room := idPrefixBytes - len(line); {
		case !tooLong:
			line = append(line, chunk...)
		case room > 0:
			line = append(line, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if last[1] == '\n' {
			size--
			if last[0] == '\r' {
				size--
			}
		}
		if tooLong {
			return line, size, true, err
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), size, false, err
	}
}

// lineWriter serializes whole-line writes to stdout: the SDK writes each message (with its
// newline) in one call, and the guard's parse errors go between messages, never inside one.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return nil }

// checkMessage reports why a JSON line is not one JSON-RPC 2.0 message ("" when it is),
// with the id to answer with (null when the message has no usable one).
func checkMessage(line []byte) (id json.RawMessage, why string) {
	null := json.RawMessage("null")
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if len(trimmed) > 0 && trimmed[0] == '[' {
			return null, "batches are not supported: send one message per line"
		}
		return null, "a message must be a JSON object"
	}
	// encoding/json matches member names case-insensitively and the SDK does not: a
	// message naming "ID" or "Method" would mean one thing here and another there.
	if members, ok := membersOf(trimmed, span{0, len(trimmed)}, nil); ok {
		var variant []byte
		var field string
		id := null
		for _, mb := range members {
			name := mb.decodedName(trimmed)
			if f := caseVariant(name); f != "" && variant == nil {
				variant, field = name, f
			}
			if v := mb.value.of(trimmed); string(name) == "id" && validID(v) {
				id = v
			}
		}
		if variant != nil {
			return id, caseRule(variant, field)
		}
	}
	var m struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
	}
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return null, "a message must be a JSON object"
	}
	if len(m.ID) > 0 && !validID(m.ID) {
		if isNumber(m.ID) {
			return m.ID, idRangeRule
		}
		return null, "id must be a string, an integer or null"
	}
	if len(m.ID) > 0 {
		id = m.ID
	} else {
		id = null
	}
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" {
		return id, `"jsonrpc" must be "2.0"`
	}
	if len(m.Method) > 0 {
		var name string
		if json.Unmarshal(m.Method, &name) != nil || name == "" {
			return id, "method must be a non-empty string"
		}
	}
	return nil, ""
}

// caseVariant returns the JSON-RPC member (jsonrpc, id, method, params) a member name
// differs from only by case (as encoding/json folds names: bytes.EqualFold), or "".
func caseVariant(name []byte) string {
	for _, f := range messageFields {
		if bytes.EqualFold(name, f) && !bytes.Equal(name, f) {
			return string(f)
		}
	}
	return ""
}

// caseRule is the answer to a message with a member named as a JSON-RPC member but for
// case.
func caseRule(name []byte, field string) string {
	return fmt.Sprintf("member %q is not %q: JSON-RPC member names are case-sensitive", truncate(string(name), 64), field)
}

// maxExactID is the largest integer id the go-sdk keeps exactly: it holds a number id as
// a float64 (or an int64 read through one), so 2^53+1 would be answered as 2^53 and
// 2^63-1 as -2^63. An integer id beyond ±maxExactID, or a number id that is not an
// integer, is refused (idRangeRule) rather than answered under another id.
//
// The SDK answers with the id's value, not its text, so a number id is served only when
// it is written as that value is written back: digits with an optional minus, no
// fraction, no exponent, not -0 (the SDK would answer 1.0 as 1, 1e2 as 100, -0 as 0).
// Any other spelling is refused with idRangeRule, its text echoed as sent.
const maxExactID = 1<<53 - 1

// idRangeRule is the answer to a number id that is not an integer within ±maxExactID
// written in plain digits; the id is echoed as sent.
const idRangeRule = "a number id must be an integer from -9007199254740991 to 9007199254740991 (±(2^53-1)) written in plain digits (no fraction, no exponent, not -0), which every JSON-RPC peer keeps exactly: send any other id as a string"

// isNumber reports whether a JSON value is a number.
func isNumber(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && (t[0] == '-' || t[0] >= '0' && t[0] <= '9')
}

// exactInt reports whether a JSON number is an integer within ±maxExactID written as the
// SDK writes it back: plain digits, not -0 (strconv.ParseInt reads "-0" as 0).
func exactInt(v []byte) bool {
	if string(v) == "-0" {
		return false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return err == nil && n >= -maxExactID && n <= maxExactID
}

// validID: a string, an integer within ±maxExactID, or null.
func validID(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	switch {
	case string(t) == "null":
		return true
	case len(t) > 0 && t[0] == '"':
		var s string
		return json.Unmarshal(t, &s) == nil
	}
	var n json.Number
	if json.Unmarshal(t, &n) != nil {
		return false
	}
	return exactInt([]byte(n))
}

func (l *lineWriter) rpcError(id json.RawMessage, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	l.Write(append(b, '\n'))
}

// writeLine writes one JSON-RPC message and its newline.
func (l *lineWriter) writeLine(msg []byte) {
	l.Write(append(msg, '\n'))
}

func (l *lineWriter) parseError(msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "Parse error: " + msg}})
	l.Write(append(b, '\n'))
}
