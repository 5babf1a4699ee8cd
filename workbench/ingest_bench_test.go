package workbench_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/s3/s3test"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// benchStore is a blob store the object-path benchmarks run on, and how to start a node
// over it.
type benchStore struct {
	name string
	node func(b *testing.B) *workbenchtest.Node
}

// benchStores are the blob stores the object-path benchmarks run on: a local directory
// (blob/dir) always, and a real MinIO (blob/s3) when CAIRN_MINIO_BIN names its binary.
func benchStores() []benchStore {
	stores := []benchStore{{"store=dir", func(b *testing.B) *workbenchtest.Node { return workbenchtest.New(b, workbench.Config{}) }}}
	if os.Getenv("CAIRN_MINIO_BIN") != "" {
		stores = append(stores, benchStore{"store=minio", func(b *testing.B) *workbenchtest.Node {
			srv := s3test.Start(b)
			return workbenchtest.NewOn(b, workbench.Config{}, s3test.Open(b, srv.Config(s3test.Bucket())))
		}})
	}
	return stores
}

// benchBodies runs f, as a sub-benchmark per blob store (benchStores) on one node each,
// for each body size (1 and 64 MiB) with an incompressible body of that size.
func benchBodies(b *testing.B, f func(b *testing.B, n *workbenchtest.Node, size int, body []byte)) {
	for _, st := range benchStores() {
		b.Run(st.name, func(b *testing.B) {
			n := st.node(b)
			for _, size := range []int{1 << 20, 64 << 20} {
				f(b, n, size, incompressible(size))
			}
		})
	}
}

// incompressible returns size bytes of a fixed pseudo-random stream.
func incompressible(size int) []byte {
	body := make([]byte, size)
	rand.NewChaCha8([32]byte{9}).Read(body)
	return body
}

// stamp makes body distinct from every earlier one without rewriting it: it writes the
// iteration number every 64 KiB, so that each segment of the body (≥ 1 MiB) is new and no
// Put of an ingest dedupes onto an earlier iteration's blob.
func stamp(body []byte, iter uint64) {
	for off := 0; off+8 <= len(body); off += 64 << 10 {
		binary.LittleEndian.PutUint64(body[off:], iter)
	}
}

// BenchmarkIngest measures a PUT of a new, incompressible body through the write path
// (Writes.Write: split, hash, encode, upload, publish) into each blob store, its size
// known as REST knows it from Content-Length. Compare
// ns/op and allocs across commits in one run; MB/s is of the body.
func BenchmarkIngest(b *testing.B) {
	benchBodies(b, func(b *testing.B, n *workbenchtest.Node, size int, body []byte) {
		b.Run(fmt.Sprintf("body=%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			iter := uint64(0)
			for b.Loop() {
				iter++
				stamp(body, iter)
				if _, err := n.Service.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w",
					Path: "outputs/in.bin", Body: bytes.NewReader(body), SizeHint: int64(size), CreateWorkbench: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkIngestChunkFormat is BenchmarkIngest of a 64 MiB body (cut into chunks) in
// each chunk format side by side, into a local blob directory.
func BenchmarkIngestChunkFormat(b *testing.B) {
	n := workbenchtest.New(b, workbench.Config{})
	const size = 64 << 20
	body := incompressible(size)
	iter := uint64(0)
	for _, format := range []blob.ChunkFormat{blob.ChunkRabin, blob.ChunkGear} {
		b.Run(fmt.Sprintf("format=%s/body=64MiB", format), func(b *testing.B) {
			n.Service.SetChunkFormat(format)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				iter++
				stamp(body, iter)
				if _, err := n.Service.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w",
					Path: "outputs/in.bin", Body: bytes.NewReader(body), SizeHint: size, CreateWorkbench: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGet measures a whole-body GET (File.Reader copied to a writer that, like an
// HTTP response, only has Write) from each blob store, every segment verified.
func BenchmarkGet(b *testing.B) {
	benchBodies(b, func(b *testing.B, n *workbenchtest.Node, size int, body []byte) {
		path := fmt.Sprintf("outputs/get-%d.bin", size)
		if _, err := n.Service.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w",
			Path: path, Body: bytes.NewReader(body), CreateWorkbench: true}); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("body=%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				f, err := n.Service.Reads.Open(context.Background(), "a", "w", path)
				if err != nil {
					b.Fatal(err)
				}
				r, err := f.Reader(context.Background(), 0, -1)
				if err != nil {
					b.Fatal(err)
				}
				if got, err := io.Copy(struct{ io.Writer }{io.Discard}, r); err != nil || got != int64(size) {
					b.Fatalf("read %d bytes, %v", got, err)
				}
				r.Close()
			}
		})
	})
}

// BenchmarkSmallPut measures PUTs of new 1 KiB files (stored inline) through the write
// path from 64 goroutines, as `cairn bench --scenario small-put --concurrency 64` makes
// them, without HTTP: read the body, hash it, propose and apply the put on a
// single-voter Raft shard (the proposals waiting together share a log append and its
// fsync). Compare ns/op, B/op and allocs/op across commits in one run:
//
//	go test ./workbench -run '^$' -bench BenchmarkSmallPut -benchtime 40000x -benchmem
func BenchmarkSmallPut(b *testing.B) {
	n := workbenchtest.New(b, workbench.Config{InlineMaxBytes: 4096}) // the node's default
	body := incompressible(1 << 10)
	var seq atomic.Uint64
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.SetParallelism(64 / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			path := fmt.Sprintf("input/bench/%09d", seq.Add(1))
			if _, err := n.Service.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w",
				Path: path, Body: io.NopCloser(bytes.NewReader(body)), SizeHint: int64(len(body)), CreateWorkbench: true}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
