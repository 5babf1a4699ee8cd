package host

import (
	"context"
	"time"

	"github.com/cairnstore/cairn/shard/control"
)

// RebalanceSwitch reads the cluster's rebalance switch (control.Plane.RebalanceSwitch).
// ErrNotCluster on the embedded node.
func (h *Host) RebalanceSwitch(ctx context.Context) (control.RebalanceSwitch, error) {
	if h.cluster == nil {
		return control.RebalanceSwitch{}, ErrNotCluster
	}
	return h.cfg.Cluster.Plane.RebalanceSwitch(ctx)
}

// SetRebalanceSwitch turns the cluster's rebalancer on or off (cairn admin rebalance).
// ErrNotCluster on the embedded node.
func (h *Host) SetRebalanceSwitch(ctx context.Context, enabled bool) (control.RebalanceSwitch, error) {
	if h.cluster == nil {
		return control.RebalanceSwitch{}, ErrNotCluster
	}
	return h.cfg.Cluster.Plane.SetRebalanceSwitch(ctx, enabled, time.Now())
}
