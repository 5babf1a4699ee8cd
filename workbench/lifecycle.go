package workbench

import "sync"

// Lifecycle makes, keeps and ends workbenches and their read points: creating, listing
// and deleting workbenches, a root's usage, quota, retention and purge, snapshots
// (leased read points, with their renewals and retirements, and OpenWOP run snapshots),
// commits (sealed records of a workbench's members) and restores (a new workbench made
// from a commit, driven in bounded batches).
//
// Invariants:
//
//   - A snapshot holds the history it reads until it is retired or its lease expires;
//     a workbench holds at most Config.MaxSnapshotsPerWorkbench of them, and runs
//     (RunSnapshot) a cap of their own, Config.MaxRunSnapshotsPerWorkbench.
//   - A commit's identity is deterministic (the same members give the same id), and
//     commit and restore alone write the reserved manifests
//     (metadata/run_manifest.json, metadata/restore_manifest.json).
//   - A restore stages at most Config.RestoreBatch files a command; one this process
//     drives is in restoring until its driver stops, and ResumeRestores (a leader's
//     worker) finishes the ones a lost leader left.
//   - Root-wide operations (usage, quota, retention, purge) need a principal that may use
//     the whole root (access.go).
type Lifecycle struct {
	base *base
	// cfg is its configuration, defaulted and valid (config.go).
	cfg LifecycleConfig
	// restoring maps a restore operation id → a channel closed when this process's driver
	// of it stops.
	restoring sync.Map
}
