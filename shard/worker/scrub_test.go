package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/blob/dir"
	"github.com/cairnstore/cairn/blob/s3"
	"github.com/cairnstore/cairn/blob/s3/s3test"
	"github.com/cairnstore/cairn/internal/metricstest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// scrubBackend is a real blob store and the two kinds of damage a scrub must find.
type scrubBackend struct {
	name   string
	open   func(t *testing.T) blob.Store
	flip   func(t *testing.T, s blob.Store, k blob.Key) // one payload byte inverted
	remove func(t *testing.T, s blob.Store, k blob.Key) // the object gone behind Cairn's back
}

func dirBackend() scrubBackend {
	return scrubBackend{
		name: "dir",
		open: func(t *testing.T) blob.Store {
			return blobtest.Dir(t)
		},
		flip: func(t *testing.T, s blob.Store, k blob.Key) {
			blobtest.FlipByte(t, s.(*dir.Store).BlobPath(k), 20) // past the 16-byte header
		},
		remove: func(t *testing.T, s blob.Store, k blob.Key) {
			if err := s.Delete(t.Context(), k); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func minioBackend(t *testing.T) scrubBackend {
	srv := s3test.Start(t)
	raw := srv.Client(t)
	bucket := s3test.Bucket()
	return scrubBackend{
		name: "minio",
		open: func(t *testing.T) blob.Store { return s3test.Open(t, srv.Config(bucket)) },
		flip: func(t *testing.T, s blob.Store, k blob.Key) {
			s3test.FlipPayloadByte(t, raw, bucket, s.(*s3.Store).ObjectName(k))
		},
		remove: func(t *testing.T, s blob.Store, k blob.Key) {
			if err := raw.RemoveObject(t.Context(), bucket, s.(*s3.Store).ObjectName(k), minio.RemoveObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func TestScrubFindsMissingAndCorruptBlobs(t *testing.T) {
	backends := []scrubBackend{dirBackend()}
	if testing.Short() {
		t.Log("-short: MinIO backend skipped")
	} else {
		backends = append(backends, minioBackend(t))
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			store := be.open(t)
			sh := workbenchtest.Replica(t, shard.Config{})
			reg := prometheus.NewRegistry()
			set := newSet(t, store, reg, worker.Config{})
			set.Lead(0, sh)
			bodies := map[string]string{}
			for i := range 6 {
				body := fmt.Sprintf("body %d of agent a, long enough to be a blob: %s", i, bytes.Repeat([]byte{'x'}, 600))
				put(t, sh, store, "a", fmt.Sprintf("f%d", i), body)
				bodies[fmt.Sprintf("f%d", i)] = body
			}
			put(t, sh, store, "b", "other", "agent b's only body")
			keyOf := func(agent, body string) blob.Key {
				return blob.Key{Root: rootUID(t, sh, agent), Digest: blob.DigestOf([]byte(body))}
			}
			be.flip(t, store, keyOf("a", bodies["f1"]))
			be.remove(t, store, keyOf("a", bodies["f4"]))
			be.remove(t, store, keyOf("b", "agent b's only body"))

			// Two blobs per call: the positions resume strictly after the last checked.
			var (
				total  worker.ScrubReport
				after  worker.ScrubPosition
				damage = map[meta.Digest]string{}
			)
			for calls := 0; ; calls++ {
				if calls > 10 {
					t.Fatal("the scrub does not end")
				}
				rep, err := set.Scrub(t.Context(), worker.ScrubOptions{Agent: "a", After: after, MaxBlobs: 2})
				if err != nil {
					t.Fatal(err)
				}
				total.Blobs += rep.Blobs
				total.Missing += rep.Missing
				total.Corrupt += rep.Corrupt
				for _, d := range rep.Damage {
					damage[d.Digest] = d.Kind
					if d.Agent != "a" || d.References != 1 {
						t.Fatalf("damage report %+v", d)
					}
				}
				if rep.Done {
					break
				}
				if !(rep.Next.String() > after.String()) {
					t.Fatalf("position %q does not move past %q", rep.Next, after)
				}
				p, err := worker.ParseScrubPosition(rep.Next.String())
				if err != nil || p != rep.Next {
					t.Fatalf("position %q does not read back: %+v %v", rep.Next, p, err)
				}
				after = p
			}
			corrupt, missing := meta.Digest(keyOf("a", bodies["f1"]).Digest), meta.Digest(keyOf("a", bodies["f4"]).Digest)
			if total.Blobs != 6 || total.Missing != 1 || total.Corrupt != 1 || len(damage) != 2 ||
				damage[corrupt] != "corrupt" || damage[missing] != "missing" {
				t.Fatalf("scrub of agent a: %+v, damage %v", total, damage)
			}
			// A whole scrub also finds agent b's missing blob.
			rep, err := set.Scrub(t.Context(), worker.ScrubOptions{})
			if err != nil || !rep.Done || rep.Blobs != 7 || rep.Missing != 2 || rep.Corrupt != 1 {
				t.Fatalf("whole scrub: %+v %v", rep, err)
			}
			if got := metricstest.Value(t, reg, "cairn_scrub_blobs_total", "result=missing"); got != 3 {
				t.Errorf("cairn_scrub_blobs_total{result=missing} = %v, want 3", got)
			}
			if got := metricstest.Value(t, reg, "cairn_scrub_runs_total", "result=partial"); got != 2 {
				t.Errorf("cairn_scrub_runs_total{result=partial} = %v, want 2 (6 blobs, 2 a call)", got)
			}
		})
	}
}

func TestScrubIsRateLimited(t *testing.T) {
	n := newNode(t, worker.Config{}, true)
	put(t, n.shard, n.store, "a", "f", string(bytes.Repeat([]byte("0123456789"), 200)))
	// At 10 bytes a second, 2000 bytes take minutes: a short deadline must cut the read.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := n.set.Scrub(ctx, worker.ScrubOptions{BytesPerSecond: 10})
	if err == nil {
		t.Fatal("a rate-limited scrub of 2000 bytes at 10 B/s finished inside 300 ms")
	}
	if rep, err := n.set.Scrub(t.Context(), worker.ScrubOptions{}); err != nil || rep.Blobs != 1 || rep.Bytes != 2000 {
		t.Fatalf("unlimited scrub: %+v %v", rep, err)
	}
}

func TestScrubRefusesBadOptionsAndNeedsALeader(t *testing.T) {
	n := newNode(t, worker.Config{}, false)
	if _, err := n.set.Scrub(t.Context(), worker.ScrubOptions{}); err == nil {
		t.Fatal("a scrub without a led shard succeeded")
	}
	var me *meta.Error
	if _, err := n.set.Scrub(t.Context(), worker.ScrubOptions{Agent: "no/slash"}); !errors.As(err, &me) || me.Field != "agent" {
		t.Fatalf("bad agent: %v", err)
	}
	for _, s := range []string{"x", "0/a", "-1/a/00", "0/a/zz", "0/a/" + string(bytes.Repeat([]byte("0"), 63))} {
		if _, err := worker.ParseScrubPosition(s); !errors.As(err, &me) || me.Field != "after" {
			t.Errorf("ParseScrubPosition(%q) = %v, want InvalidArguments on after", s, err)
		}
	}
}
