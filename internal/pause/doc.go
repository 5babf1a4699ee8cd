// Package pause waits a while unless a context ends first: the step every retry and poll
// loop of the module takes between attempts (a backoff, a poll interval, a lease's
// renewal period).
//
// Invariants:
//
//   - For returns nil once the whole duration has passed and ctx's error when ctx ended
//     first; a duration of zero or less returns at once, with ctx's error if it has ended.
//   - It holds no timer after it returns, whichever way it returned.
package pause
