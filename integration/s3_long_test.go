//go:build long

package integration

import (
	"testing"
	"time"
)

// Full-size versions of the s3 tests of s3_test.go, run by `make test-long` (go test
// -tags long). Minutes each on a 2-core machine.

const longRunTimeout = 60 * time.Minute

// A 2 GiB body streams into MinIO and back with the server's peak RSS under 300 MiB.
func TestS3LongLargeBodyStreamsWithBoundedServerMemory(t *testing.T) {
	testS3LargeBodyRoundTrip(t, 2<<30, longRunTimeout)
}

// A 1 GiB body re-uploaded with 1 MiB overwritten adds at most 3 objects, with 1 MiB
// inserted at most 4.
func TestS3LongReuploadAfterAnEditStoresOnlyTheChangedChunks(t *testing.T) {
	testS3ChunkReuse(t, 1<<30, longRunTimeout)
}
