package workbenchtest

import (
	"context"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
)

// CursorKey is the cursor-signing key of services built here unless a test sets its own.
var CursorKey = []byte("0123456789abcdef0123456789abcdef")

// Node is a test node: the service, the parts it runs on, and the leader workers of its
// shard (led as shard 0).
type Node struct {
	Service *workbench.Service
	Shard   *shard.Shard
	Blobs   blob.Store
	Workers *worker.Set
}

// New starts a node whose shard is ready for writes. cfg is used as given (InlineMaxBytes
// 0 puts every body in the blob store), except that a nil CursorKey becomes CursorKey.
func New(tb testing.TB, cfg workbench.Config) *Node {
	tb.Helper()
	return NewOn(tb, cfg, blobtest.Dir(tb))
}

// NewOn is New over the blob store bs (e.g. a blob/s3 store on a test MinIO) instead of
// a local blob directory. The caller owns bs and closes it.
func NewOn(tb testing.TB, cfg workbench.Config, bs blob.Store) *Node {
	tb.Helper()
	sh := Replica(tb, shard.Config{})
	if cfg.CursorKey == nil {
		cfg.CursorKey = CursorKey
	}
	svc, err := workbench.New(sh, bs, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return &Node{Service: svc, Shard: sh, Blobs: bs, Workers: Workers(tb, svc, bs, sh)}
}

// MustPropose proposes the command b on the node's shard, as a surface's write would, and
// fails the test unless it applied (e.g. meta.MoveFence, which fences the root for a move).
func (n *Node) MustPropose(tb testing.TB, b meta.Body) meta.Result {
	tb.Helper()
	res, err := n.Shard.Propose(context.Background(), meta.Header{}, b)
	if err != nil || res.Err != nil {
		tb.Fatalf("%T: %v %v", b, err, res.Err)
	}
	return res
}

// Replica opens a single-voter replica of cfg in a directory of its own (cfg.Dir is set)
// and returns it once it is ready for writes (within 10 s); it is closed when the test ends.
func Replica(tb testing.TB, cfg shard.Config) *shard.Shard {
	tb.Helper()
	cfg.Dir = tb.TempDir()
	sh, err := shard.Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sh.Close() })
	ctx, cancel := context.WithTimeout(tb.Context(), 10*time.Second)
	defer cancel()
	if err := sh.WaitReady(ctx); err != nil {
		tb.Fatal(err)
	}
	return sh
}

// Workers returns a worker Set over blobs with svc's grace and inline bound, svc as its
// Restorer, leading cores[i] as shard i; closed when the test ends (before the cores, when
// they were opened first). Its workers run only on demand (CollectGarbage, Compact): their
// intervals are a day, but for the restore resumer's first look when a shard is led.
func Workers(tb testing.TB, svc *workbench.Service, blobs blob.Store, cores ...workbench.Core) *worker.Set {
	tb.Helper()
	cfg := svc.Config()
	set, err := worker.New(worker.Config{Blobs: blobs, GCGrace: cfg.GCGrace, InlineMaxBytes: cfg.InlineMaxBytes, Restorer: svc.Lifecycle,
		GCInterval: 24 * time.Hour, CompactionInterval: 24 * time.Hour, RestoreInterval: 24 * time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { set.Close() })
	for i, c := range cores {
		set.Lead(i, c)
	}
	return set
}
