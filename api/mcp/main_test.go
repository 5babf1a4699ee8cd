package mcp

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the surface, the SDK sessions and the test servers start is stopped by the
// end of the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
