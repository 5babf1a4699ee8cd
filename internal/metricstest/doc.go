// Package metricstest reads Prometheus metrics in tests: the value of the series of a
// metric whose labels include the given pairs, from a registry or from a scrape.
//
// It is test support (internal/testsupport_test.go): only test files import it.
//
// Invariants tests rely on:
//
//   - A series' value is a counter's or a gauge's value, or a histogram's or a summary's
//     sample count; the series that match are summed, so a partial label set reads the
//     total over the labels it leaves out.
//   - No matching series is a value of 0 and found false, never an error: a counter not
//     yet written is not exported.
//   - A registry that fails to gather fails the test.
package metricstest
