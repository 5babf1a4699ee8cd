package meta

import (
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"testing"
)

// BenchmarkApplyPutInline overwrites one path, first filled to its history's cap (the
// default 1,000 versions), with a 1 KiB inline body, and BenchmarkApplyPutBlob with a
// body in one blob-store segment (a new digest each time): what a write costs the FSM on
// a file rewritten often (a status file, a log rotated in place).
//
//	go test ./meta -run '^$' -bench 'BenchmarkApplyPut(Inline|Blob)$' -benchmem
func BenchmarkApplyPutInline(b *testing.B) {
	benchOverwrite(b, func(int) Segment { return Segment{Size: 1024, Inline: make([]byte, 1024)} })
}

func BenchmarkApplyPutBlob(b *testing.B) {
	benchOverwrite(b, func(i int) Segment {
		var d Digest
		binary.BigEndian.PutUint64(d[:], uint64(i))
		return Segment{Size: 1 << 20, Digest: d}
	})
}

func benchOverwrite(b *testing.B, seg func(i int) Segment) {
	f := New(Options{})
	put := func(i int) {
		data, _ := EncodeCommand(Header{TimeMs: 1}, Put{Agent: "a", Workspace: "w", Path: "input/f", CreateWorkspace: true,
			Size: seg(i).Size, Segments: []Segment{seg(i)}})
		if r := f.Apply(uint64(i+1), data); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	i := 0
	for ; i < DefaultHistoryMaxVersions; i++ {
		put(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		put(i)
		i++
	}
}

func BenchmarkViewFileLookup(b *testing.B) {
	f := New(Options{})
	const n = 100_000
	for i := 0; i < n; i++ {
		f.ApplyBody(uint64(i+1), Header{TimeMs: 1}, Put{Agent: "a", Workspace: "w", Path: fmt.Sprintf("input/d%d/f%d", i%100, i), CreateWorkspace: true})
	}
	v := f.View()
	ws, _ := v.Workspace("a", "w")
	paths := make([]string, 1024)
	for i := range paths {
		paths[i] = fmt.Sprintf("input/d%d/f%d", (i*7919)%n%100, (i*7919)%n)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := v.File(ws, paths[i%len(paths)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPathKey(b *testing.B) {
	for b.Loop() {
		_ = pathKey(42, "input/some/deeper/path/file.txt")
	}
}

func BenchmarkValidatePath(b *testing.B) {
	for b.Loop() {
		_ = ValidatePath("path", "input/some/deeper/path/file.txt")
	}
}

// BenchmarkValidateNewPath is the check of a path a write stores a file at: ASCII, as
// `cairn bench` writes them, and with a non-ASCII name.
func BenchmarkValidateNewPath(b *testing.B) {
	for name, p := range map[string]string{"ascii": "input/bench/p0/000000001", "non-ascii": "input/bench/p0/café.txt"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := ValidateNewPath("path", p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSnapshotMint measures minting (and retiring) a snapshot of a workbench of 10
// and of 100,000 files: both are O(1) in the workbench's size (a hold and a record), so
// the two should cost the same (BENCHMARKS.md).
func BenchmarkSnapshotMint(b *testing.B) {
	for _, files := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			f := New(Options{})
			index := uint64(0)
			for i := 0; i < files; i++ {
				index++
				f.ApplyBody(index, Header{TimeMs: 1}, Put{Agent: "a", Workspace: "w", Path: fmt.Sprintf("input/d%d/f%d", i%100, i),
					CreateWorkspace: true, Size: 1, Segments: []Segment{{Size: 1, Inline: []byte{'x'}}}})
			}
			mint, _ := EncodeCommand(Header{TimeMs: 2}, SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 7})
			b.ReportAllocs()
			for b.Loop() {
				index++
				r := f.Apply(index, mint)
				if r.Err != nil {
					b.Fatal(r.Err)
				}
				index++
				retire, _ := EncodeCommand(Header{TimeMs: 2}, SnapshotRetire{Agent: "a", Workspace: "w", ID: r.Snapshot.ID})
				if r := f.Apply(index, retire); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

// BenchmarkSnapshotWrite measures writing a Raft snapshot of a shard whose root holds
// 20,000 files of 1 KiB inline, as small-put leaves it: the cost a snapshot takes from
// the writes that run beside it. MB/s is of the encoded snapshot.
func BenchmarkSnapshotWrite(b *testing.B) {
	const files = 20_000
	f := New(Options{})
	body := make([]byte, 1024)
	for i := range files {
		f.ApplyBody(uint64(i+1), Header{TimeMs: 1}, Put{Agent: "a", Workspace: "w", Path: fmt.Sprintf("input/d%d/f%d", i%100, i),
			CreateWorkspace: true, Size: 1024, Segments: []Segment{{Size: 1024, Inline: body}}})
	}
	s := f.Snapshot()
	n, err := s.WriteTo(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPutCommand is the put of a 1 KiB inline file as the REST surface proposes it (a
// principal and a surface in the header), and its encoding.
func benchPutCommand(b *testing.B) (Header, Put, []byte) {
	h := Header{TimeMs: 1796553424000, Principal: "local", Surface: "rest/put"}
	put := Put{Agent: "bench", Workspace: "smoke", Path: "input/bench/p0/000000042", CreateWorkspace: true, Size: 1024,
		Digest: digestOf(make([]byte, 1024)), ContentType: "application/octet-stream",
		Segments: []Segment{{Digest: digestOf(make([]byte, 1024)), Size: 1024, Inline: make([]byte, 1024)}}}
	data, err := EncodeCommand(h, put)
	if err != nil {
		b.Fatal(err)
	}
	return h, put, data
}

// BenchmarkEncodeCommandPut encodes the put of a 1 KiB inline file as the REST surface
// proposes it (a principal and a surface in the header): the encoding every write pays
// before Raft.
func BenchmarkEncodeCommandPut(b *testing.B) {
	h, put, data := benchPutCommand(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeCommand(h, put); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeCommandPut decodes the put of BenchmarkEncodeCommandPut, as every
// replica decodes it before applying it: hand is DecodeCommand (the hand-written decoder,
// command_decode.go), reflect the decoding through decMode alone that it replaced.
func BenchmarkDecodeCommandPut(b *testing.B) {
	_, _, data := benchPutCommand(b)
	for _, c := range []struct {
		name   string
		decode func([]byte) (Header, Body, error)
	}{{"hand", DecodeCommand}, {"reflect", decodeCommandReflect}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyPutNewFile applies puts of new 1 KiB inline files, each its own path, as
// `cairn bench --scenario small-put` makes them: the write path with the secondary index's
// ten keys per new file. retained-B/file is the heap the shard keeps per file (its inline
// body, records, index keys, feed events) after a GC:
//
//	go test ./meta -run '^$' -bench BenchmarkApplyPutNewFile -benchtime 100000x -benchmem
func BenchmarkApplyPutNewFile(b *testing.B) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	f := New(Options{})
	body := make([]byte, 1024)
	h := Header{TimeMs: 1796553424000, Principal: "local", Surface: "rest/put"}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		data, _ := EncodeCommand(h, Put{Agent: "bench", Workspace: "smoke", Path: fmt.Sprintf("input/bench/p0/%09d", n),
			CreateWorkspace: true, Size: 1024, ContentType: "application/octet-stream", Segments: []Segment{{Size: 1024, Inline: body}}})
		if r := f.Apply(uint64(n+1), data); r.Err != nil {
			b.Fatal(r.Err)
		}
		n++
	}
	b.StopTimer()
	b.ReportMetric(float64(heap()-before)/float64(n), "retained-B/file")
	runtime.KeepAlive(f)
}
