//go:build linux

package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestStatusBytesReadsAFieldInKiB(t *testing.T) {
	status := "Name:\tcairn\nVmPeak:\t  3060 kB\nVmHWM:\t    1756 kB\nVmRSS:\t    1700 kB\nThreads:\t4\nBad:\t12 pages\n"
	for _, tc := range []struct {
		field   string
		want    int64
		wantErr bool
	}{
		{"VmRSS", 1700 << 10, false},
		{"VmHWM", 1756 << 10, false},
		{"VmPeak", 3060 << 10, false},
		{"VmSwap", 0, true},  // missing
		{"Threads", 0, true}, // no unit
		{"Bad", 0, true},     // not kB
		{"VmR", 0, true},     // a prefix of a field is not the field
	} {
		t.Run(tc.field, func(t *testing.T) {
			got, err := statusBytes(status, tc.field)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("statusBytes(%s) = %d, %v; want %d, error %v", tc.field, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestProcMemoryReadsThisProcess(t *testing.T) {
	rss, hwm, err := procMemory(os.Getpid())
	if err != nil || rss <= 0 || hwm < rss {
		t.Errorf("procMemory(self) = %d, %d, %v; want 0 < rss <= hwm", rss, hwm, err)
	}
	if _, _, err := procMemory(-1); err == nil {
		t.Error("procMemory of no process succeeded")
	}
}

func TestRSSSamplerKeepsThePeak(t *testing.T) {
	s := startRSSSampler(os.Getpid())
	peak, samples, err := s.finish()
	if err != nil || peak <= 0 || samples < 1 {
		t.Errorf("sampler of self = peak %d, %d samples, %v", peak, samples, err)
	}
	s = startRSSSampler(-1)
	if _, _, err := s.finish(); err == nil {
		t.Error("sampler of no process reported no error")
	}
}

func TestPeakIsVmHWMOnlyWhenItWasReset(t *testing.T) {
	r := &rssResult{sampledPeak: 100 << 20, hwm: 120 << 20, hwmReset: true}
	if got := r.peak(); got != 120<<20 {
		t.Errorf("peak with a reset VmHWM = %d, want VmHWM", got)
	}
	r.hwmReset = false
	if got := r.peak(); got != 100<<20 {
		t.Errorf("peak without a reset = %d, want the sampled peak (VmHWM counts since the start)", got)
	}
}

func TestRenderRSSNamesThroughputAndTheTarget(t *testing.T) {
	e := &env{rss: &rssResult{bodyBytes: 2 << 30, put: 8 * time.Second, get: 4 * time.Second, before: 30 << 20,
		sampledPeak: 180 << 20, samples: 120, hwm: 190 << 20, hwmReset: true, afterJobs: 340 << 20}}
	containsAll(t, "large-body section", rendered(e.renderRSS),
		"## Large body: 2 GiB PUT and GET, server memory",
		"| PUT | 8.0 s (256 MiB/s) |",
		"| GET | 4.0 s (512 MiB/s) |",
		"| server VmRSS before the PUT | 30 MiB |",
		"| server VmRSS, highest of 120 samples | 180 MiB |",
		"| server VmHWM after the GET (reset to the RSS before the PUT) | 190 MiB |",
		"the same node's VmRSS was 340 MiB.",
	)
	if got, want := e.rssTarget(), "| server RSS during a 2 GiB PUT+GET (MinIO-backed node): < 300 MiB | peak 190 MiB (VmHWM; PUT 256 MiB/s, GET 512 MiB/s) | meets |\n"; got != want {
		t.Errorf("target row = %q, want %q", got, want)
	}
	e.rss.hwm, e.rss.hwmReset = 900<<20, false
	if got := e.rssTarget(); !strings.Contains(got, "peak 180 MiB (sampled VmRSS;") || !strings.Contains(got, "| meets |") {
		t.Errorf("target row without a VmHWM reset = %q, want the sampled peak", got)
	}
	e.rss.sampledPeak = 301 << 20
	if got := e.rssTarget(); !strings.Contains(got, "**misses**") {
		t.Errorf("target row at 301 MiB = %q, want a miss", got)
	}
	e.rss = nil
	if got := e.rssTarget(); got != "" {
		t.Errorf("target row without the phase = %q, want none", got)
	}
}
