package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Moving a root between shards, the control plane's half (docs/architecture.md, "Moving a
// root"). A move is one etcd record, moves/<id>, created by StartMove (an operator's
// request) together with a lock, moving/<root>, that keeps a second move of the root out
// while the first is unfinished. The elected controller drives every unfinished move
// (moves_drive.go) through a MoveDriver (the node's shard host) and writes each step it
// reaches to the record, fenced by its election key like its other writes; the placement
// switch (SwitchMove) is the move's commit point.

// MoveVersion is the cluster version every registered node must publish before a root
// may move: the move commands (meta ops 40 to 47) are of cluster version 5.
const MoveVersion = 5

// MoveStep is how far a move got: the step the record names is done.
type MoveStep string

// Steps of a move, in order (the numbers of the architecture's table), and its two
// rollback states. A move ends MoveDone or MoveRolledBack.
const (
	MoveRequested   MoveStep = "requested" // 1: recorded, no shard touched
	MoveImporting   MoveStep = "importing" // 2: the target began the import
	MoveFenced      MoveStep = "fenced"    // 3: the source refuses the root's commands
	MoveCopied      MoveStep = "copied"    // 4: every chunk arrived on the target
	MoveFinished    MoveStep = "finished"  // 5: the target holds the root, read-only
	MoveSwitched    MoveStep = "switched"  // 6: the placement names the target (commit point)
	MoveConfirmed   MoveStep = "confirmed" // 7: the target takes commands
	MoveDone        MoveStep = "done"      // 8: the source released the root
	MoveRollingBack MoveStep = "rolling_back"
	MoveRolledBack  MoveStep = "rolled_back"
)

var moveOrder = map[MoveStep]int{MoveRequested: 1, MoveImporting: 2, MoveFenced: 3, MoveCopied: 4,
	MoveFinished: 5, MoveSwitched: 6, MoveConfirmed: 7, MoveDone: 8}

// Ended reports whether the move has nothing left to do.
func (s MoveStep) Ended() bool { return s == MoveDone || s == MoveRolledBack }

// Committed reports whether the placement names the target: a resumed move rolls forward.
func (s MoveStep) Committed() bool { return moveOrder[s] >= moveOrder[MoveSwitched] }

// RootMove is the record moves/<id>.
type RootMove struct {
	ID     string   `json:"id"`
	Root   string   `json:"root"`
	Source int      `json:"source"`
	Target int      `json:"target"`
	Step   MoveStep `json:"step"`
	// Started is when it was requested; Updated when its record last changed; Ended when
	// it reached MoveDone or MoveRolledBack.
	Started time.Time  `json:"started"`
	Updated time.Time  `json:"updated"`
	Ended   *time.Time `json:"ended,omitempty"`
	// Chunks and Records count what the copy moved.
	Chunks  uint64 `json:"chunks,omitempty"`
	Records int64  `json:"records,omitempty"`
	// Driver is the election revision of the controller term that drives it (0: none
	// yet): a controller that finds another term's number resumes the move.
	Driver int64 `json:"driver,omitempty"`
	// Reason says why a move rolled back (or is rolling back).
	Reason string `json:"reason,omitempty"`
	// Lasting says that the rollback's cause does not go away by trying again soon (a
	// shard refused the move with ResourceExhausted): the rebalancer leaves the root alone
	// for a while (rebalancer.go, unmovableFor).
	Lasting bool `json:"lasting,omitempty"`
	// Revision is the record's mod revision in etcd (not stored).
	Revision int64 `json:"-"`
}

func (k keys) moves() string             { return k.prefix + "/moves/" }
func (k keys) move(id string) string     { return k.moves() + id }
func (k keys) moving(root string) string { return k.movingAll() + root }

// Errors of moves.
var (
	// ErrMoveInProgress: the root already has an unfinished move.
	ErrMoveInProgress = errors.New("control: the root has a move in progress")
	// ErrMoveNotFound: no move has that id.
	ErrMoveNotFound = errors.New("control: no such move")
)

// NeverWritten is StartMove's refusal of a root that was never written (ErrRootNotPlaced);
// a surface answers a root its caller may not use with it too, so that the two read alike.
func NeverWritten(root string) error {
	return Refuse(ErrRootNotPlaced, "agent root %q has never been written", root)
}

