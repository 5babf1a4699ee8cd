package s3_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/blob/s3"
	"github.com/cairnstore/cairn/blob/s3/s3test"
)

// A body goes up as UNSIGNED-PAYLOAD with x-amz-checksum-crc32c (doc.go): the store must
// verify the checksum, so a body whose checksum is wrong — as one damaged in transit
// would be — is refused and nothing is stored, whether it goes up as one PUT or as a
// multipart upload. The same Put with the right checksum then stores the blob.
func TestObjectStoreRefusesABodyWithAWrongChecksum(t *testing.T) {
	srv := s3test.Start(t)
	wrong := base64.StdEncoding.EncodeToString([]byte{0xde, 0xad, 0xbe, 0xef})
	for _, tc := range []struct {
		name string
		size int
	}{
		{"single PUT", 64 << 10},
		{"multipart upload", s3.MinPartSizeBytes + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.Config(s3test.Bucket())
			cfg.PartSizeBytes = s3.MinPartSizeBytes
			st := s3test.Open(t, cfg)
			data := blobtest.RandomBytes(uint64(tc.size), tc.size) // random: stored identity, as long as data
			key := blobtest.KeyOf("r1", data)

			s3.SetChecksum(st, func([]byte) string { return wrong })
			_, err := st.Put(t.Context(), key, blob.Hash(data))
			var u *s3.ObjectUnavailableError
			if !errors.As(err, &u) || u.Attempts != cfg.Retry.MaxAttempts {
				t.Fatalf("Put with a wrong checksum: %v, want an *ObjectUnavailableError after %d attempts (the store refused every copy of the body, each sent again as damaged in transit)", err, cfg.Retry.MaxAttempts)
			}
			t.Logf("refused: %v", err)
			if _, err := st.Stat(t.Context(), key); !errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("Stat after the refused Put: %v, want ErrNotFound (nothing stored)", err)
			}

			s3.SetChecksum(st, nil)
			res := blobtest.Put(t, st, key, data)
			if !res.Created {
				t.Fatalf("Put with the right checksum: %+v, want Created", res)
			}
			if got, err := blobtest.Read(t.Context(), st, key, 0, -1); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Get: %d bytes, %v; want the %d bytes put", len(got), err, len(data))
			}
		})
	}
}
