//go:build linux

package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/cairnstore/cairn/bench"
)

// The large-object profiles: where the MinIO-backed node's CPU goes on the 64 MiB object
// path, a put and a cold get, each its own `cairn bench` run without baselines.
const (
	// objectProfileWarmup comes before each profile: it covers the get's setup (one
	// 64 MiB file written) and the first operations of either.
	objectProfileWarmup = 4 * time.Second
	// pprofBreakdownNodes is how many functions by cumulative time the breakdown reads
	// (pprof drops those under 0.5% of the samples anyway).
	pprofBreakdownNodes = 400
)

// objectProfileJobs are the profiled runs on the MinIO-backed node: a 64 MiB put, a
// 64 MiB get from the node without a segment cache (every read goes to the MinIO), and a
// 1 MiB put at 16 clients (many requests, each one segment). The get reads one file, so
// that its setup ends well within the warmup.
func objectProfileJobs() []*job {
	d := (objectProfileWarmup + profileSeconds*time.Second + profileTail).String()
	profiled := func(id, what, size, clients string, roots []profileRoot, args ...string) *job {
		return &job{id: id, what: what, node: nodeS3, roots: roots, args: append(args, "--size", size, "--concurrency", clients, "--duration", d)}
	}
	return []*job{
		profiled("object-put-64m-profile", "object-put 64 MiB, 2 clients", "64MiB", "2", putRoots, "--scenario", "object-put"),
		profiled("object-get-64m-profile", "object-get 64 MiB, 2 clients, cold", "64MiB", "2", getRoots, "--scenario", "object-get", "--files", "1"),
		profiled("object-put-1m-c16-profile", "object-put 1 MiB, 16 clients", "1MiB", "16", putRoots, "--scenario", "object-put"),
	}
}

// profileObjects runs objectProfileJobs, profiling the MinIO-backed node during each.
func (e *env) profileObjects(ctx context.Context) error {
	if e.rss != nil {
		// What the one-node object phases left in the node's resident set, for the
		// large-body section; the phase does without it if /proc does not answer.
		e.rss.afterJobs, _, _ = procMemory(e.s3Server.pid)
	}
	for _, j := range objectProfileJobs() {
		p, err := e.profileJob(ctx, j, e.s3Server, objectProfileWarmup, pprofBreakdownNodes)
		if err != nil {
			return err
		}
		j.profile = p
		e.objectProfiles = append(e.objectProfiles, j)
	}
	return nil
}

