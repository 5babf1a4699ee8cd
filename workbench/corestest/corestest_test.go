package corestest_test

import (
	"testing"

	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/corestest"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// single is the one node of workbench.SingleCore over a single-voter replica.
type single struct{ cores workbench.Cores }

func (s single) Nodes() int                { return 1 }
func (s single) Cores(int) workbench.Cores { return s.cores }

func TestSingleCoreOverASingleVoterReplica(t *testing.T) {
	corestest.Run(t, func(t *testing.T) corestest.Harness {
		return single{workbench.SingleCore{Core: workbenchtest.Replica(t, shard.Config{})}}
	})
}
