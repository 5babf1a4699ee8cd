// Package meta is Cairn's metadata core: the deterministic state machine (FSM) of one
// shard, its records, its commands and its MVCC reads.
//
// The FSM is pure. Apply never reads the clock, never does I/O, never draws randomness and
// never allocates ids from anything but counters in its own state: time arrives in the
// command (stamped by the leader), the shard version is the Raft log index handed to Apply.
// Two replicas that apply the same log hold identical state, byte for byte, and give the
// same answer to every command (the property tests in this package check exactly that
// against a naive model).
//
// Invariants callers rely on:
//
//   - A generation is the shard version of the command that made a body visible, so it is
//     strictly increasing per shard and never reused, even after delete and re-create.
//   - A path is a file or an implicit directory, never both (DESIGN.md §7).
//   - A command either applies whole or not at all: every check runs before any mutation.
//   - Records reachable from a View are never mutated; writers replace them. A View is an
//     O(1) copy-on-write snapshot that stays consistent while applies go on.
//   - Restore replaces all state; Snapshot streams it without one giant allocation.
//
// meta imports nothing else of Cairn's; the shard package feeds it Raft log entries and the
// api package reads it through Views.
package meta
