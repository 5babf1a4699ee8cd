package client

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestEditReplacesExactlyAndKeepsTheFilesAttributes(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		req        EditRequest
		want       string // body after; "" with wantCode
		wantN      int
		wantCode   string
		noChange   bool
	}{
		{"one occurrence is replaced", "alpha beta gamma\n", EditRequest{OldString: "beta", NewString: "BETA"}, "alpha BETA gamma\n", 1, "", false},
		{"replace-all replaces every occurrence", "a-a-a", EditRequest{OldString: "a", NewString: "bb", ReplaceAll: true}, "bb-bb-bb", 3, "", false},
		{"two occurrences without replace-all are ambiguous", "a-a", EditRequest{OldString: "a", NewString: "b"}, "", 0, CodeAmbiguousEdit, false},
		{"no occurrence is NoMatch", "abc", EditRequest{OldString: "z", NewString: "y"}, "", 0, CodeNoMatch, false},
		{"an empty old string is refused", "abc", EditRequest{NewString: "y"}, "", 0, "InvalidArguments", false},
		{"a body that is not UTF-8 is refused", "ab\xffc", EditRequest{OldString: "b", NewString: "y"}, "", 0, CodeInvalidUTF8, false},
		{"an identical result writes nothing", "same", EditRequest{OldString: "am", NewString: "am"}, "same", 1, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeServer(t)
			before := mustPut(t, c, "a", "w", "scripts/run.sh", tt.body, PutOptions{ContentType: "text/x-sh", Executable: true})
			res, err := c.Edit(t.Context(), "a", "w", "scripts/run.sh", tt.req)
			if tt.wantCode != "" {
				if e := asError(t, err); e.Code != tt.wantCode {
					t.Fatalf("got %+v, want code %s", e, tt.wantCode)
				}
				if got := f.file("a", "w", "scripts/run.sh"); string(got.data) != tt.body || got.gen != before.Generation {
					t.Fatalf("a failed edit changed the file: %q generation %d", got.data, got.gen)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := f.file("a", "w", "scripts/run.sh")
			if string(got.data) != tt.want || res.Replacements != tt.wantN || res.NoChange != tt.noChange || res.SizeBytes != int64(len(tt.want)) {
				t.Fatalf("after edit: body %q, result %+v; want %q, %d replacements, no_change %t", got.data, res, tt.want, tt.wantN, tt.noChange)
			}
			if tt.noChange != (got.gen == before.Generation) || res.Generation != got.gen {
				t.Errorf("generation %d → %d (result %d), no_change %t", before.Generation, got.gen, res.Generation, tt.noChange)
			}
			if got.contentType != "text/x-sh" || !got.exec {
				t.Errorf("content type %q, executable %t; want both kept", got.contentType, got.exec)
			}
		})
	}
}

func TestEditAmbiguityReportsTheMatches(t *testing.T) {
	_, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "logs/x", "x x x", PutOptions{})
	_, err := c.Edit(t.Context(), "a", "w", "logs/x", EditRequest{OldString: "x", NewString: "y"})
	if e := asError(t, err); e.Details["matches"] != 3 {
		t.Fatalf("details %v, want matches 3", e.Details)
	}
}

// racingWrites makes the fake server change path right after each of its next n GETs of
// it, as a concurrent writer would between Edit's read and its write.
func racingWrites(f *fakeServer, agent, wb, path string, n int) *int {
	gets := new(int)
	inner := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/files/"+path) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		*gets++
		if *gets <= n {
			ff := f.files[f.key(agent, wb, path)]
			f.gen++
			ff.gen = f.gen
			ff.data = append(ff.data, " racer"...)
		}
	})
	return gets
}

