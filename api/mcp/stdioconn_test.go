package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// rawStdio is a stdio session driven by raw JSON-RPC lines: send writes one line to the
// server's input, next reads one answer line from its output.
type rawStdio struct {
	t     *testing.T
	in    *io.PipeWriter
	lines *bufio.Scanner
	done  chan error
}

func newRawStdio(t *testing.T, serve func(in io.Reader, out io.Writer) error) *rawStdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &rawStdio{t: t, in: inW, lines: bufio.NewScanner(outR), done: make(chan error, 1)}
	s.lines.Buffer(make([]byte, 1<<20), 1<<20)
	go func() { s.done <- serve(inR, outW); outW.Close() }()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return s
}

func (s *rawStdio) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// next reads one answer, its numbers as json.Number.
func (s *rawStdio) next() obj {
	s.t.Helper()
	if !s.lines.Scan() {
		s.t.Fatalf("the session ended: %v", s.lines.Err())
	}
	return decodeLine(s.t, s.lines.Bytes())
}

func decodeLine(t *testing.T, line []byte) obj {
	t.Helper()
	var m obj
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("the server wrote a line that is not a JSON object: %q", line)
	}
	return m
}

const (
	rawInitialize  = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	rawInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// rpcCode is the code of an answer's JSON-RPC error, 0 when it has none.
func (o obj) rpcCode() float64 {
	e, _ := o["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func (o obj) rpcMessage() string {
	e, _ := o["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// TestStdioRequestsBeforeInitializeAreInvalidRequests (found by a black-box test): over
// stdio, a request of the session protocol sent before initialize (tools/call, tools/list)
// is answered with a JSON-RPC invalid request (-32600) that says to initialize first, not
// with the SDK's error of code 0, which JSON-RPC does not define; ping is answered, and
// after initialize the same call is served. The embedded server and the proxy alike.
func TestStdioRequestsBeforeInitializeAreInvalidRequests(t *testing.T) {
	svc := newService(t, 0)
	ts := newHTTPServer(t, svc)
	for name, serve := range map[string]func(in io.Reader, out io.Writer) error{
		"embedded": func(in io.Reader, out io.Writer) error { return ServeStdio(t.Context(), svc, "a", in, out) },
		"proxy": func(in io.Reader, out io.Writer) error {
			return ServeStdioProxy(t.Context(), ts.URL, "a", nil, in, out)
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := newRawStdio(t, serve)
			call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_create","arguments":{"id":"w"}}}`
			s.send(call)
			if m := s.next(); m["id"] != float64(1) || m.rpcCode() != codeInvalidRequest || m.rpcMessage() !=
				"Invalid Request: tools/call before initialize: a session begins with initialize (only ping may come before it), then notifications/initialized once it is answered" {
				t.Errorf("tools/call before initialize: %v", m)
			}
			s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			if m := s.next(); m["id"] != float64(2) || m.rpcCode() != codeInvalidRequest {
				t.Errorf("tools/list before initialize: %v", m)
			}
			s.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			if m := s.next(); m["id"] != float64(3) || m["result"] == nil {
				t.Errorf("ping before initialize: %v", m)
			}
			s.send(rawInitialize)
			if m := s.next(); m["id"] != "init" || m["result"] == nil {
				t.Fatalf("initialize: %v", m)
			}
			s.send(rawInitialized)
			s.send(call)
			if m := s.next(); m["id"] != float64(1) || m["result"] == nil {
				t.Errorf("tools/call after initialize: %v", m)
			}
			s.in.Close()
			if err := <-s.done; err != nil {
				t.Errorf("the session ended with %v", err)
			}
		})
	}
}

// A request of the stateless protocol (its version in _meta) needs no initialize over
// stdio either, and no answer to it is rewritten.
func TestStdioStatelessRequestsNeedNoInitialize(t *testing.T) {
	svc := newService(t, 0)
	s := newRawStdio(t, func(in io.Reader, out io.Writer) error { return ServeStdio(t.Context(), svc, "a", in, out) })
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_create","arguments":{"id":"w"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if m := s.next(); m["id"] != float64(1) || m["result"] == nil {
		t.Errorf("a stateless tools/call: %v", m)
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workbench_create","arguments":{"id":"w"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if m := s.next(); m["id"] != float64(2) || m.rpcCode() != codeInvalidParams {
		t.Errorf("a stateless tools/call without its capabilities: %v", m)
	}
}

// serveToEnd serves input (lines, then its end) with ServeStdio on svc and returns what
// the session wrote once it has ended.
func serveToEnd(t *testing.T, svc *workbench.Service, input string) *workbenchtest.LogBuffer {
	t.Helper()
	return serveToEndThen(t, svc, input, nil)
}

// serveToEndThen is serveToEnd whose input calls atEOF (when not nil) the first time it
// reports its end, before the session sees the end.
func serveToEndThen(t *testing.T, svc *workbench.Service, input string, atEOF func()) *workbenchtest.LogBuffer {
	t.Helper()
	out := &workbenchtest.LogBuffer{}
	done := make(chan error, 1)
	in := &endHook{r: strings.NewReader(input), atEOF: atEOF}
	go func() { done <- ServeStdio(t.Context(), svc, "a", in, out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the session ended with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the session did not end a minute after its input did")
	}
	return out
}

// endHook reads r and calls atEOF once, when r first reports its end.
type endHook struct {
	r     io.Reader
	atEOF func()
	once  sync.Once
}

func (h *endHook) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err == io.EOF && h.atEOF != nil {
		h.once.Do(h.atEOF)
	}
	return n, err
}

// answersByID are the answer lines of a session's output by their id (printed with
// fmt.Sprint), each id's in order.
func answersByID(t *testing.T, output string) map[string][]obj {
	t.Helper()
	answers := map[string][]obj{}
	for _, line := range strings.Split(strings.TrimSuffix(output, "\n"), "\n") {
		if line == "" {
			continue
		}
		m := decodeLine(t, []byte(line))
		answers[fmt.Sprint(m["id"])] = append(answers[fmt.Sprint(m["id"])], m)
	}
	return answers
}

// holdBudget takes the whole memory budget of svc, so that a call that needs a share of
// it (workbench_search) waits; the returned func gives it back (once).
func holdBudget(t *testing.T, svc *workbench.Service) func() {
	t.Helper()
	release, err := svc.AdmitMemory(t.Context(), svc.Config().QueryBudgetBytes, "the test's hold")
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	give := func() { once.Do(release) }
	t.Cleanup(give)
	return give
}

const (
	rawCreate = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workbench_create","arguments":{"id":"w"}}}`
	rawSearch = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"workbench_search","arguments":{}}}`
)

// TestStdioAnswersWhatItReadBeforeItsInputEnded (found by a black-box test: `printf
// '<initialize>\n<initialized>\n<tools/call>\n' | cairn mcp` printed nothing and exited
// 0): when stdin ends, the requests already read are answered before the session ends,
// also one that is still waiting (here for the node's memory budget) when the input ends.
func TestStdioAnswersWhatItReadBeforeItsInputEnded(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, QueryQueueTimeout: time.Minute}).Service
	answers := answersByID(t, serveToEnd(t, svc, rawInitialize+"\n"+rawInitialized+"\n"+rawCreate+"\n").String())
	if a := answers["init"]; len(a) != 1 || a[0]["result"] == nil {
		t.Errorf("initialize: %v", a)
	}
	if a := answers["2"]; len(a) != 1 || a[0]["result"] == nil {
		t.Errorf("tools/call: %v", a)
	}

	// The budget is given back when the input ends: the search, read before that, cannot
	// have been answered by then.
	give := holdBudget(t, svc)
	answers = answersByID(t, serveToEndThen(t, svc, rawInitialize+"\n"+rawInitialized+"\n"+rawSearch+"\n", give).String())
	a := answers["3"]
	if len(a) != 1 || a[0]["result"] == nil {
		t.Fatalf("the search that waited for the budget: %v", a)
	}
	if sc, _ := a[0]["result"].(map[string]any)["structuredContent"].(map[string]any); sc["status"] != "success" {
		t.Errorf("the search that waited for the budget: %v", a[0])
	}
}

