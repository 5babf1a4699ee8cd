// Regression tests for bugs the integration tests found: truncated uploads stored as if
// whole, a truncated chunked upload spinning forever, and an import that uploaded part of a
// tree before rejecting a non-UTF-8 name.

package integration

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// requestsServed sums cairn_http_requests_total over status codes for one route and
// method: a request is counted once its handler returned.
func requestsServed(t *testing.T, base, route, method string) (int, error) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	total := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "cairn_http_requests_total{") ||
			!strings.Contains(line, `method="`+method+`"`) || !strings.Contains(line, `route="`+route+`"`) {
			continue
		}
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metrics line %q: %v", line, err)
		}
		total += int(n)
	}
	return total, sc.Err()
}

// abortUpload sends a request head and part of its body on a raw connection, then closes
// it: the client died mid-upload.
func abortUpload(t *testing.T, base, head string, body []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(append([]byte(head), body...)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// TestAbortedUploadIsNeverVisible: a PUT or append whose client dies after
// sending at most InlineMaxBytes (4096) of the body is committed as if the body had ended
// there. Cause: Service.ingest peeks the body with io.ReadFull and treats
// io.ErrUnexpectedEOF as "the body is short", but net/http also returns
// io.ErrUnexpectedEOF for a body cut off before its Content-Length or its last chunk.
func TestAbortedUploadIsNeverVisible(t *testing.T) {
	srv := framework.StartProcess(t, cairnBin, t.TempDir())
	if r := doHTTP(t, "PUT", fileURL(srv.URL, "a", "w", "logs/existing.log"), strings.NewReader("kept\n")); r.status != 201 {
		t.Fatalf("setup PUT: %d %s", r.status, r.body)
	}
	part := []byte(strings.Repeat("p", 500))
	cases := []struct{ name, method, path, head string }{
		{"PUT with Content-Length 1000, 500 bytes sent", "PUT", "input/cl.txt",
			"PUT /v1/agents/a/workbenches/w/files/input/cl.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n"},
		{"chunked PUT without its last chunk", "PUT", "input/chunked.txt",
			"PUT /v1/agents/a/workbenches/w/files/input/chunked.txt HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n1f4\r\n"},
		{"append with Content-Length 1000, 500 bytes sent", "POST", "logs/existing.log",
			"POST /v1/agents/a/workbenches/w/files/logs/existing.log?append HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n"},
	}
	for _, c := range cases {
		before, err := requestsServed(t, srv.URL, "file", c.method)
		if err != nil {
			t.Fatal(err)
		}
		abortUpload(t, srv.URL, c.head, part)
		retry.Within(t, 30*time.Second, "the server finished the aborted request", func() error {
			n, err := requestsServed(t, srv.URL, "file", c.method)
			if err == nil && n <= before {
				err = fmt.Errorf("%d %s requests served, %d before", n, c.method, before)
			}
			return err
		})
		r := doHTTP(t, "GET", fileURL(srv.URL, "a", "w", c.path), nil)
		switch {
		case c.path == "logs/existing.log" && string(r.body) != "kept\n":
			t.Errorf("%s: the file changed to %d bytes %.40q…; an aborted append must not apply", c.name, len(r.body), r.body)
		case c.path != "logs/existing.log" && r.status != 404:
			t.Errorf("%s: GET answers %d with %d bytes; an aborted upload must leave nothing", c.name, r.status, len(r.body))
		}
	}
}

// TestTruncatedChunkedUploadFailsPromptly: a chunked PUT of more than 8 MiB
// (content-defined chunking) whose client dies mid-body never finishes: the handler
// spins at 100% CPU in github.com/restic/chunker, whose Next treats io.ErrUnexpectedEOF as
// "no error" and, as net/http keeps returning it with 0 bytes, loops forever (seen with
// SIGQUIT: Service.ingest → Splitter.Next → chunker.(*Chunker).Next). Graceful shutdown
// then times out and `cairn serve` exits 1 ("cairn: Unavailable: context deadline
// exceeded"), which the server cleanup of this test reports too.
func TestTruncatedChunkedUploadFailsPromptly(t *testing.T) {
	srv := framework.StartProcess(t, cairnBin, t.TempDir())
	const sent = 20 << 20
	body := make([]byte, sent)
	for i := range body {
		body[i] = byte(i*7919>>3) ^ byte(i>>13)
	}
	abortUpload(t, srv.URL, fmt.Sprintf("PUT /v1/agents/a/workbenches/w/files/input/big.bin HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n", sent), body)
	retry.Within(t, 30*time.Second, "the server finished the aborted 20 MiB chunked PUT", func() error {
		n, err := requestsServed(t, srv.URL, "file", "PUT")
		if err == nil && n == 0 {
			err = fmt.Errorf("the request is still being handled")
		}
		return err
	})
	if r := doHTTP(t, "HEAD", fileURL(srv.URL, "a", "w", "input/big.bin"), nil); r.status != 404 {
		t.Errorf("the aborted upload is visible: HEAD %d, Content-Length %s", r.status, r.header.Get("Content-Length"))
	}
}

// TestImportRejectsANonUTF8NameBeforeUploading: client.Import promises that a
// name the server would reject fails the import before anything is uploaded, but its
// local check (checkRemoteName) misses invalid UTF-8, which meta.ValidatePath rejects: the
// import uploads files, then fails with "InvalidArguments: ... path: must be valid UTF-8"
// (not wrapping ErrUnsafePath), leaving a partial workbench behind.
func TestImportRejectsANonUTF8NameBeforeUploading(t *testing.T) {
	srv := framework.StartProcess(t, cairnBin, t.TempDir())
	dir := t.TempDir()
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bad-\xff.txt"), []byte("bad"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, cliOptions{bin: cairnBin}, "import", dir, "--agent", "a", "--workbench", "w", "--server", srv.URL)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "cairn: InvalidArguments: ") {
		t.Errorf("import of a tree with a non-UTF-8 name: want exit 1 with InvalidArguments:\n%s", r)
	}
	if l := doHTTP(t, "GET", srv.URL+"/v1/agents/a/workbenches/w/list?path=input", nil); l.status != 404 {
		t.Errorf("the failed import left a workbench behind (list input: %d, %d bytes): it should fail before uploading anything", l.status, len(l.body))
	}
}
