// Package unprivileged runs a test as a user without privileges when the test process
// runs as root, for tests of what file permissions refuse: root passes every mode check,
// so a directory of mode 0555 stops any user's writes but root's, and such a test run as
// root (as CI runs) would test nothing.
//
// Invariants:
//   - Test support only: imported by _test.go files (internal/testsupport_test.go).
//   - The test runs, as itself or in a child; it is never skipped: a root process that
//     cannot start the child fails the test.
//   - The child is the same test binary, copied where the unprivileged user can run it,
//     running only the one test (-test.run), whose verdict and output become the parent's.
//   - ReadOnlyDir is the directory such tests write into and fail: mode 0555, given back
//     its write permission when the test ends, so that the test's cleanup removes it.
package unprivileged
