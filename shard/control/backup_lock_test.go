package control

import (
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestABackupAndAMoveExcludeEachOther: while a backup holds its lock no move starts (a
// refusal naming the backup), and once it released the lock (its key gone with its lease)
// one does; while that move is unfinished no backup starts (a refusal naming the root).
func TestABackupAndAMoveExcludeEachOther(t *testing.T) {
	p, ctx, from := newPlacedRoot(t)
	release, err := p.LockForBackup(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	var r *Refusal
	if _, err := p.StartMove(ctx, "agent-a", 1-from, time.Now()); !errors.Is(err, ErrBackupInProgress) || !errors.As(err, &r) || !strings.Contains(r.Reason, "b1") {
		t.Fatalf("a move during a backup: %v, want a refusal naming the backup", err)
	}
	if moves, err := p.Moves(ctx); err != nil || len(moves) != 0 {
		t.Fatalf("a refused move left records: %+v %v", moves, err)
	}
	release()
	if resp, err := p.cli.Get(ctx, p.k.backups(), clientv3.WithPrefix()); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("a released backup lock: %v %v", resp, err)
	}
	if _, err := p.StartMove(ctx, "agent-a", 1-from, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.LockForBackup(ctx, "b2"); !errors.Is(err, ErrMoveInProgress) || !errors.As(err, &r) || !strings.Contains(r.Reason, "agent-a") {
		t.Fatalf("a backup during a move: %v, want a refusal naming the root", err)
	}
	if resp, err := p.cli.Get(ctx, p.k.backups(), clientv3.WithPrefix()); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("a refused backup left its lock: %v %v", resp, err)
	}
}
