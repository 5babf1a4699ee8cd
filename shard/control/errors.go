package control

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors of the control plane.
var (
	// ErrControlPlaneUnavailable: etcd did not answer in time (no endpoint reachable, no
	// quorum, request timed out). Retryable; nothing was changed unless the error says the
	// outcome is unknown (a placement retried with the same root is safe either way).
	ErrControlPlaneUnavailable = errors.New("control: control plane unavailable")
	// ErrClusterMismatch: the cluster exists with other fixed settings. The error is a
	// *MismatchError.
	ErrClusterMismatch = errors.New("control: cluster exists with different settings")
	// ErrClusterNotCreated: no cluster metadata under the prefix (a node asked to join
	// without a shard count).
	ErrClusterNotCreated = errors.New("control: cluster not created")
	// ErrNodeIDInUse: this node id belongs to another data directory (Register): another
	// process runs under it, or it is the id of a node whose data directory was lost.
	ErrNodeIDInUse = errors.New("control: node id belongs to another data directory")
	// ErrRootNotPlaced: the root has no shard yet (Resolve of a root never written).
	ErrRootNotPlaced = errors.New("control: root not placed")
	// ErrInvalidArgument: an argument broke a rule; the message names it.
	ErrInvalidArgument = errors.New("control: invalid argument")
	// ErrDeposed: a controller write was refused because its election key is gone or was
	// re-created: another controller may be in charge.
	ErrDeposed = errors.New("control: controller deposed")
	// ErrConflict: a controller write was refused because the record changed since it was
	// read; the next reconcile round reads it again.
	ErrConflict = errors.New("control: record changed concurrently")
)

// MismatchError says which fixed cluster setting differs from the one asked for.
type MismatchError struct {
	Field     string // "shards", "replication" or "blob"
	Existing  string // the cluster's value ("2 or 4": the shard counts at creation and now)
	Requested string // the node's value
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("control: cluster exists with %s=%s, asked for %s",
		e.Field, e.Existing, e.Requested)
}

// Is makes errors.Is(err, ErrClusterMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrClusterMismatch }

// ErrUpgradeInProgress: the shard count cannot grow while a registered node runs a release
// older than GrowVersion (grow.go). The error is a *VersionError.
var ErrUpgradeInProgress = errors.New("control: a node runs a release that cannot follow a growing shard count")

// VersionError names the node that holds a grow (or a root move) back.
type VersionError struct {
	Node    string
	Version int // the cluster version it registered with
	// Need is the cluster version the operation needs (0: GrowVersion); What names the
	// operation ("" : "adding shards").
	Need int
	What string
}

// Needed returns the cluster version the refused operation needs.
func (e *VersionError) Needed() int {
	if e.Need == 0 {
		return GrowVersion
	}
	return e.Need
}

func (e *VersionError) Error() string {
	what := e.What
	if what == "" {
		what = "adding shards"
	}
	return fmt.Sprintf("control: node %s runs cluster version %d; %s needs %d on every node (upgrade it first)",
		e.Node, e.Version, what, e.Needed())
}

// Is makes errors.Is(err, ErrUpgradeInProgress) true.
func (e *VersionError) Is(target error) bool { return target == ErrUpgradeInProgress }

// ErrShardCountChanged: GrowShards was told the count it expected and the cluster has
// another one (a grow ran in between, or the caller read a stale count). Nothing changed.
var ErrShardCountChanged = errors.New("control: the cluster's shard count is not the one expected")

// IsRetryable reports whether err means "try again later": etcd was unreachable.
func IsRetryable(err error) bool { return errors.Is(err, ErrControlPlaneUnavailable) }

// wrapErr turns an etcd client error of operation op into a control error. parent is the
// caller's context: when it ended, its error is returned as is (the caller gave up; etcd
// did not fail).
func wrapErr(parent context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("control: %s: %w", op, perr)
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %s: %w", ErrControlPlaneUnavailable, op, err)
	}
	return fmt.Errorf("control: %s: %w", op, err)
}

// unavailable classifies an etcd client error as "etcd cannot answer now".
func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, clientv3.ErrNoAvailableEndpoints) {
		return true
	}
	code := status.Code(err)
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		return true
	}
	return false
}

// Refusal is an error whose Reason, a sentence that names no package and no internal
// value, is what a surface may answer (docs/architecture.md#errors: internal names never
// reach a response); Err is the sentinel it matches (errors.Is). Errors an operator acts
// on are Refusals: a grow's bad count, a bad node id, a shard recovery refused
// (shard/host).
type Refusal struct {
	Err    error
	Reason string
}

func (e *Refusal) Error() string { return e.Err.Error() + ": " + e.Reason }

func (e *Refusal) Unwrap() error { return e.Err }

// Refuse returns a *Refusal of sentinel, its reason formatted from format and args.
func Refuse(sentinel error, format string, args ...any) error {
	return &Refusal{Err: sentinel, Reason: fmt.Sprintf(format, args...)}
}

// PublicReason is what a surface answers for err: the Reason of the *Refusal it wraps, or
// fallback when it wraps none (its text may name packages and internals).
func PublicReason(err error, fallback string) string {
	if r := (*Refusal)(nil); errors.As(err, &r) {
		return r.Reason
	}
	return fallback
}
