package workbench_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// Audit.Log writes its line at Info, and builds nothing (no allocation) for a logger
// that drops Info lines.
func TestAuditLogOnlyWhenInfoEnabled(t *testing.T) {
	a := workbench.Audit{Surface: "rest/put", Agent: "a", Workbench: "w", Path: "input/x", Generation: 3, Outcome: workbench.OutcomeOK}
	var buf bytes.Buffer
	info := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a.Log(context.Background(), info, slog.Int("status", 200))
	if line := buf.String(); !strings.Contains(line, "msg="+workbench.AuditMessage) || !strings.Contains(line, "path=input/x") || !strings.Contains(line, "status=200") {
		t.Fatalf("audit line %q", line)
	}
	buf.Reset()
	warn := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { a.Log(ctx, warn, slog.Int("status", 200)) }); n != 0 {
		t.Fatalf("Audit.Log at level warn: %v allocations, want 0", n)
	}
	if buf.Len() != 0 {
		t.Fatalf("Audit.Log at level warn wrote %q", buf.String())
	}
}

// BenchmarkAuditLog is the audit line of a REST put on a node at --log-level warn (as
// `cairn bench` runs it), which drops the line:
//
//	go test ./workbench -run '^$' -bench BenchmarkAuditLog -benchmem
func BenchmarkAuditLog(b *testing.B) {
	a := workbench.Audit{Surface: "rest/put", Agent: "default", Workbench: "bench", Path: "input/bench/p0/000000001",
		Generation: 1, Outcome: workbench.OutcomeOK}
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a.Log(ctx, log, slog.String("method", "PUT"), slog.Int("status", 200))
	}
}
