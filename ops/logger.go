package ops

import (
	"io"
	"log/slog"
)

// logLevels are the values of --log-level.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// NewLogger returns a logger writing to w in c.LogFormat (json, otherwise text) at
// c.LogLevel and above (an unknown level logs at info; Validate rejects it earlier).
// Over stdio MCP, w must be stderr: stdout carries only protocol messages.
func NewLogger(c Config, w io.Writer) *slog.Logger {
	level, ok := logLevels[c.LogLevel]
	if !ok {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
