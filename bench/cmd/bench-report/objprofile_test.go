//go:build linux

package main

import (
	"strings"
	"testing"
)

// A `go tool pprof -top -cum` of a 64 MiB put, cut down.
const putTopCum = `Type: cpu
Duration: 8.01s, Total samples = 5.24s (65.39%)
Showing nodes accounting for 4.38s, 83.59% of 5.24s total
Dropped 63 nodes (cum <= 0.03s)
Showing top 60 nodes out of 89
      flat  flat%   sum%        cum   cum%
         0     0%     0%      3.01s 57.44%  net/http.(*conn).serve
     0.01s  0.19%  0.19%      2.75s 52.48%  crypto/internal/fips140/sha256.(*Digest).Write
     0.01s  0.19%  0.38%      2.74s 52.29%  crypto/internal/fips140/sha256.block
     2.73s 52.10% 52.48%      2.73s 52.10%  crypto/internal/fips140/sha256.blockSHANI
         0     0% 52.48%      1.55s 29.58%  github.com/cairnstore/cairn/blob.(*Splitter).Next
         0     0% 52.48%      1.28s 24.43%  github.com/cairnstore/cairn/blob.DigestOf (inline)
         0     0% 83.59%      0.71s 13.55%  syscall.Syscall
         0     0% 83.59%      0.42s  8.02%  syscall.read
     0.01s  0.19% 97.33%      0.36s  6.87%  hash/crc32.archUpdateCastagnoli
     0.35s  6.68% 89.89%      0.35s  6.68%  hash/crc32.castagnoliSSE42Triple
     0.17s  3.24% 96.37%      0.17s  3.24%  runtime.memmove`

func TestCumulativeSharesTakeEachGroupsOutermostFunction(t *testing.T) {
	roots := []profileRoot{
		exactRoot("net/http.(*conn).serve", "requests"),
		objectRoot(t, "SHA-256 (sha256.block, every caller)"),                   // a pattern: its first match, (*Digest).Write, holds the others
		exactRoot("github.com/cairnstore/cairn/blob.DigestOf", "chunk digests"), // "(inline)" follows the name
		objectRoot(t, "CRC32C checksums of the uploads (hash/crc32)"),
		exactRoot("runtime.gcBgMarkWorker", "GC"),
		exactRoot("syscall", "a prefix of a name"),
	}
	shares, absent := cumulativeShares(putTopCum, roots)
	want := []string{"requests 57.44%", "SHA-256 (sha256.block, every caller) 52.48%", "chunk digests 24.43%", "CRC32C checksums of the uploads (hash/crc32) 6.87%"}
	if strings.Join(shares, "|") != strings.Join(want, "|") {
		t.Errorf("shares = %q, want %q", shares, want)
	}
	if strings.Join(absent, "|") != "GC|a prefix of a name" {
		t.Errorf("absent = %q, want GC and the prefix", absent)
	}
}

func TestObjectBreakdownNamesSharesAndWhatIsBelowTheCut(t *testing.T) {
	got := objectBreakdown(&profileResult{topCum: putTopCum}, putRoots)
	containsAll(t, "breakdown", got,
		"Cumulative shares of the server's CPU samples: request handling (net/http.(*conn).serve, everything in a request's goroutine) 57.44%, socket reads (syscall.read) 8.02%, content-defined chunking (blob.(*Splitter).Next) 29.58%, SHA-256 (sha256.block, every caller) 52.48%, the chunks' content addresses (blob.DigestOf, part of SHA-256) 24.43%,",
		"CRC32C checksums of the uploads (hash/crc32) 6.87%, memmove 3.24%.",
		"Below pprof's cut (each at most 0.03s): BLAKE3 (zeebo/blake3, every caller), the compressibility probe (blob.worthCompressing), zstd (klauspost/compress), uploads to the MinIO",
		"the garbage collector's marking (runtime.gcBgMarkWorker).",
	)
	if got := objectBreakdown(&profileResult{}, getRoots); !strings.HasPrefix(got, "Below pprof's cut (each under 0.5% of the samples): request handling") {
		t.Errorf("breakdown of an empty profile = %q, want every group below the cut", got)
	}
}

func objectRoot(t *testing.T, what string) profileRoot {
	t.Helper()
	for _, r := range append(putRoots, getRoots...) {
		if r.what == what {
			return r
		}
	}
	t.Fatalf("no object root %q", what)
	return profileRoot{}
}
