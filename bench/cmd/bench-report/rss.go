//go:build linux

package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/bench"
)

// The large-body memory phase: one rssBodyBytes PUT through the MinIO-backed node, then
// its GET, while the server's resident set is sampled from /proc. The body is generated
// as it streams and the answer is hashed and dropped as it arrives: neither side of the
// report holds it.
const (
	rssBodyBytes = 2 << 30
	// rssTargetBytes is the target: the server's RSS stays under it during the PUT and
	// the GET.
	rssTargetBytes    = 300 << 20
	rssSampleInterval = 100 * time.Millisecond
	// rssTransferTimeout bounds the PUT and the GET each (2 GiB at 10 MiB/s takes 205 s).
	rssTransferTimeout = 5 * time.Minute
	rssWorkbench       = "bench-report-rss"
	rssPath            = "input/large/body.bin"
)

// rssResult is what the large-body phase measured. Sizes are bytes.
type rssResult struct {
	bodyBytes int64
	put, get  time.Duration
	// before is the server's VmRSS before the PUT; sampledPeak the highest of samples
	// VmRSS readings, one every rssSampleInterval during the PUT and the GET.
	before, sampledPeak int64
	samples             int
	// hwm is the server's VmHWM after the GET: its peak RSS since hwmReset set it to the
	// RSS of the moment before the PUT (clear_refs 5), or since it started when the
	// reset failed.
	hwm      int64
	hwmReset bool
	// afterJobs is the node's VmRSS after the one-node object phases, which run after
	// this one (0 when not read).
	afterJobs int64
	digest    string // "sha256:<hex>" of the body, as the PUT answered and the GET checked
}

// peak is the highest RSS the phase saw: VmHWM when it was reset before the PUT (it
// misses nothing between samples), the sampled peak otherwise.
func (r *rssResult) peak() int64 {
	if r.hwmReset {
		return max(r.hwm, r.sampledPeak)
	}
	return r.sampledPeak
}

// statusBytes returns field (VmRSS, VmHWM, …) of a /proc/PID/status text, in bytes.
func statusBytes(status, field string) (int64, error) {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("status field %s: %q, want a number of kB", field, strings.TrimSpace(rest))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("status field %s: %q, want a number of kB", field, f[0])
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("status has no field %s", field)
}

// procMemory reads pid's VmRSS and VmHWM, in bytes.
func procMemory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	rss, err1 := statusBytes(string(b), "VmRSS")
	hwm, err2 := statusBytes(string(b), "VmHWM")
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return rss, hwm, nil
}

