package shard

import (
	"testing"
)

// BenchmarkReadView takes linearizable views of the embedded single voter, as every read
// of a file or listing does (`cairn bench --scenario stat`): one reader at a time
// ("serial") and 16 at once ("parallel"), each view after a leadership round of its own
// or one shared with the reads beside it (confirm.go):
//
//	go test ./shard -run '^$' -bench BenchmarkReadView -benchmem
func BenchmarkReadView(b *testing.B) {
	s := openReady(b, b.TempDir(), Config{})
	defer s.Close()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.ReadView(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8) // 16 readers on 2 cores, as the stat scenario's clients
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.ReadView(b.Context()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
