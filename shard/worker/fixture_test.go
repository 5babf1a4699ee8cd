package worker_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// gcGrace is the grace period of these tests: short, so they wait about a second.
const gcGrace = time.Second

// node is a real single-voter replica, a blob directory and a worker Set over them. The
// tests write files with the FSM's own commands, uploading their blobs first as the write
// path does.
type node struct {
	shard *shard.Shard
	store *blobtest.Hooked
	set   *worker.Set
	reg   *prometheus.Registry
}

// pruneAtOnce is the history retention of these tests: they predate it and rely on an
// overwritten body losing its references at once (meta.Retention).
var pruneAtOnce = meta.Retention{Versions: 1}

// newNode starts a node; cfg.Blobs and cfg.Registerer are the node's, and the intervals
// the test leaves zero are an hour (nothing runs on a timer unless the test asks). The
// Set does not lead the shard yet unless lead.
func newNode(t *testing.T, cfg worker.Config, lead bool) *node {
	t.Helper()
	sh := workbenchtest.Replica(t, shard.Config{FSM: meta.Options{History: pruneAtOnce}})
	n := &node{shard: sh, store: &blobtest.Hooked{Store: blobtest.Dir(t)}, reg: prometheus.NewRegistry()}
	n.set = newSet(t, n.store, n.reg, cfg)
	if lead {
		n.set.Lead(0, sh)
	}
	return n
}

// newSet returns a Set over store, closed when the test ends (before the replicas it
// leads: cleanups run last first).
func newSet(t *testing.T, store blob.Store, reg prometheus.Registerer, cfg worker.Config) *worker.Set {
	t.Helper()
	cfg.Blobs, cfg.Registerer = store, reg
	for _, d := range []*time.Duration{&cfg.GCInterval, &cfg.CompactionInterval, &cfg.RestoreInterval} {
		if *d == 0 {
			*d = time.Hour
		}
	}
	if cfg.GCGrace == 0 {
		cfg.GCGrace = gcGrace
	}
	set, err := worker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

// rootUID returns the uid of agent's root on c, creating the root.
func rootUID(t *testing.T, c worker.Core, agent string) string {
	t.Helper()
	view, err := c.ReadView(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := view.Root(agent); ok {
		return r.UID
	}
	res := propose(t, c, meta.Header{}, meta.CreateRoot{Agent: agent})
	return res.RootUID
}

func propose(t *testing.T, c worker.Core, h meta.Header, b meta.Body) meta.Result {
	t.Helper()
	res, err := c.Propose(t.Context(), h, b)
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("%T: %v", b, err)
	}
	return res
}

// upload stores body as agent's blob and returns its segment and the upload fence read
// before the upload.
func upload(t *testing.T, c worker.Core, store blob.Store, agent string, body []byte) (meta.Segment, uint64) {
	t.Helper()
	uid := rootUID(t, c, agent)
	view, err := c.ReadView(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256(body)
	if _, err := store.Put(t.Context(), blob.Key{Root: uid, Digest: d}, blob.Hash(body)); err != nil {
		t.Fatal(err)
	}
	return meta.Segment{Digest: d, Size: int64(len(body))}, view.AppliedVersion()
}

// put writes body (one blob) at path of agent's workbench "w".
func put(t *testing.T, c worker.Core, store blob.Store, agent, path, body string) {
	t.Helper()
	seg, fence := upload(t, c, store, agent, []byte(body))
	propose(t, c, meta.Header{UploadFence: fence}, meta.Put{Agent: agent, Workspace: "w", Path: path, CreateWorkspace: true,
		Size: seg.Size, Digest: seg.Digest, Segments: []meta.Segment{seg}})
}

// appendTo appends line (one blob segment) to path of agent's workbench "w"; whole is the
// body before the append, and it returns the body after.
func appendTo(t *testing.T, c worker.Core, store blob.Store, agent, path string, whole []byte, line string) []byte {
	t.Helper()
	var gen uint64
	view, err := c.ReadView(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ws, err := view.Workspace(agent, "w"); err == nil {
		if e, err := view.File(ws, path); err == nil {
			gen = e.Generation
		}
	}
	seg, fence := upload(t, c, store, agent, []byte(line))
	after := append(append([]byte(nil), whole...), line...)
	propose(t, c, meta.Header{UploadFence: fence}, meta.Append{Agent: agent, Workspace: "w", Path: path, CreateWorkspace: true,
		ExpectGeneration: gen, Segments: []meta.Segment{seg}, AppendedBytes: seg.Size, NewSize: int64(len(after)), NewDigest: sha256.Sum256(after)})
	return after
}

// readBody reads path of agent's workbench "w" from its segments, verified.
func readBody(t *testing.T, c worker.Core, store blob.Store, agent, path string) ([]byte, *meta.Entry) {
	t.Helper()
	view, err := c.ReadView(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := view.Workspace(agent, "w")
	if err != nil {
		t.Fatal(err)
	}
	e, err := view.File(ws, path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	root, _ := view.Root(agent)
	var out []byte
	for _, sg := range e.Segments {
		if sg.IsInline() {
			out = append(out, sg.Inline...)
			continue
		}
		rc, err := store.Get(t.Context(), blob.Key{Root: root.UID, Digest: blob.Digest(sg.Digest)}, 0, sg.Size)
		if err != nil {
			t.Fatalf("%s: segment: %v", path, err)
		}
		buf := make([]byte, sg.Size)
		err = blob.ReadVerified(rc, buf)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: segment: %v", path, err)
		}
		out = append(out, buf...)
	}
	if sha256.Sum256(out) != [32]byte(e.Digest) {
		t.Fatalf("%s does not match its digest", path)
	}
	return out, e
}

func (n *node) uid(t *testing.T) string { return rootUID(t, n.shard, "a") }

func (n *node) key(t *testing.T, body string) blob.Key {
	return blob.Key{Root: n.uid(t), Digest: blob.DigestOf([]byte(body))}
}

func (n *node) stored(t *testing.T, body string) bool {
	t.Helper()
	return blobtest.Stored(t, n.store, n.key(t, body))
}

func (n *node) record(t *testing.T, body string) (meta.BlobRef, bool) {
	return n.shard.FSM().View().Shard().Blob(n.uid(t), meta.Digest(blob.DigestOf([]byte(body))))
}

// sweepUntil runs sweeps until done accepts a report, for at most 10 s.
func (n *node) sweepUntil(t *testing.T, opts worker.GCOptions, done func(worker.GCReport) bool) worker.GCReport {
	t.Helper()
	return workbenchtest.SweepUntil(t, n.set, opts, done)
}
