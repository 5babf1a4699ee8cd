package s3

// SetChecksum makes s send f(body) as every request body's x-amz-checksum-crc32c, so a
// test can make the object store refuse a body as damaged in transit; nil restores the
// real checksum.
func SetChecksum(s *Store, f func(body []byte) string) {
	if f == nil {
		f = crc32cBase64
	}
	s.checksum = f
}