// Groups of the large-object path whose cumulative shares the breakdowns report (roots of
// a profiled job), in the order a body meets them. A group absent from a profile is named
// as such: below pprof's cut, which says as much as a share.
var (
	rootRequests = exactRoot("net/http.(*conn).serve", "request handling (net/http.(*conn).serve, everything in a request's goroutine)")
	rootSHA256   = profileRoot{regexp.MustCompile(`sha256\.(\(\*Digest\)\.Write|block)$`), "SHA-256 (sha256.block, every caller)"}
	rootBLAKE3   = profileRoot{regexp.MustCompile(`^github\.com/zeebo/blake3`), "BLAKE3 (zeebo/blake3, every caller)"}
	rootMinIO    = profileRoot{regexp.MustCompile(`^github\.com/minio/minio-go/v7\.`), "minio-go"}
	rootSigning  = profileRoot{regexp.MustCompile(`^github\.com/minio/minio-go/v7/pkg/signer\.`), "minio-go's request signing"}
	rootZstd     = profileRoot{regexp.MustCompile(`^github\.com/klauspost/compress/`), "zstd (klauspost/compress)"}
	rootRuntime  = []profileRoot{
		exactRoot("runtime.memmove", "memmove"),
		exactRoot("runtime.memclrNoHeapPointers", "memclr"),
		exactRoot("runtime.mallocgc", "allocation (runtime.mallocgc)"),
		exactRoot("runtime.gcBgMarkWorker", "the garbage collector's marking (runtime.gcBgMarkWorker)"),
	}

	// putRoots follow a body from the client's socket through the chunker and the
	// hashes (the content address, and the BLAKE3 reads verify by) to the MinIO.
	putRoots = append([]profileRoot{
		rootRequests,
		exactRoot("syscall.read", "socket reads (syscall.read)"),
		exactRoot("github.com/cairnstore/cairn/blob.(*Splitter).Next", "content-defined chunking (blob.(*Splitter).Next)"),
		rootSHA256,
		rootBLAKE3,
		exactRoot("github.com/cairnstore/cairn/blob.DigestOf", "the chunks' content addresses (blob.DigestOf, part of SHA-256)"),
		exactRoot("github.com/cairnstore/cairn/blob.worthCompressing", "the compressibility probe (blob.worthCompressing)"),
		rootZstd,
		exactRoot("github.com/cairnstore/cairn/blob/s3.(*Store).Put", "uploads to the MinIO (blob/s3.(*Store).Put)"),
		{regexp.MustCompile(`^hash/crc32\.`), "CRC32C checksums of the uploads (hash/crc32)"},
		rootMinIO,
		rootSigning,
		exactRoot("syscall.write", "socket writes (syscall.write)"),
	}, rootRuntime...)
	// getRoots follow a body from the MinIO through the segment checks to the client.
	getRoots = append([]profileRoot{
		rootRequests,
		exactRoot("github.com/cairnstore/cairn/blob.ReadVerified", "reading and verifying segments (blob.ReadVerified)"),
		rootBLAKE3,
		rootSHA256,
		rootZstd,
		rootMinIO,
		rootSigning,
		exactRoot("syscall.read", "socket reads (syscall.read)"),
		exactRoot("syscall.write", "socket writes (syscall.write)"),
	}, rootRuntime...)
)

// objectBreakdown is the paragraph on where p's samples went by roots.
func objectBreakdown(p *profileResult, roots []profileRoot) string {
	shares, absent := cumulativeShares(p.topCum, roots)
	var b strings.Builder
	if len(shares) > 0 {
		fmt.Fprintf(&b, "Cumulative shares of the server's CPU samples: %s. ", strings.Join(shares, ", "))
		b.WriteString("A group counts every sample with one of its functions on the stack, so groups overlap " +
			"(request handling holds what runs in the request's goroutine, SHA-256 what hashes under the chunker or the reader).")
	}
	if len(absent) > 0 {
		fmt.Fprintf(&b, " Below pprof's cut (%s): %s.", pprofCut(p.topCum), strings.Join(absent, ", "))
	}
	return strings.TrimSpace(b.String())
}

// pprofCut is the threshold of pprof's "Dropped N nodes (cum <= 0.03s)" line, or pprof's
// default node fraction (0.5% of the samples) when there is none.
func pprofCut(top string) string {
	for line := range strings.Lines(top) {
		if _, rest, ok := strings.Cut(line, "nodes (cum <= "); ok {
			return "each at most " + strings.TrimSuffix(strings.TrimSpace(rest), ")")
		}
	}
	return "each under 0.5% of the samples"
}

// renderObjectProfiles writes a section per profiled object run.
func (e *env) renderObjectProfiles(w func(string, ...any)) {
	for _, j := range e.objectProfiles {
		p, c := j.profile, j.report.Cairn
		w("### Where the CPU goes: %s\n\n", j.what)
		w("```sh\n%s\n```\n\n", p.command)
		w("Against `$CAIRN_S3`, without baselines: %s ops/s (%.0f MiB/s), p50 %s, p99 %s. %s\n\n", bench.FormatRate(c.AchievedRate),
			c.AchievedRate*float64(j.report.Params.SizeBytes)/(1<<20), bench.FormatMicros(c.Latency.P50Micros), bench.FormatMicros(c.Latency.P99Micros), accounting(p))
		e.renderTop(w, p, "in the middle of the run")
		w("%s\n\n", objectBreakdown(p, j.roots))
	}
}
