package corestest_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/corestest"
)

// single is the one node of workbench.SingleCore over a single-voter replica.
type single struct{ cores workbench.Cores }

func (s single) Nodes() int                { return 1 }
func (s single) Cores(int) workbench.Cores { return s.cores }

func TestSingleCoreOverASingleVoterReplica(t *testing.T) {
	corestest.Run(t, func(t *testing.T) corestest.Harness {
		sh, err := shard.Open(shard.Config{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sh.Close() })
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := sh.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		return single{workbench.SingleCore{Core: sh}}
	})
}
