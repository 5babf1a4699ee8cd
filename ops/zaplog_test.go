package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestZapLoggerWritesThroughTheConfiguredLogger(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			c := DefaultConfig()
			c.LogFormat, c.LogLevel = format, "warn"
			z := ZapLogger(NewLogger(c, &buf), "etcd-client").Named("grpc").With(zap.String("target", "etcd-endpoints://x"))
			z.Info("below the level")
			z.Warn("retrying of unary invoker failed", zap.Duration("backoff", 25*time.Millisecond), zap.Error(errors.New("unavailable")))
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != 1 {
				t.Fatalf("%d lines, want the warning only:\n%s", len(lines), buf.String())
			}
			if format == "text" {
				for _, want := range []string{"level=WARN", `msg="retrying of unary invoker failed"`, "log=etcd-client", "logger=grpc",
					"target=etcd-endpoints://x", "backoff=25ms", "error=unavailable"} {
					if !strings.Contains(lines[0], want) {
						t.Errorf("%s: no %s", lines[0], want)
					}
				}
				return
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
				t.Fatalf("not JSON: %s", lines[0])
			}
			want := map[string]any{"level": "WARN", "msg": "retrying of unary invoker failed", "log": "etcd-client", "logger": "grpc",
				"target": "etcd-endpoints://x", "backoff": float64(25 * time.Millisecond), "error": "unavailable"} // slog's JSON durations are nanoseconds
			for k, v := range want {
				if m[k] != v {
					t.Errorf("%s = %v, want %v (%s)", k, m[k], v, lines[0])
				}
			}
		})
	}
}
