package workbenchtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// LogBuffer is a log destination many goroutines write to (a node's handlers, a transport's
// pipes) while the test reads it. The zero value is ready to use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Audits decodes the JSON log lines written so far and returns the audit lines among them
// (message workbench.AuditMessage), in the order they were written. A line that is not a
// JSON object fails the test.
func (b *LogBuffer) Audits(tb testing.TB) []map[string]any {
	tb.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader([]byte(b.String())))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			tb.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["msg"] == workbench.AuditMessage {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("log lines: %v", err)
	}
	return out
}