func TestEditRereadsAfterAConcurrentWrite(t *testing.T) {
	f, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "logs/x", "hello", PutOptions{})
	gets := racingWrites(f, "a", "w", "logs/x", 2)
	res, err := c.Edit(t.Context(), "a", "w", "logs/x", EditRequest{OldString: "hello", NewString: "bye"})
	if err != nil {
		t.Fatal(err)
	}
	// Both racers' writes are kept: the edit applied to the body it read last.
	if got := string(f.file("a", "w", "logs/x").data); got != "bye racer racer" || *gets != 3 || res.Replacements != 1 {
		t.Fatalf("body %q after %d reads; want %q after 3", got, *gets, "bye racer racer")
	}
}

// quickEditRetry makes Edit's own retries wait nothing, at most attempts times, for the
// rest of the test.
func quickEditRetry(t *testing.T, attempts int) {
	saved := editRetry
	editRetry = RetryPolicy{MaxAttempts: attempts, MaxElapsed: time.Minute}
	t.Cleanup(func() { editRetry = saved })
}

func TestEditWithoutIfMatchGivesUpRetryableConflictAfterItsBound(t *testing.T) {
	quickEditRetry(t, 7)
	f, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "logs/x", "hello", PutOptions{})
	gets := racingWrites(f, "a", "w", "logs/x", 100)
	_, err := c.Edit(t.Context(), "a", "w", "logs/x", EditRequest{OldString: "hello", NewString: "bye"})
	if e := asError(t, err); e.Code != "Conflict" || !e.Retryable || *gets != 7 {
		t.Fatalf("got %+v after %d reads, want a retryable Conflict after 7", e, *gets)
	}
}

func TestEditWithIfMatchNeverRetries(t *testing.T) {
	quickEditRetry(t, 7)
	f, c := newFakeServer(t)
	cur := mustPut(t, c, "a", "w", "logs/x", "hello", PutOptions{})
	// A concurrent write lands between the edit's read and its write: the generation the
	// caller named is gone, so the edit fails once and for all.
	gets := racingWrites(f, "a", "w", "logs/x", 1)
	_, err := c.Edit(t.Context(), "a", "w", "logs/x", EditRequest{OldString: "hello", NewString: "bye", IfMatch: cur.Generation})
	if e := asError(t, err); e.Code != "Conflict" || e.HTTPStatus != http.StatusPreconditionFailed || e.Retryable || *gets != 1 {
		t.Fatalf("got %+v after %d reads, want a 412 Conflict, not retryable, after one read", e, *gets)
	}
	// A generation that is not the current one fails without writing.
	now := f.file("a", "w", "logs/x")
	_, err = c.Edit(t.Context(), "a", "w", "logs/x", EditRequest{OldString: "hello", NewString: "bye", IfMatch: cur.Generation})
	if e := asError(t, err); e.Code != "Conflict" || e.Retryable || e.Details["current_generation"] != float64(now.gen) {
		t.Fatalf("a stale IfMatch: %+v", e)
	}
	if after := f.file("a", "w", "logs/x"); after.gen != now.gen || string(after.data) != string(now.data) {
		t.Fatalf("a stale IfMatch wrote: %q generation %d", after.data, after.gen)
	}
	// The current generation edits.
	if res, err := c.Edit(t.Context(), "a", "w", "logs/x", EditRequest{OldString: "hello", NewString: "bye", IfMatch: now.gen}); err != nil || res.Generation <= now.gen {
		t.Fatalf("edit at the current generation: %+v %v", res, err)
	}
}

func TestEditRefusesAResultOverTheBound(t *testing.T) {
	f, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "logs/x", strings.Repeat("ab", 1000), PutOptions{})
	_, err := c.Edit(t.Context(), "a", "w", "logs/x", EditRequest{OldString: "a", NewString: strings.Repeat("z", 5000), ReplaceAll: true})
	if e := asError(t, err); e.Code != "PayloadTooLarge" {
		t.Fatalf("got %+v, want PayloadTooLarge", e)
	}
	if f.countRequests(http.MethodPut) != 1 {
		t.Error("the oversized result was written")
	}
}
