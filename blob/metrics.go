package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Error kinds of the cairn_blob_errors_total "kind" label, from the error a call returned.
const (
	ErrorKindNotFound       = "not_found"
	ErrorKindUnavailable    = "unavailable"
	ErrorKindCorrupt        = "corrupt"
	ErrorKindDigestMismatch = "digest_mismatch"
	ErrorKindInvalidKey     = "invalid_key"
	ErrorKindRange          = "range"
	ErrorKindCanceled       = "canceled"
	ErrorKindOther          = "other"
)

// metrics are the collectors of instrumented stores. Several stores instrumented on one
// registry share them, so their counts add up.
type metrics struct {
	putObjects     prometheus.Counter
	putBytes       prometheus.Counter
	putStoredBytes prometheus.Counter
	dedupeHits     prometheus.Counter
	dedupeBytes    prometheus.Counter
	getObjects     prometheus.Counter
	getBytes       prometheus.Counter
	deletedObjects prometheus.Counter
	deletedBytes   prometheus.Counter
	errors         *prometheus.CounterVec
	latency        *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "blob", Name: name, Help: help})
	}
	m := &metrics{
		putObjects:     counter("put_objects_total", "Blobs created by Put (Puts that found the blob already stored are dedupe hits)."),
		putBytes:       counter("put_bytes_total", "Uncompressed bytes of the blobs created by Put."),
		putStoredBytes: counter("put_stored_bytes_total", "Bytes written to the backend by Put: the payload as stored, compressed when zstd pays."),
		dedupeHits:     counter("put_dedupe_hits_total", "Puts that found the blob already stored and wrote nothing (put-if-absent, docs/architecture.md#blob-storage-and-garbage-collection)."),
		dedupeBytes:    counter("put_dedupe_bytes_total", "Uncompressed bytes of the Puts that were dedupe hits: bytes not uploaded."),
		getObjects:     counter("get_objects_total", "Gets that opened a blob for reading."),
		getBytes:       counter("get_bytes_total", "Uncompressed bytes delivered to callers by readers from Get."),
		deletedObjects: counter("deleted_objects_total", "Blobs removed by Delete (blobs that were present just before)."),
		deletedBytes:   counter("deleted_bytes_total", "Stored bytes of the blobs removed by Delete."),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "blob", Name: "errors_total",
			Help: "Failed blob store calls by operation (put, get, read, stat, delete, list) and kind (not_found, unavailable, corrupt, digest_mismatch, invalid_key, range, canceled, other)."},
			[]string{"op", "kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "cairn", Subsystem: "blob", Name: "operation_duration_seconds",
			Help:    "Blob store calls by operation (put, get until the reader is open, stat, delete, list) and backend (dir, s3, mem), failed ones included.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 20)}, []string{"op", "backend"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []*prometheus.Counter{&m.putObjects, &m.putBytes, &m.putStoredBytes, &m.dedupeHits, &m.dedupeBytes,
		&m.getObjects, &m.getBytes, &m.deletedObjects, &m.deletedBytes} {
		existing, err := register(reg, *c)
		if err != nil {
			return nil, err
		}
		ec, ok := existing.(prometheus.Counter)
		if !ok {
			return nil, fmt.Errorf("blob: metrics: a different collector is registered as %T", existing)
		}
		*c = ec
	}
	existing, err := register(reg, m.errors)
	if err != nil {
		return nil, err
	}
	ev, ok := existing.(*prometheus.CounterVec)
	if !ok {
		return nil, fmt.Errorf("blob: metrics: a different collector is registered as %T", existing)
	}
	m.errors = ev
	if existing, err = register(reg, m.latency); err != nil {
		return nil, err
	}
	hv, ok := existing.(*prometheus.HistogramVec)
	if !ok {
		return nil, fmt.Errorf("blob: metrics: a different collector is registered as %T", existing)
	}
	m.latency = hv
	return m, nil
}

// register registers c, or returns the equal collector registered before.
func register(reg prometheus.Registerer, c prometheus.Collector) (prometheus.Collector, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		return are.ExistingCollector, nil
	}
	return nil, fmt.Errorf("blob: metrics: %w", err)
}

// fail counts a failed call of op.
func (m *metrics) fail(op string, err error) {
	m.errors.WithLabelValues(op, ErrorKind(err)).Inc()
}

// ErrorKind classifies an error of a Store call for metrics and logs: one of the
// ErrorKind* constants. A cancelled or expired context wins over what the backend made of
// it.
func ErrorKind(err error) string {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ErrorKindCanceled
	case errors.Is(err, ErrNotFound):
		return ErrorKindNotFound
	case errors.Is(err, ErrCorrupt):
		return ErrorKindCorrupt
	case errors.Is(err, ErrDigestMismatch):
		return ErrorKindDigestMismatch
	case errors.Is(err, ErrInvalidKey):
		return ErrorKindInvalidKey
	case errors.Is(err, ErrRange):
		return ErrorKindRange
	case errors.Is(err, ErrUnavailable):
		return ErrorKindUnavailable
	default:
		return ErrorKindOther
	}
}

