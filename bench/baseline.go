package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// BaselineFsync names the file+fsync baseline (DESIGN.md §12): per operation, write the
// same bytes a Cairn write would carry to a new file and fsync it, then append a log
// record to one shared log file and fsync that. It is the single-node write floor: what
// any durable store on the same disk must at least pay per acknowledged write.
const BaselineFsync = "fsync"

// Baselines lists the baseline names --baseline takes.
var Baselines = []string{BaselineFsync}

// fsyncBaseline is the Op of BaselineFsync, in its own temporary directory.
type fsyncBaseline struct {
	dir       string
	log       *os.File
	sizeBytes int64
	nonce     uint64
}

// newFsyncBaseline creates a fresh directory under parent ("" = os.TempDir()) holding
// the data files and the log. Close removes it.
func newFsyncBaseline(parent string, sizeBytes int64, nonce uint64) (*fsyncBaseline, error) {
	dir, err := os.MkdirTemp(parent, "cairn-bench-fsync-")
	if err != nil {
		return nil, fmt.Errorf("fsync baseline: %w", err)
	}
	log, err := os.OpenFile(filepath.Join(dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("fsync baseline: %w", err)
	}
	return &fsyncBaseline{dir: dir, log: log, sizeBytes: sizeBytes, nonce: nonce}, nil
}

// Do writes file seq with its body and fsyncs it, then appends and fsyncs a log record.
// Concurrent calls share the log, whose O_APPEND writes do not interleave; each still
// waits for its own fsync, as a store acknowledging one write at a time would.
func (b *fsyncBaseline) Do(ctx context.Context, seq uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := filepath.Join(b.dir, fmt.Sprintf("%09d", seq))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, payload(b.nonce, seq, b.sizeBytes))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if _, err := b.log.Write(fmt.Appendf(nil, "put %09d %d\n", seq, b.sizeBytes)); err != nil {
		return err
	}
	return b.log.Sync()
}

// Close closes the log and removes the directory with everything written.
func (b *fsyncBaseline) Close() error {
	err := b.log.Close()
	if rerr := os.RemoveAll(b.dir); err == nil {
		err = rerr
	}
	return err
}
