package ops

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ZapLogger returns a zap logger whose lines go to log, in log's format and at its level,
// for the libraries that log through zap (the etcd client: clientv3.Config.Logger). Left
// unset, the etcd client builds its own zap logger and writes JSON to stderr whatever
// --log-format says. Each line carries log=name; zap's fields become attributes.
func ZapLogger(log *slog.Logger, name string) *zap.Logger {
	return zap.New(slogCore{h: log.Handler().WithAttrs([]slog.Attr{slog.String("log", name)})})
}

// slogCore is a zapcore.Core that hands every entry to a slog.Handler.
type slogCore struct {
	h slog.Handler
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError // error, and the panic and fatal levels zap acts on itself
}

func (c slogCore) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), slogLevel(l))
}

func (c slogCore) With(fields []zapcore.Field) zapcore.Core {
	return slogCore{h: c.h.WithAttrs(attrs(fields))}
}

func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(attrs(fields)...)
	return c.h.Handle(context.Background(), r)
}

func (slogCore) Sync() error { return nil }

// attrs turns zap fields into slog attributes, through zap's own map encoder so that every
// field kind (durations, errors, objects, arrays) keeps its value.
func attrs(fields []zapcore.Field) []slog.Attr {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	out := make([]slog.Attr, 0, len(enc.Fields))
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) { // a stable order of attributes
		out = append(out, slog.Any(k, enc.Fields[k]))
	}
	return out
}
