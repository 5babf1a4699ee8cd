package mem_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/blob/mem"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStoreConformance(t *testing.T) {
	blobtest.Run(t, func(*testing.T) blob.Store { return mem.New() })
}

func TestStoreDamageConformance(t *testing.T) {
	blobtest.RunDamage(t, func(*testing.T) blob.Store { return mem.New() }, func(t *testing.T, s blob.Store, key blob.Key) {
		if err := s.(*mem.Store).Corrupt(key); err != nil {
			t.Fatal(err)
		}
	})
}