// StartMove records a move of root to shard target (step 1) and returns it; the elected
// controller picks it up within a reconcile interval. Refused (a *Refusal) with
// ErrInvalidArgument when the root's name is bad, the target is not a shard of the cluster,
// is closed to placement, or is the root's shard now; ErrRootNotPlaced when the root was
// never written; ErrMoveInProgress while another move of the root is unfinished;
// ErrBackupInProgress while a backup of the cluster runs (backup_lock.go); a
// *VersionError while a registered node publishes a cluster version below MoveVersion.
// ErrControlPlaneUnavailable: retry (a move may have been recorded: list them first).
func (p *Plane) StartMove(ctx context.Context, root string, target int, now time.Time) (RootMove, error) {
	if err := validRoot(root); err != nil {
		return RootMove{}, Refuse(ErrInvalidArgument, "root: %s", strings.TrimPrefix(err.Error(), ErrInvalidArgument.Error()+": "))
	}
	var read *clientv3.TxnResponse
	err := p.withTimeout(ctx, "read root and cluster", func(ctx context.Context) (err error) {
		read, err = p.cli.Txn(ctx).Then(clientv3.OpGet(p.k.root(root)), clientv3.OpGet(p.k.cluster()),
			clientv3.OpGet(p.k.nodes(), clientv3.WithPrefix()), clientv3.OpGet(p.k.moving(root))).Commit()
		return err
	})
	if err != nil {
		return RootMove{}, err
	}
	rootKV := read.Responses[0].GetResponseRange().Kvs
	if len(rootKV) == 0 {
		return RootMove{}, NeverWritten(root)
	}
	var rec rootRecord
	if err := json.Unmarshal(rootKV[0].Value, &rec); err != nil {
		return RootMove{}, fmt.Errorf("control: root record: %w", err)
	}
	clusterKV := read.Responses[1].GetResponseRange().Kvs
	if len(clusterKV) == 0 {
		return RootMove{}, ErrClusterNotCreated
	}
	var c Cluster
	if err := json.Unmarshal(clusterKV[0].Value, &c); err != nil {
		return RootMove{}, fmt.Errorf("control: cluster metadata: %w", err)
	}
	if target < 0 || target >= c.Shards {
		return RootMove{}, Refuse(ErrInvalidArgument, "shard %d does not exist: the cluster has shards 0 to %d", target, c.Shards-1)
	}
	// An unfinished move first: its root's placement is about to change.
	if kvs := read.Responses[3].GetResponseRange().Kvs; len(kvs) > 0 {
		return RootMove{}, Refuse(ErrMoveInProgress, "agent root %q is being moved already (move %s)", root, string(kvs[0].Value))
	}
	if target == rec.Shard {
		return RootMove{}, Refuse(ErrInvalidArgument, "agent root %q is on shard %d already", root, target)
	}
	for _, kv := range read.Responses[2].GetResponseRange().Kvs {
		var n NodeInfo
		if json.Unmarshal(kv.Value, &n) != nil {
			continue
		}
		if v := max(1, n.ClusterVersion); v < MoveVersion {
			return RootMove{}, &VersionError{Node: strings.TrimPrefix(string(kv.Key), p.k.nodes()), Version: v,
				Need: MoveVersion, What: "moving a root"}
		}
	}
	closed, err := p.ClosedShards(ctx, c)
	if err != nil {
		return RootMove{}, err
	}
	if closed[target] {
		return RootMove{}, Refuse(ErrInvalidArgument, "shard %d is not open to roots yet (it is still gaining its replicas)", target)
	}
	m := RootMove{ID: uuid.NewString(), Root: root, Source: rec.Shard, Target: target, Step: MoveRequested,
		Started: now.UTC(), Updated: now.UTC()}
	val, err := json.Marshal(m)
	if err != nil {
		return RootMove{}, err
	}
	var resp *clientv3.TxnResponse
	err = p.withTimeout(ctx, "record move", func(ctx context.Context) (err error) {
		resp, err = p.cli.Txn(ctx).If(
			clientv3.Compare(clientv3.CreateRevision(p.k.moving(root)), "=", 0),
			clientv3.Compare(clientv3.ModRevision(p.k.root(root)), "=", rootKV[0].ModRevision),
			clientv3.Compare(clientv3.CreateRevision(p.k.backups()), "=", 0).WithPrefix(), // backup_lock.go
		).Then(clientv3.OpPut(p.k.move(m.ID), string(val)), clientv3.OpPut(p.k.moving(root), m.ID)).
			Else(clientv3.OpGet(p.k.backups(), clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1))).Commit()
		return err
	})
	if err != nil {
		return RootMove{}, err
	}
	if !resp.Succeeded {
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			return RootMove{}, Refuse(ErrBackupInProgress, "backup %s of the cluster is being taken: start the move once it ended",
				string(kvs[0].Key[len(p.k.backups()):]))
		}
		return RootMove{}, Refuse(ErrMoveInProgress, "agent root %q is being moved already", root)
	}
	m.Revision = resp.Header.Revision
	p.cfg.Logger.Info("control: root move recorded", "move", m.ID, "root", root, "from", m.Source, "to", target)
	return m, nil
}

// Moves returns every move record, oldest first.
func (p *Plane) Moves(ctx context.Context) ([]RootMove, error) {
	resp, err := p.get(ctx, "list moves", p.k.moves(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make([]RootMove, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var m RootMove
		if json.Unmarshal(kv.Value, &m) == nil {
			m.Revision = kv.ModRevision
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

// GetMove returns move id. Errors: ErrMoveNotFound, ErrControlPlaneUnavailable.
func (p *Plane) GetMove(ctx context.Context, id string) (RootMove, error) {
	resp, err := p.get(ctx, "read move", p.k.move(id))
	if err != nil {
		return RootMove{}, err
	}
	if len(resp.Kvs) == 0 {
		return RootMove{}, fmt.Errorf("move %q: %w", id, ErrMoveNotFound)
	}
	var m RootMove
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		return RootMove{}, fmt.Errorf("control: move record: %w", err)
	}
	m.Revision = resp.Kvs[0].ModRevision
	return m, nil
}
