package host

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/control"
)

// BenchmarkRootMoveWritePause moves a root of files files between the shards of an
// in-process three-node cluster while one writer writes to it in a loop, and reports the
// longest gap between two of the writer's acknowledged writes (pause-ms: what a writer
// sees of the move's fence) and the move's duration (move-ms).
//
//	go test -run XXX -bench RootMoveWritePause -benchtime 1x ./shard/host/
func BenchmarkRootMoveWritePause(b *testing.B) {
	for _, files := range []int{1000, 10000, 50000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			c := newMoveCluster(b)
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := w; i < files; i += 8 {
						c.mustWrite(b, i%3, meta.Header{}, putBody("a", fmt.Sprintf("p/f%05d", i), "populated"))
					}
				})
			}
			wg.Wait()
			from, err := c.hosts[0].placement.Resolve(b.Context(), "a")
			if err != nil {
				b.Fatal(err)
			}
			var pause, took time.Duration
			for n := range b.N {
				to := 1 - from
				if n%2 == 1 {
					to = from
				}
				stop := make(chan struct{})
				gap := make(chan time.Duration)
				go func() {
					var longest time.Duration
					last := time.Now()
					for i := 0; ; i++ {
						select {
						case <-stop:
							gap <- longest
							return
						default:
						}
						c.mustWrite(b, 1, meta.Header{}, putBody("a", fmt.Sprintf("w/%d", i%100), fmt.Sprint(i)))
						now := time.Now()
						longest = max(longest, now.Sub(last))
						last = now
					}
				}()
				start := time.Now()
				m, err := c.plane.StartMove(b.Context(), "a", to, start)
				if err != nil {
					b.Fatal(err)
				}
				if got := c.waitMove(b, m.ID); got.Step != control.MoveDone {
					b.Fatalf("the move ended %s: %s", got.Step, got.Reason)
				}
				took = max(took, time.Since(start))
				close(stop)
				pause = max(pause, <-gap)
			}
			b.ReportMetric(float64(pause.Milliseconds()), "pause-ms")
			b.ReportMetric(float64(took.Milliseconds()), "move-ms")
		})
	}
}