// TestStdioAnswersWhatItCannotFinishWithAnError: a request still unanswered
// stdioDrainTimeout after the input ended gets a JSON-RPC server error saying so, never
// silence, and nothing more after it; the requests that did finish get their results, and
// the session ends.
func TestStdioAnswersWhatItCannotFinishWithAnError(t *testing.T) {
	defer func(d time.Duration) { stdioDrainTimeout = d }(stdioDrainTimeout)
	stdioDrainTimeout = 300 * time.Millisecond
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, QueryQueueTimeout: time.Minute}).Service
	give := holdBudget(t, svc)
	out := serveToEnd(t, svc, rawInitialize+"\n"+rawInitialized+"\n"+rawSearch+"\n"+rawCreate+"\n")
	give() // the search, cancelled with the session, must not be answered again
	// Wait until the search neither waits for the budget nor holds it: its handler has
	// ended, and the answer it may have written then is in out.
	retry.SucceedsSoon(t, "the search's handler ends", func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		release, err := svc.AdmitMemory(ctx, svc.Config().QueryBudgetBytes, "the test's check")
		if err != nil {
			return err
		}
		release()
		return nil
	})
	answers := answersByID(t, out.String())
	if a := answers["2"]; len(a) != 1 || a[0]["result"] == nil {
		t.Errorf("the create: %v", a)
	}
	a := answers["3"]
	if len(a) != 1 || a[0].rpcCode() != codeServerError || a[0].rpcMessage() != "Server error: the tools/call request was not answered "+
		"within 300ms after the session's input ended, and the session ends without its answer: a change it makes may or may "+
		"not apply, so read the state back before sending it again" {
		t.Errorf("the search still waiting at the deadline: %v", a)
	}
	if len(answers) != 3 {
		t.Errorf("answers to %d ids, want 3 (init, 2, 3): %v", len(answers), answers)
	}
}
