package blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/blob/mem"
	"github.com/cairnstore/cairn/internal/metricstest"
)

// The wrapper changes nothing a caller sees.
func TestInstrumentedStoreConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		s, err := blob.Instrument(mem.New(), prometheus.NewRegistry(), "mem")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// compressible returns n bytes of text that zstd shrinks well.
func compressible(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of a log that compresses\n", i%31)
	}
	return b.Bytes()[:n]
}

func TestInstrumentCountsWhatTheStoreDid(t *testing.T) {
	ctx := t.Context()
	reg := prometheus.NewRegistry()
	s, err := blob.Instrument(mem.New(), reg, "mem")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := compressible(64 << 10)
	key := blob.Key{Root: "r1", Digest: blob.DigestOf(data)}

	res, err := s.Put(ctx, key, blob.Hash(data))
	if err != nil || !res.Created || res.StoredBytes >= int64(len(data)) {
		t.Fatalf("first Put = %+v, %v; want a created, compressed blob", res, err)
	}
	if _, err := s.Put(ctx, key, blob.Hash(data)); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Get(ctx, key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get read %d bytes, %v", len(got), err)
	}
	rc.Close()
	rc, err = s.Get(ctx, key, 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()

	missing := blob.Key{Root: "r1", Digest: blob.DigestOf([]byte("absent"))}
	if _, err := s.Get(ctx, missing, 0, -1); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Get of a missing blob: %v", err)
	}
	if _, err := s.Stat(ctx, missing); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat of a missing blob: %v", err)
	}
	if _, err := s.Put(ctx, missing, blob.Hash(data)); !errors.Is(err, blob.ErrDigestMismatch) {
		t.Fatalf("Put with the wrong digest: %v", err)
	}
	if _, err := s.Put(ctx, blob.Key{Root: "Bad Root", Digest: key.Digest}, blob.Hash(data)); !errors.Is(err, blob.ErrInvalidKey) {
		t.Fatalf("Put with a bad root: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Put(cancelled, key, blob.Hash(data)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled ctx: %v", err)
	}
	stop := errors.New("stop")
	if err := s.List(ctx, "r1", func(blob.Key, blob.Info) error { return stop }); err != stop {
		t.Fatalf("List returned %v, want fn's error unchanged", err)
	}

	if err := s.Delete(ctx, missing); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}

	want := []struct {
		name   string
		labels []string
		value  float64
	}{
		{"cairn_blob_put_objects_total", nil, 1},
		{"cairn_blob_put_bytes_total", nil, float64(len(data))},
		{"cairn_blob_put_stored_bytes_total", nil, float64(res.StoredBytes)},
		{"cairn_blob_put_dedupe_hits_total", nil, 1},
		{"cairn_blob_put_dedupe_bytes_total", nil, float64(len(data))},
		{"cairn_blob_get_objects_total", nil, 2},
		{"cairn_blob_get_bytes_total", nil, float64(len(data) + 100)},
		{"cairn_blob_deleted_objects_total", nil, 1},
		{"cairn_blob_deleted_bytes_total", nil, float64(res.StoredBytes)},
		{"cairn_blob_errors_total", []string{"op=get", "kind=not_found"}, 1},
		{"cairn_blob_errors_total", []string{"op=stat", "kind=not_found"}, 1},
		{"cairn_blob_errors_total", []string{"op=put", "kind=digest_mismatch"}, 1},
		{"cairn_blob_errors_total", []string{"op=put", "kind=invalid_key"}, 1},
		{"cairn_blob_errors_total", []string{"op=put", "kind=canceled"}, 1},
		{"cairn_blob_errors_total", []string{"op=list"}, 0},
		{"cairn_blob_errors_total", []string{"op=delete"}, 0},
		// Every call is timed, failed ones too.
		{"cairn_blob_operation_duration_seconds", []string{"op=put", "backend=mem"}, 5},
		{"cairn_blob_operation_duration_seconds", []string{"op=get", "backend=mem"}, 3},
		{"cairn_blob_operation_duration_seconds", []string{"op=stat", "backend=mem"}, 1},
		{"cairn_blob_operation_duration_seconds", []string{"op=delete", "backend=mem"}, 2},
		{"cairn_blob_operation_duration_seconds", []string{"op=list", "backend=mem"}, 1},
		{"cairn_blob_operation_duration_seconds", []string{"backend=dir"}, 0},
	}
	for _, w := range want {
		if got := metricstest.Value(t, reg, w.name, w.labels...); got != w.value {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.value)
		}
	}

	s.Close()
	if err := s.List(ctx, "r1", func(blob.Key, blob.Info) error { return nil }); !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("List after Close: %v", err)
	}
	if got := metricstest.Value(t, reg, "cairn_blob_errors_total", "op=list", "kind=unavailable"); got != 1 {
		t.Fatalf("list errors after Close = %v, want 1", got)
	}
}

