package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// stdioGuard sits between stdin and the SDK's stdio transport. A line that is not valid
// JSON (or longer than max bytes) is answered here with a JSON-RPC parse error (-32700,
// id null) and dropped, so one bad line does not end the session; valid lines pass
// unchanged. Blank lines are skipped.
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
		line, tooLong, err := g.readLine()
		g.err = err
		switch {
		case tooLong:
			g.out.parseError("the message is longer than the server accepts")
		case len(bytes.TrimSpace(line)) == 0:
		case !json.Valid(line):
			g.out.parseError("the line is not valid JSON")
		default:
			g.pending = append(line, '\n')
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// readLine returns the next line without its newline; a line above max bytes is read to
// its end and reported as tooLong with no bytes kept.
func (g *stdioGuard) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := g.r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > g.max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), tooLong, err
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

func (l *lineWriter) parseError(msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "Parse error: " + msg}})
	l.Write(append(b, '\n'))
}