// resetHWM sets pid's VmHWM to its current RSS (proc(5), clear_refs).
func resetHWM(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// rssSampler reads a process's VmRSS every rssSampleInterval until stopped.
type rssSampler struct {
	pid     int
	peak    int64
	samples int
	err     error
	stop    chan struct{}
	done    chan struct{}
}

func startRSSSampler(pid int) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *rssSampler) run() {
	defer close(s.done)
	t := time.NewTicker(rssSampleInterval)
	defer t.Stop()
	for {
		rss, _, err := procMemory(s.pid)
		if err != nil {
			s.err = err
			return
		}
		s.peak, s.samples = max(s.peak, rss), s.samples+1
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// finish stops the sampler and returns its peak, its count of samples and the error that
// stopped it early, if one did.
func (s *rssSampler) finish() (peak int64, samples int, err error) {
	close(s.stop)
	<-s.done
	return s.peak, s.samples, s.err
}

// measureRSS runs the large-body phase against the MinIO-backed node and deletes the
// file afterwards. It fails when the GET does not return the PUT's bytes.
func (e *env) measureRSS(ctx context.Context) (*rssResult, error) {
	pid := e.s3Server.pid
	c := client.New(e.s3URL, &http.Client{})
	agent := bench.DefaultConfig().Agent
	res := &rssResult{bodyBytes: rssBodyBytes}
	say("large body: PUT and GET of %d MiB through %s, sampling the server's RSS", rssBodyBytes>>20, phCairnS3)
	err := withTimeout(ctx, readyTimeout, func(ctx context.Context) error {
		_, err := c.CreateWorkbench(ctx, agent, rssWorkbench)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("large body: create workbench: %w", err)
	}
	if res.before, _, err = procMemory(pid); err != nil {
		return nil, err
	}
	res.hwmReset = resetHWM(pid) == nil
	sampler := startRSSSampler(pid)
	err = e.putGetLarge(ctx, c, agent, res)
	peak, samples, serr := sampler.finish()
	if err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, fmt.Errorf("large body: RSS sampling: %w", serr)
	}
	res.sampledPeak, res.samples = peak, samples
	if _, res.hwm, err = procMemory(pid); err != nil {
		return nil, err
	}
	err = withTimeout(ctx, readyTimeout, func(ctx context.Context) error {
		_, err := c.Delete(ctx, agent, rssWorkbench, rssPath, client.DeleteOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("large body: delete %s: %w", rssPath, err)
	}
	return res, nil
}

// putGetLarge PUTs the generated body, checks the answer's size and digest against what
// was sent, then GETs it back and checks its length and digest; it records both durations
// and the digest in res.
func (e *env) putGetLarge(ctx context.Context, c *client.Client, agent string, res *rssResult) error {
	sent := sha256.New()
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(e.started.UnixNano()))
	body := io.TeeReader(io.LimitReader(rand.NewChaCha8(seed), res.bodyBytes), sent)
	start := time.Now()
	err := withTimeout(ctx, rssTransferTimeout, func(ctx context.Context) error {
		wr, err := c.PutFile(ctx, agent, rssWorkbench, rssPath, body, client.PutOptions{ContentType: "application/octet-stream", Size: res.bodyBytes})
		if err != nil {
			return err
		}
		res.digest = digestURI(sent)
		if wr.SizeBytes != res.bodyBytes || wr.DigestURI != res.digest {
			return fmt.Errorf("stored %d bytes with digest %s, want %d with %s", wr.SizeBytes, wr.DigestURI, res.bodyBytes, res.digest)
		}
		return nil
	})
	res.put = time.Since(start)
	if err != nil {
		return fmt.Errorf("large body: PUT %s: %w", rssPath, err)
	}
	start = time.Now()
	err = withTimeout(ctx, rssTransferTimeout, func(ctx context.Context) error {
		rc, info, err := c.GetFile(ctx, agent, rssWorkbench, rssPath, client.GetOptions{})
		if err != nil {
			return err
		}
		defer rc.Close()
		got := sha256.New()
		n, err := io.Copy(got, rc)
		if err != nil {
			return err
		}
		if n != res.bodyBytes || digestURI(got) != res.digest || (info.Digest != "" && info.Digest != res.digest) {
			return fmt.Errorf("read %d bytes with digest %s (header %q), want %d with %s", n, digestURI(got), info.Digest, res.bodyBytes, res.digest)
		}
		return nil
	})
	res.get = time.Since(start)
	if err != nil {
		return fmt.Errorf("large body: GET %s: %w", rssPath, err)
	}
	return nil
}

func digestURI(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// withTimeout runs f with ctx bounded by d.
func withTimeout(ctx context.Context, d time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return f(ctx)
}

// mibPerSecond is the throughput of n bytes in d.
func mibPerSecond(n int64, d time.Duration) float64 {
	return float64(n) / (1 << 20) / max(d.Seconds(), 1e-9)
}

// renderRSS writes the large-body section.
func (e *env) renderRSS(w func(string, ...any)) {
	r := e.rss
	if r == nil {
		return
	}
	w("## Large body: %d GiB PUT and GET, server memory\n\n", r.bodyBytes>>30)
	w("One `PUT %s/v1/agents/%s/workbenches/%s/files/%s` of %d GiB of pseudo-random bytes\n", phCairnS3,
		bench.DefaultConfig().Agent, rssWorkbench, rssPath, r.bodyBytes>>30)
	w("with a known Content-Length, generated as it streams, then a GET of it, hashed and dropped as it arrives (its length\n")
	w("and SHA-256 checked against the PUT's), one after the other, by bench-report itself; the file is deleted\n")
	w("after (its blobs stay in the MinIO until garbage collection's grace has passed).\n")
	w("The server's resident set is read from `/proc/PID/status` every %v during both.\n\n", rssSampleInterval)
	w("| | |\n|---|---:|\n")
	w("| PUT | %.1f s (%.0f MiB/s) |\n", r.put.Seconds(), mibPerSecond(r.bodyBytes, r.put))
	w("| GET | %.1f s (%.0f MiB/s) |\n", r.get.Seconds(), mibPerSecond(r.bodyBytes, r.get))
	w("| server VmRSS before the PUT | %s |\n", fmtMiB(r.before))
	w("| server VmRSS, highest of %d samples | %s |\n", r.samples, fmtMiB(r.sampledPeak))
	if r.hwmReset {
		w("| server VmHWM after the GET (reset to the RSS before the PUT) | %s |\n", fmtMiB(r.hwm))
	} else {
		w("| server VmHWM after the GET (since the server started: the reset failed) | %s |\n", fmtMiB(r.hwm))
	}
	w("\n")
	w("It runs first, on the node before it served anything else, so that its figures are what one large\n")
	w("body costs rather than what earlier phases left in the heap.")
	if r.afterJobs > 0 {
		w(" For comparison, after the one-node object phases above (1 and\n")
		w("64 MiB bodies, up to 4 clients) the same node's VmRSS was %s.", fmtMiB(r.afterJobs))
	}
	w("\n\n")
}

// rssTarget is the targets table's row for the large-body phase, "" without one.
func (e *env) rssTarget() string {
	r := e.rss
	if r == nil {
		return ""
	}
	peak := r.peak()
	how := "VmHWM"
	if !r.hwmReset {
		how = "sampled VmRSS"
	}
	return fmt.Sprintf("| server RSS during a %d GiB PUT+GET (MinIO-backed node): < %s | peak %s (%s; PUT %.0f MiB/s, GET %.0f MiB/s) | %s |\n",
		r.bodyBytes>>30, fmtMiB(rssTargetBytes), fmtMiB(peak), how, mibPerSecond(r.bodyBytes, r.put), mibPerSecond(r.bodyBytes, r.get),
		verdict(peak < rssTargetBytes))
}

// fmtMiB formats n bytes in MiB.
func fmtMiB(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 0, 64) + " MiB"
}
