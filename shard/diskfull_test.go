package shard

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

func TestALogWriteThatHitENOSPCIsStorageFull(t *testing.T) {
	err := mapRaftError(fmt.Errorf("failed to commit logs: %w", &fs.PathError{Op: "write", Path: "raft.db", Err: syscall.ENOSPC}))
	if !errors.Is(err, ErrStorageFull) {
		t.Fatalf("mapRaftError(ENOSPC) = %v, want ErrStorageFull", err)
	}
}

func TestTheDiskGaugeRefusesBelowTheReserve(t *testing.T) {
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if _, full := (&diskGauge{dir: dir, min: free + 1<<40}).full(); !full {
		t.Fatal("a reserve above the free space is not reported full")
	}
	if _, full := (&diskGauge{dir: dir, min: -1}).full(); full {
		t.Fatal("a disabled reserve is reported full")
	}
}
