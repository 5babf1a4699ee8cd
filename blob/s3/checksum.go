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
func crc32cBase64(p []byte) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc32.Checksum(p, castagnoli))
	return base64.StdEncoding.EncodeToString(b[:])
}
