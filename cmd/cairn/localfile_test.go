package main

import (
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A black-box finding: a local file's error (a FILE the command reads, a path it writes)
// was described as Unavailable, the network's code, because an errno satisfies net.Error.
// Now it names what is wrong with the file; a network error keeps Unavailable.
func TestALocalFilesErrorIsNotTheNetworks(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := execCairn(t, "put", "--server", "http://127.0.0.1:1", "--workbench", "w", "input/a", filepath.Join(file, "x"))
	if code, msg := failure(err); code != "InvalidArguments" || !strings.Contains(msg, "not a directory") {
		t.Fatalf("put of a FILE through a file: %s: %s; want InvalidArguments naming the file's error", code, msg)
	}

	for _, tc := range []struct {
		err  error
		code string
	}{
		{&fs.PathError{Op: "open", Path: "out.json", Err: syscall.EACCES}, "PermissionDenied"},
		{&fs.PathError{Op: "write", Path: "out.json", Err: syscall.ENOSPC}, "ResourceExhausted"},
		{&fs.PathError{Op: "read", Path: "dir", Err: syscall.EISDIR}, "InvalidArguments"},
		{&fs.PathError{Op: "open", Path: "gone", Err: syscall.ENOENT}, "NotFound"},
		{&url.Error{Op: "Get", URL: "http://127.0.0.1:1/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, "Unavailable"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "Unavailable"},
	} {
		if code, _ := describeError(errors.Join(errors.New("context"), tc.err)); code != tc.code {
			t.Errorf("%v: %s, want %s", tc.err, code, tc.code)
		}
	}
}
