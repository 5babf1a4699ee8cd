package shard

import (
	"bytes"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkStoreLogs appends batches of 16 entries of 1,200 bytes, the commands of 1 KiB
// small puts, through the replica's log store (sealed, one transaction and one fsync a
// batch), and reads one back per batch as a follower's replication does. ns/op, B/op
// and allocs/op are per entry:
//
//	go test ./shard -run '^$' -bench BenchmarkStoreLogs -benchtime 20000x -benchmem
func BenchmarkStoreLogs(b *testing.B) {
	l, err := openLog(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const batch = 16
	data := bytes.Repeat([]byte{0x5a}, 1200)
	logs := make([]*raft.Log, batch)
	var next uint64 = 1
	b.ReportAllocs()
	for i := 0; i < b.N; i += batch {
		for j := range logs {
			logs[j] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
			next++
		}
		if err := l.StoreLogs(logs); err != nil {
			b.Fatal(err)
		}
		var got raft.Log
		if err := l.GetLog(next-1, &got); err != nil {
			b.Fatal(err)
		}
	}
}
