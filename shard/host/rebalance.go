package host

import (
	"context"
	"time"

	"github.com/cairnstore/cairn/shard/control"
)

// RebalanceSwitch reads the cluster's rebalance switch (control.Plane.RebalanceSwitch).
// ErrNotCluster on the embedded node.
func (mv *Mover) RebalanceSwitch(ctx context.Context) (control.RebalanceSwitch, error) {
	if mv.cluster == nil {
		return control.RebalanceSwitch{}, ErrNotCluster
	}
	return mv.cluster.cfg.Plane.RebalanceSwitch(ctx)
}

// SetRebalanceSwitch turns the cluster's rebalancer on or off (cairn admin rebalance).
// ErrNotCluster on the embedded node.
func (mv *Mover) SetRebalanceSwitch(ctx context.Context, enabled bool) (control.RebalanceSwitch, error) {
	if mv.cluster == nil {
		return control.RebalanceSwitch{}, ErrNotCluster
	}
	return mv.cluster.cfg.Plane.SetRebalanceSwitch(ctx, enabled, time.Now())
}
