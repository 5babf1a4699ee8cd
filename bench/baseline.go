package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Baseline names, as --baseline takes them. A baseline is the same load with the same
// payloads sent to something simpler than Cairn, run by the same harness in the same
// process right after the Cairn phase, so that every figure in a report can be read as a
// ratio measured side by side on one machine (BENCHMARKS.md).
const (
	// BaselineFsync is, per operation, "write the same bytes a Cairn write would carry to
	// a new file and fsync it, then append a log record to one shared log file and fsync
	// that": the single-node write floor, what any durable store on the same disk must at
	// least pay per acknowledged write.
	BaselineFsync = "fsync"
	// BaselineMinIO is raw minio-go against the object store Cairn's s3 backend uses:
	// PutObject of the same body to a new key per operation (put scenarios), GetObject
	// of one of Files objects of the same size (get scenarios). The object-path limit.
	BaselineMinIO = "minio"
	// BaselineEtcd is clientv3 Put of the same body to a new key per operation on an etcd
	// cluster: a replicated-metadata peer (a three-member cluster in `make bench-report`).
	BaselineEtcd = "etcd"
	// BaselineRelay is BaselineMinIO sent through a relay (ServeRelay, `cairn bench relay`):
	// a process that passes the same requests to the same object store and does nothing
	// else. Where Cairn's node is a second process moving every byte, the relay is the
	// floor of that design on the same machine (about 0.75× raw on a GET here).
	BaselineRelay = "relay"
)

// Baselines lists the baseline names --baseline takes.
var Baselines = []string{BaselineFsync, BaselineMinIO, BaselineEtcd, BaselineRelay}

// BaselineScenarios lists, per baseline, the scenarios it has a like-for-like operation
// for. A read scenario has no fsync or etcd counterpart; a workbench operation
// (snapshot, restore, list, MCP) has none at all.
var BaselineScenarios = map[string][]string{
	BaselineFsync: {ScenarioSmallPut, ScenarioAppendLog, ScenarioObjectPut},
	BaselineMinIO: {ScenarioSmallPut, ScenarioSmallGet, ScenarioObjectPut, ScenarioObjectGet},
	BaselineEtcd:  {ScenarioSmallPut, ScenarioAppendLog},
	BaselineRelay: {ScenarioSmallPut, ScenarioSmallGet, ScenarioObjectPut, ScenarioObjectGet},
}

// baseline is one baseline bound to a run: its connections and any objects it prepared.
type baseline interface {
	// phase returns the Op of phase i and a function that removes what the phase wrote.
	phase(ctx context.Context, i int) (op Op, cleanup func() error, err error)
	// Close removes what the baseline prepared and releases its connections.
	Close() error
}

// openBaseline prepares the baseline name for cfg's scenario; nonce keeps its keys and
// bodies apart from other runs'.
func openBaseline(ctx context.Context, name string, cfg Config, nonce uint64) (baseline, error) {
	switch name {
	case BaselineFsync:
		return fsyncBaselineRun{parent: cfg.BaselineDir, sizeBytes: cfg.SizeBytes, nonce: nonce}, nil
	case BaselineMinIO:
		return openMinIOBaseline(ctx, cfg, nonce)
	case BaselineEtcd:
		return openEtcdBaseline(ctx, cfg, nonce)
	case BaselineRelay:
		relayed := cfg
		relayed.MinIO.Endpoint = cfg.RelayEndpoint
		return openMinIOBaseline(ctx, relayed, nonce)
	}
	return nil, fmt.Errorf("baseline %q: %w", name, ErrInvalidConfig)
}

// fsyncBaselineRun makes a fresh fsyncBaseline directory per phase and removes it after.
type fsyncBaselineRun struct {
	parent    string
	sizeBytes int64
	nonce     uint64
}

func (r fsyncBaselineRun) phase(_ context.Context, i int) (Op, func() error, error) {
	b, err := newFsyncBaseline(r.parent, r.sizeBytes, r.nonce+uint64(i))
	if err != nil {
		return nil, nil, err
	}
	return b, func() error {
		if err := b.Close(); err != nil {
			return fmt.Errorf("fsync baseline: clean up: %w", err)
		}
		return nil
	}, nil
}

func (fsyncBaselineRun) Close() error { return nil }

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
