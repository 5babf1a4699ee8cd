package cache

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	hits, misses, served, filled, evictions, corrupt, fillErrors prometheus.Counter
	bytes, entries                                               prometheus.Gauge
}

func newMetrics() *metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "cache", Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "cache", Name: name, Help: help})
	}
	return &metrics{
		hits:       counter("hits_total", "Segment reads served from the local segment cache."),
		misses:     counter("misses_total", "Segment reads the local segment cache could not serve (not cached, being filled, or failing its check)."),
		served:     counter("served_bytes_total", "Bytes served from the local segment cache."),
		filled:     counter("filled_bytes_total", "Bytes written into the local segment cache (on read and on write)."),
		evictions:  counter("evictions_total", "Entries evicted from the local segment cache to stay within its size bound."),
		corrupt:    counter("corrupt_total", "Cached files that failed verification against their digest and were dropped (refetched from the object store)."),
		fillErrors: counter("fill_errors_total", "Fills of the local segment cache that failed (the read or write that caused them went on)."),
		bytes:      gauge("bytes", "Bytes held by the local segment cache (its bound is --cache-max-bytes)."),
		entries:    gauge("entries", "Blobs held by the local segment cache."),
	}
}

// Register registers the cache's metrics (cairn_cache_*) on reg.
func (c *Cache) Register(reg prometheus.Registerer) error {
	for _, col := range []prometheus.Collector{c.m.hits, c.m.misses, c.m.served, c.m.filled, c.m.evictions, c.m.corrupt,
		c.m.fillErrors, c.m.bytes, c.m.entries} {
		if err := reg.Register(col); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return fmt.Errorf("cache: metrics: a cache is registered on this registry already: %w", err)
			}
			return fmt.Errorf("cache: metrics: %w", err)
		}
	}
	c.mu.Lock()
	c.syncGaugesLocked()
	c.mu.Unlock()
	return nil
}
