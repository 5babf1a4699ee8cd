package main

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// Test support shared by the command tests: an in-process node to talk to, and ways to
// run the cairn command line against it.

// testHandler starts an in-process node (4 KiB inline bodies) and returns it and its REST
// handler (ready as its shard is), which the caller serves.
func testHandler(t *testing.T) (*workbenchtest.Node, *rest.Handler) {
	t.Helper()
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	return n, rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready})
}

// testNode starts an in-process node (4 KiB inline bodies) and serves its REST API on a
// test server closed with the test.
func testNode(t *testing.T) (*workbenchtest.Node, *httptest.Server) {
	t.Helper()
	n, h := testHandler(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return n, srv
}

// newTestServer serves the REST API of an in-process node and returns its URL.
func newTestServer(t *testing.T) string {
	t.Helper()
	_, srv := testNode(t)
	return srv.URL
}

// execCairn runs the cairn command line in-process and returns what it printed and the
// error main would report.
func execCairn(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return execCairnIn(t.Context(), nil, args...)
}

// execCairnIn is execCairn under ctx with stdin (nil: the process's own); safe to call
// from several goroutines.
func execCairnIn(ctx context.Context, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	root := newCLI()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	if stdin != nil {
		root.SetIn(stdin)
	}
	root.SetArgs(args)
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// cli runs a cairn command that must succeed and returns its stdout.
func cli(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := execCairn(t, args...)
	if err != nil {
		t.Fatalf("cairn %s: %v (stderr %q)", strings.Join(args, " "), err, errOut)
	}
	return out
}

// runCairn runs the cairn command line against server and returns its stdout.
func runCairn(t *testing.T, server string, args ...string) string {
	t.Helper()
	return cli(t, append([]string{"--server", server}, args...)...)
}
