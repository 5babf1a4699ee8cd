// Package httpcall sends one HTTP request in a test and reads its whole answer: the
// request helper the surfaces' tests (api/rest, api/mcp, api/openwop, api/documents,
// api/server) share.
//
// It is test support (internal/testsupport_test.go): only test files import it.
//
// Invariants tests rely on:
//
//   - A request that cannot be built or sent, or an answer whose body cannot be read,
//     fails the test (t.Fatal); an HTTP error status is an answer, not a failure.
//   - Headers come as name, value pairs, set in order (a later pair replaces an earlier
//     one of the same name).
package httpcall