// corruptReads is a Store whose readers fail with ErrCorrupt after the first byte.
type corruptReads struct{ blob.Store }

func (c corruptReads) Get(ctx context.Context, key blob.Key, offset, length int64) (io.ReadCloser, error) {
	return io.NopCloser(io.MultiReader(strings.NewReader("x"), errReader{blob.ErrCorrupt})), nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestInstrumentCountsAFailedReadOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := blob.Instrument(corruptReads{mem.New()}, reg, "mem")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := s.Get(t.Context(), blob.Key{Root: "r1"}, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	for range 3 {
		rc.Read(buf)
	}
	if _, err := rc.Read(buf); !errors.Is(err, blob.ErrCorrupt) {
		t.Fatalf("Read = %v, want the store's error unchanged", err)
	}
	rc.Close()
	if got := metricstest.Value(t, reg, "cairn_blob_errors_total", "op=read", "kind=corrupt"); got != 1 {
		t.Fatalf("read errors = %v, want 1 for one failing reader", got)
	}
	if got := metricstest.Value(t, reg, "cairn_blob_get_bytes_total"); got != 1 {
		t.Fatalf("get bytes = %v, want the 1 byte delivered", got)
	}
}

func TestInstrumentedStoresOnOneRegistryShareCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	ctx := t.Context()
	for i := range 2 {
		s, err := blob.Instrument(mem.New(), reg, "mem")
		if err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
		data := []byte("same bytes, two stores")
		if _, err := s.Put(ctx, blob.Key{Root: "r1", Digest: blob.DigestOf(data)}, blob.Hash(data)); err != nil {
			t.Fatal(err)
		}
	}
	if got := metricstest.Value(t, reg, "cairn_blob_put_objects_total"); got != 2 {
		t.Fatalf("put objects = %v, want 2 (one per store)", got)
	}
}

func TestInstrumentFailsOnAConflictingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_blob_put_objects_total", Help: "not ours"}))
	if _, err := blob.Instrument(mem.New(), reg, "mem"); err == nil {
		t.Fatal("Instrument accepted a registry with a different collector under its name")
	}
}

func TestInstrumentWithoutARegistryStillWorks(t *testing.T) {
	s, err := blob.Instrument(mem.New(), nil, "mem")
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("x")
	if _, err := s.Put(t.Context(), blob.Key{Root: "r1", Digest: blob.DigestOf(data)}, blob.Hash(data)); err != nil {
		t.Fatal(err)
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("get: %w", blob.ErrNotFound), blob.ErrorKindNotFound},
		{fmt.Errorf("put: %w", blob.ErrUnavailable), blob.ErrorKindUnavailable},
		{fmt.Errorf("read: %w", blob.ErrCorrupt), blob.ErrorKindCorrupt},
		{blob.ErrDigestMismatch, blob.ErrorKindDigestMismatch},
		{&blob.KeyError{Field: "root"}, blob.ErrorKindInvalidKey},
		{blob.ErrRange, blob.ErrorKindRange},
		{errors.Join(blob.ErrUnavailable, context.DeadlineExceeded), blob.ErrorKindCanceled},
		{errors.New("disk on fire"), blob.ErrorKindOther},
	}
	for _, tt := range tests {
		if got := blob.ErrorKind(tt.err); got != tt.want {
			t.Errorf("ErrorKind(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
