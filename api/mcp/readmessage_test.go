package mcp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadMessageReadsAsReadFrom holds readMessage to what the handler did before it: a
// bytes.Buffer's ReadFrom of the body limited to limit+1 bytes, the same bytes and the
// same error, whatever the declared length says and however the body comes.
func TestReadMessageReadsAsReadFrom(t *testing.T) {
	boom := errors.New("boom")
	const limit = 64
	bodies := map[string]string{"empty": "", "short": `{"jsonrpc":"2.0"}`, "at the limit": strings.Repeat("x", limit),
		"past the limit": strings.Repeat("y", limit+10)}
	readers := map[string]func(string) io.Reader{
		"whole":      func(s string) io.Reader { return strings.NewReader(s) },
		"a byte":     func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"data+EOF":   func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
		"then fails": func(s string) io.Reader { return io.MultiReader(strings.NewReader(s), iotest.ErrReader(boom)) },
	}
	for bname, body := range bodies {
		for rname, reader := range readers {
			for _, size := range []int64{-1, 0, int64(len(body)) - 1, int64(len(body)), int64(len(body)) + 1, limit, limit + 1} {
				if size < -1 {
					continue
				}
				var old bytes.Buffer
				_, oldErr := old.ReadFrom(io.LimitReader(reader(body), limit+1))
				got, err := readMessage(reader(body), size, limit)
				if !bytes.Equal(got, old.Bytes()) || !errors.Is(err, oldErr) && err != oldErr {
					t.Errorf("%s, %s, declared %d: got %q, %v; ReadFrom %q, %v", bname, rname, size, got, err, old.Bytes(), oldErr)
				}
			}
		}
	}
}
