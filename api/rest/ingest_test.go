package rest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
)

// TestTricklingUploadsLeaveOtherPrincipalsWritesFree (issue 25, finding 12): uploads that
// send 8 KiB and then stall — more of them than the node has ingest slots — do not hold
// the slots while they wait for their client, so another principal's write above the
// inline limit completes while they are still open; each stalled upload completes too
// once its client sends the rest.
func TestTricklingUploadsLeaveOtherPrincipalsWritesFree(t *testing.T) {
	const slots, trickles = 2, 8
	s := newAttribServer(t, workbench.Config{MaxConcurrentIngests: slots}, rest.Options{})
	head := bytes.Repeat([]byte("t"), 8<<10)
	fed := make(chan error, trickles)
	results := make(chan response, trickles)
	pipes := make([]*io.PipeWriter, trickles)
	for i := range trickles {
		pr, pw := io.Pipe()
		pipes[i] = pw
		t.Cleanup(func() { pw.Close() }) // before the server closes: it waits for the bodies
		putInBackground(fmt.Sprintf("%s%s/files/input/slow-%d", s.URL, wb, i), pr, "alice", results)
		go func() {
			_, err := pw.Write(head) // returns once the server has read all of it
			fed <- err
		}()
	}
	// Until the fix, the first `slots` uploads took every slot as they read past the
	// inline limit and kept them while they waited for their client.
	for range slots {
		if err := <-fed; err != nil {
			t.Fatal(err)
		}
	}
	// The bound only turns a write that would wait for the trickles into a failure.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "PUT", s.URL+wb+"/files/input/bobs", strings.NewReader(strings.Repeat("b", 10_000)))
	req.Header.Set(asHeader, "bob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("bob's write while alice's uploads trickle: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("bob's write while alice's uploads trickle: %d", resp.StatusCode)
	}
	select {
	case r := <-results:
		t.Fatalf("a trickling upload ended before bob's write: %d %s", r.status, r.body)
	default:
	}
	for range trickles - slots {
		if err := <-fed; err != nil {
			t.Fatal(err)
		}
	}
	for _, pw := range pipes {
		if _, err := pw.Write([]byte("!")); err != nil {
			t.Fatal(err)
		}
		pw.Close()
	}
	for range trickles {
		if r := <-results; r.status != 201 {
			t.Fatalf("a trickled upload: %d %s", r.status, r.body)
		}
	}
	r := do(t, "GET", s.URL+wb+"/files/input/slow-3", nil)
	if r.status != 200 || len(r.body) != len(head)+1 {
		t.Fatalf("a trickled upload reads back %d, %d bytes", r.status, len(r.body))
	}
}
