package s3_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/blob/s3/s3test"
)

// TestOpenAbortsUploadsACrashLeftInTheJournal: a multipart upload noted in the upload
// journal and never finished (the writer crashed) is aborted when the store next opens;
// the journal entry goes, and an upload it does not name is left alone.
func TestOpenAbortsUploadsACrashLeftInTheJournal(t *testing.T) {
	srv := s3test.Start(t)
	cfg := srv.Config(s3test.Bucket())
	cfg.UploadJournal = t.TempDir()
	s3test.Open(t, cfg) // creates the bucket
	raw := srv.Client(t)
	core := minio.Core{Client: raw}
	crashed := "roots/r1/blobs/ab/" + "ab00000000000000000000000000000000000000000000000000000000000000"
	other := "roots/r1/blobs/cd/" + "cd00000000000000000000000000000000000000000000000000000000000000"
	for _, name := range []string{crashed, other} {
		if _, err := core.NewMultipartUpload(t.Context(), cfg.Bucket, name, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	entry := filepath.Join(cfg.UploadJournal, "crashed-1")
	if err := os.WriteFile(entry, []byte(crashed), 0o644); err != nil {
		t.Fatal(err)
	}
	restarted := s3test.Open(t, cfg) // a restart
	left := incompleteUploads(t, raw, cfg.Bucket)
	if len(left) != 1 || left[0][:len(other)] != other {
		t.Fatalf("incomplete uploads after the restart: %v", left)
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Fatalf("the settled journal entry is still there: %v", err)
	}
	// A multipart put that completes leaves nothing in the journal.
	data := blobtest.RandomBytes(9, 40<<20)
	if res := blobtest.Put(t, restarted, blobtest.KeyOf("r1", data), data); !res.Created {
		t.Fatal("the put created nothing")
	}
	if ents, _ := os.ReadDir(cfg.UploadJournal); len(ents) != 0 {
		t.Fatalf("journal entries after a completed upload: %d", len(ents))
	}
}
