package workbenchtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/shard/worker"
)

// SweepUntil runs garbage sweeps of set with opts (dry or not) until done accepts a
// report, for at most 10 s, and returns that report. A sweep that returns an error fails
// the test at once; a deadline passed fails it with the last report.
func SweepUntil(tb testing.TB, set *worker.Set, opts worker.GCOptions, done func(worker.GCReport) bool) worker.GCReport {
	tb.Helper()
	var rep worker.GCReport
	retry.Within(tb, 10*time.Second, "a sweep reaching the expected state", func() error {
		var err error
		if rep, err = set.CollectGarbage(tb.Context(), opts); err != nil {
			tb.Fatalf("sweep: %v", err)
		}
		if !done(rep) {
			return fmt.Errorf("last report %+v", rep)
		}
		return nil
	})
	return rep
}
