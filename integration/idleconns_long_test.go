//go:build long

package integration

import "testing"

// 20,000 idle connections against the default cap (4096): the server's descriptors stay
// bounded (IDLE lines in the log).
func TestIdleConnectionsLongTwentyThousand(t *testing.T) {
	testIdleConnections(t, 20_000, 4096)
}
