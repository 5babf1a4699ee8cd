// Package testclock is a clock a test moves by hand, for code that takes its time from a
// func() time.Time (a claim going stale, an upload past its deadline, a match's budget),
// so that no test sleeps to let time pass.
//
// It is test support: only _test.go files and other test-support packages import it
// (internal/testsupport_test.go checks this).
//
// Invariants tests rely on:
//
//   - Now never moves by itself on a Clock made by New: only Advance moves it, by exactly
//     the duration given.
//   - A Clock made by Stepping moves forward by its step at every reading, before the
//     reading is returned (the first reading is start+step).
//   - A Clock is safe for concurrent use: the code under test may read it from its own
//     goroutines while the test advances it.
package testclock
