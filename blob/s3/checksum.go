package s3

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
)

// Request bodies go up with x-amz-content-sha256: UNSIGNED-PAYLOAD and an
// x-amz-checksum-crc32c header (doc.go says why and what AWS S3 and MinIO do with it).
const (
	amzChecksumCRC32C    = "x-amz-checksum-crc32c"
	amzChecksumAlgorithm = "x-amz-checksum-algorithm"
	checksumAlgorithm    = "CRC32C"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32cBase64 is the x-amz-checksum-crc32c value of p: the base64 of its big-endian
// CRC32C (Castagnoli), as the S3 API defines it.
func crc32cBase64(p []byte) string { return crc32cValue(crc32.Checksum(p, castagnoli)) }

// crc32cValue is the x-amz-checksum-crc32c value of a body whose CRC32C is crc.
func crc32cValue(crc uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc)
	return base64.StdEncoding.EncodeToString(b[:])
}

// bodyChecksum is the x-amz-checksum-crc32c value of a request body: from crc, its CRC32C,
// when known (a payload stored as it was hashed: blob.Hashed.CRC32C, taken in the pass
// that took its digests, while its bytes were in the cache), else taken here. A test's
// checksum (Store.checksum) replaces both.
func (s *Store) bodyChecksum(body []byte, crc uint32, known bool) string {
	switch {
	case s.checksum != nil:
		return s.checksum(body)
	case known:
		return crc32cValue(crc)
	}
	return crc32cBase64(body)
}
