// Package integration holds Cairn's end-to-end tests (README.md#testing, layer 4): each test
// runs the real `cairn` binary as child processes (servers on free loopback ports, CLI
// commands, MCP over real stdio and HTTP) and checks what a user would observe, including
// crashes (kill -9) and restarts on the same data directory.
//
// The package has no non-test code besides this comment. TestMain builds ./cmd/cairn once
// into a temporary directory; when the tests run with -race, a race-instrumented binary
// is built too and used where speed does not matter, and any "DATA RACE" report on a
// child's stderr fails the test that ran it. Throughput figures are logged on lines
// starting with THROUGHPUT (go test -v); they are reported, never asserted. -short cuts
// the crash loop from 20 kills to 3.
//
// Every server these tests start comes from integration/framework: a framework.Process
// (one `cairn serve`, embedded or cluster), framework.Processes (a cluster of them), and
// the Stores they share. A cluster scenario written against framework.Cluster runs
// twice, as subtests: on nodes inside the test process and on real processes
// (cluster_scenario_test.go holds those scenarios).
//
// regressions_test.go keeps the reproductions of bugs these tests found, now fixed.
package integration
