// Package gcfloor keeps the Go collector's heap goal at or above a floor: a process whose
// live heap is small (a node serving small calls holds a few MiB) collects garbage far
// more often than its memory requires under GOGC=100, whose goal is twice the live heap.
//
// After each collection a Tuner reads the live heap and the roots the collector scans
// (runtime/metrics: /gc/heap/live:bytes, /gc/scan/stack:bytes, /gc/scan/globals:bytes)
// and sets the GC percentage (debug.SetGCPercent) so that the runtime's next goal,
// live + (live + roots)·percent/100, is about the floor, never below the process's own
// GOGC. A live heap large enough that GOGC alone reaches the floor leaves GOGC as it was,
// so the floor costs at most F of heap, never a multiple of the live heap.
//
// Invariants:
//   - The percentage is never below the GOGC the process started with, and Stop restores
//     it; with GOGC=off (negative) Start does nothing.
//   - A memory limit (GOMEMLIMIT, debug.SetMemoryLimit) still bounds the heap: the runtime
//     collects at whichever of the goal and the limit comes first.
//   - One Tuner per process: the GC percentage is process state. Only the binary that owns
//     the process (cmd/cairn's serve) starts one; nodes opened by tests or by programs
//     embedding Cairn leave the collector alone.
//   - It runs on the runtime's cleanup goroutine once per collection and never allocates
//     more than one small object per collection.
package gcfloor
