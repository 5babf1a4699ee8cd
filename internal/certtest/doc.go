// Package certtest makes the X.509 material TLS tests need, at run time, with
// crypto/x509: a throw-away CA and certificates it signs, written as PEM files in a test's
// temporary directory. No certificate or key is ever committed.
//
// It is test support: only _test.go files and other test-support packages import it
// (internal/testsupport_test.go checks this).
//
// Invariants tests rely on:
//
//   - Every CA and certificate is new (fresh ECDSA P-256 key, random serial), valid from an
//     hour ago for a day, so two calls never produce the same certificate.
//   - A leaf certificate carries both extended key usages (server and client
//     authentication) and, as subject alternative names, 127.0.0.1, ::1 and "localhost"
//     plus the names asked for, so one pair can serve a loopback listener and authenticate a
//     client.
//   - Files are written whole (temporary file, then rename), so a server that re-reads
//     them never sees half a file.
//   - Failures fail the test (Fatalf); nothing here returns an error.
package certtest
