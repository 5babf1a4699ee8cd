package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// BenchmarkToolCall measures one tools/call of the tools of `cairn bench`'s MCP tool mix
// (BENCHMARKS.md) through the streamable HTTP handler on the stateless lane, as the
// go-sdk client sends it, without a socket: on a workbench of 64 text files of 1 KiB
// under input/bench/mcp. The writes (a 1 KiB put_file replacing one file, a 128-byte
// append to one log) go through the node's single-voter Raft group, fsync included.
func BenchmarkToolCall(b *testing.B) {
	n := workbenchtest.New(b, workbench.Config{InlineMaxBytes: 4096})
	line := []byte("1 alpha build error delta epoch fetch graph index merge model output parse\n")
	body := bytes.Repeat(line, 1024/len(line)+1)[:1024]
	for i := range 64 {
		if _, err := n.Service.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w",
			Path: fmt.Sprintf("input/bench/mcp/doc-%09d.txt", i), Body: bytes.NewReader(body), SizeHint: int64(len(body)),
			ContentType: "text/plain; charset=utf-8", CreateWorkbench: true}); err != nil {
			b.Fatal(err)
		}
	}
	text := string(body)
	if _, err := n.Service.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w",
		Path: "outputs/bench/note.txt", Body: bytes.NewReader(body), SizeHint: int64(len(body)),
		ContentType: "text/plain; charset=utf-8"}); err != nil {
		b.Fatal(err)
	}
	// The node's audit lines at --log-level warn: not written.
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := Handler(n.Service, Options{Logger: quiet})
	mux := http.NewServeMux()
	mux.Handle("/v1/agents/{agent}/mcp", h)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"cairn-bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, c := range []struct{ tool, args string }{
		{"workbench_read", `{"id":"w","section":"input","path":"bench/mcp/doc-000000007.txt","limit":50}`},
		{"workbench_stat", `{"id":"w","section":"input","path":"bench/mcp/doc-000000007.txt"}`},
		{"workbench_list", `{"id":"w","section":"input","path":"bench/mcp","limit":100}`},
		{"workbench_grep", `{"id":"w","pattern":"error","recursive":true,"section":"input","path":"bench/mcp","limit":20}`},
		{"workbench_put_file", fmt.Sprintf(`{"id":"w","section":"outputs","path":"bench/note.txt","text":%q,"replace":true}`, text)},
		{"workbench_append", fmt.Sprintf(`{"id":"w","section":"logs","path":"bench/agent.log","text":%q}`, text[:128])},
	} {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, c.tool, c.args, meta)
		b.Run(c.tool, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/agents/a/mcp", bytes.NewReader([]byte(msg)))
				for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
					"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": c.tool} {
					req.Header.Set(k, v)
				}
				w := httptest.NewRecorder()
				mux.ServeHTTP(w, req)
				if w.Code != http.StatusOK || bytes.Contains(w.Body.Bytes(), []byte(`"isError":true`)) {
					b.Fatalf("%s: HTTP %d %.300s", c.tool, w.Code, w.Body.Bytes())
				}
			}
		})
	}
}
