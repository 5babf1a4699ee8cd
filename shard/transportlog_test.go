package shard

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// warnings is a slog.Handler that keeps the messages logged at warn and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	w.msgs = append(w.msgs, r.Message)
	w.mu.Unlock()
	return nil
}

func (w *warnings) containing(s string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, m := range w.msgs {
		if strings.Contains(m, s) {
			out = append(out, m)
		}
	}
	return out
}

// A replica that stops closes the inbound Raft connections its peers keep open: that is the
// end of those streams, not a failure to decode a command (it used to log one warning per
// connection per shard at every shutdown, hundreds on a node with many shards).
func TestStoppingANodeLogsNoTransportDecodeWarning(t *testing.T) {
	logged := &warnings{}
	shards := []string{"0", "1"}
	c := newCluster(t, 3, shards, func(cfg *Config) {
		loopbackTimeouts(cfg)
		cfg.Logger = slog.New(logged)
	})
	for _, sh := range shards {
		for i := 0; i < 20; i++ {
			c.mustPropose(sh, put("f", sh))
		}
		c.converged(sh)
	}
	for _, n := range c.nodes {
		c.stop(n)
	}
	// The warning this guards against is the mux closing connections raft still reads ("use
	// of closed network connection"). hashicorp/raft's own "transport shutdown" answer, for
	// a command that arrives while its transport closes, is raft's race, not ours.
	var ours []string
	for _, w := range logged.containing("failed to decode incoming command") {
		if !strings.Contains(w, "transport shutdown") {
			ours = append(ours, w)
		}
	}
	if len(ours) > 0 {
		t.Fatalf("%d decode warnings at shutdown, first: %s", len(ours), ours[0])
	}
}