// Instrument returns a Store that forwards every call to s and counts what it did on reg
// (Prometheus, namespace "cairn", subsystem "blob"):
//
//   - cairn_blob_put_objects_total, _put_bytes_total (uncompressed) and
//     _put_stored_bytes_total (as stored): blobs a Put created;
//   - cairn_blob_put_dedupe_hits_total and _put_dedupe_bytes_total: Puts that found the
//     blob already stored (Created=false) and uploaded nothing;
//   - cairn_blob_get_objects_total and _get_bytes_total: Gets opened and the bytes their
//     readers delivered;
//   - cairn_blob_deleted_objects_total and _deleted_bytes_total (as stored): blobs Delete
//     removed;
//   - cairn_blob_errors_total{op, kind}: failed calls by operation ("put", "get", "stat",
//     "delete", "list", and "read" for a reader of Get whose Read failed) and ErrorKind.
//     An error that List's fn returned is the caller's, not the store's, and is not
//     counted;
//   - cairn_blob_operation_duration_seconds{op, backend}: the time of every call, failed
//     ones included, by operation ("put", "get" until the reader is open, "stat", "delete"
//     without its Stat, "list" with the caller's fn) and backend (the name given, such as
//     "dir", "s3" or "mem").
//
// The wrapper returns every result and error of s unchanged, so it passes blob/blobtest
// whenever s does. To count the bytes a Delete removes it Stats the blob first: one extra
// metadata request (a HEAD on s3) per Delete, which only the garbage collector calls. A
// Stat that fails does not stop the Delete.
//
// Several stores may be instrumented on one registry; they share the counters. A nil reg
// counts without registering. backend labels the latencies: a short, fixed name of the
// kind of store (a bounded set). Instrument fails only when reg holds a different
// collector under one of these names.
func Instrument(s Store, reg prometheus.Registerer, backend string) (Store, error) {
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	op := func(name string) prometheus.Observer { return m.latency.WithLabelValues(name, backend) }
	return &instrumented{s: s, m: m, put: op("put"), get: op("get"), stat: op("stat"), del: op("delete"), list: op("list")}, nil
}

// instrumented is the Store that Instrument returns.
type instrumented struct {
	s                         Store
	m                         *metrics
	put, get, stat, del, list prometheus.Observer // latency of each operation on this backend
}

// since observes the seconds since start on o.
func since(o prometheus.Observer, start time.Time) { o.Observe(time.Since(start).Seconds()) }

// Unwrap returns the instrumented Store.
func (i *instrumented) Unwrap() Store { return i.s }

func (i *instrumented) Put(ctx context.Context, key Key, data Hashed) (PutResult, error) {
	start := time.Now()
	res, err := i.s.Put(ctx, key, data)
	since(i.put, start)
	switch {
	case err != nil:
		i.m.fail("put", err)
	case res.Created:
		i.m.putObjects.Inc()
		i.m.putBytes.Add(float64(data.Len()))
		i.m.putStoredBytes.Add(float64(res.StoredBytes))
	default:
		i.m.dedupeHits.Inc()
		i.m.dedupeBytes.Add(float64(data.Len()))
	}
	return res, err
}

func (i *instrumented) Get(ctx context.Context, key Key, offset, length int64) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := i.s.Get(ctx, key, offset, length)
	since(i.get, start)
	if err != nil {
		i.m.fail("get", err)
		return nil, err
	}
	i.m.getObjects.Inc()
	return &countingReader{rc: rc, m: i.m}, nil
}

func (i *instrumented) Stat(ctx context.Context, key Key) (Info, error) {
	start := time.Now()
	info, err := i.s.Stat(ctx, key)
	since(i.stat, start)
	if err != nil {
		i.m.fail("stat", err)
	}
	return info, err
}

func (i *instrumented) Delete(ctx context.Context, key Key) error {
	info, serr := i.s.Stat(ctx, key)
	start := time.Now()
	err := i.s.Delete(ctx, key)
	since(i.del, start)
	switch {
	case err != nil:
		i.m.fail("delete", err)
	case serr == nil:
		i.m.deletedObjects.Inc()
		i.m.deletedBytes.Add(float64(info.StoredBytes))
	case errors.Is(serr, ErrCorrupt):
		// Present but unreadable: removed, size unknown.
		i.m.deletedObjects.Inc()
	}
	return err
}

func (i *instrumented) List(ctx context.Context, root string, fn func(Key, Info) error) error {
	var fnErr error
	start := time.Now()
	defer since(i.list, start)
	err := i.s.List(ctx, root, func(k Key, info Info) error {
		fnErr = fn(k, info)
		return fnErr
	})
	if err != nil && (fnErr == nil || err != fnErr) {
		i.m.fail("list", err)
	}
	return err
}

func (i *instrumented) Close() error { return i.s.Close() }

// countingReader counts the bytes a reader from Get delivers and its first failure.
type countingReader struct {
	rc     io.ReadCloser
	m      *metrics
	failed bool
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if n > 0 {
		r.m.getBytes.Add(float64(n))
	}
	if err != nil && err != io.EOF && !r.failed {
		r.failed = true
		r.m.fail("read", err)
	}
	return n, err
}

func (r *countingReader) Close() error { return r.rc.Close() }
