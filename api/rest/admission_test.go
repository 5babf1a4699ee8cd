package rest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// admissionBudget is the memory budget of the admission tests: a few pages of their
// listings and diffs at once.
const admissionBudget = 16 << 20

// admissionServer is a node with a small memory budget holding wb w1 with 40 proposals
// that each carry 60 KiB of metadata, and a 256 KiB file written twice.
func admissionServer(t *testing.T) (svc *workbench.Service, wb, diff string) {
	t.Helper()
	svc, wb = proposalsServer(t, admissionBudget, 40)
	first := do(t, "PUT", wb+"/files/outputs/big.txt", strings.NewReader(strings.Repeat("a\n", 128<<10)))
	expect(t, first, 201, "")
	expect(t, do(t, "PUT", wb+"/files/outputs/big.txt", strings.NewReader(strings.Repeat("b\n", 128<<10))), 200, "")
	diff = fmt.Sprintf("%s/diff?path=outputs/big.txt&from=generation:%.0f", wb, first.json["generation"])
	return svc, wb, diff
}

// proposalsServer serves a node with a memory budget of budget bytes over REST, holding
// workbench w1 of agent a1 with n proposals that each carry 60 KiB of metadata; it
// answers the workbench's URL.
func proposalsServer(tb testing.TB, budget int64, n int) (*workbench.Service, string) {
	tb.Helper()
	node := workbenchtest.New(tb, workbench.Config{InlineMaxBytes: 4096, QueryBudgetBytes: budget, QueryQueueTimeout: 30 * time.Second})
	svc := node.Service
	srv := serveNode(tb, node)
	if _, err := svc.Writes.Write(tb.Context(), workbench.WriteRequest{Agent: "a1", Workbench: "w1", Path: "outputs/readme.txt",
		Body: strings.NewReader("proposals"), CreateWorkbench: true}); err != nil {
		tb.Fatal(err)
	}
	meta := json.RawMessage(`{"notes":"` + strings.Repeat("m", 60<<10) + `"}`)
	for i := range n {
		text := fmt.Sprintf("plan %d", i)
		if _, err := svc.Review.Propose(tb.Context(), "a1", workbench.ProposeInput{ID: "w1", Path: fmt.Sprintf("outputs/p%03d.txt", i),
			Text: &text, RequestID: fmt.Sprintf("p-%d", i), Metadata: meta}); err != nil {
			tb.Fatalf("propose %d: %v", i, err)
		}
	}
	return svc, srv.URL + "/v1/agents/a1/workbenches/w1"
}

// getJSON is a GET that reports instead of failing the test (it runs in goroutines).
func getJSON(url string) (int, map[string]any, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("status %d: body is not JSON: %.200q", resp.StatusCode, b)
	}
	return resp.StatusCode, m, nil
}

// TestParallelLargeListingsAndDiffsStayInTheMemoryBudget (issue 25 finding 11: 80 parallel
// GET /proposals?limit=1000 from one key took the node to 2.3 GB, twenty 15 MB diffs 435
// MB): 80 parallel proposal listings of limit 1000 and 80 parallel file diffs through REST
// each hold their estimate of the node's memory budget while they answer; the most held
// at once never passes the budget, and every request is answered 200 or 429
// ResourceExhausted, retryable.
func TestParallelLargeListingsAndDiffsStayInTheMemoryBudget(t *testing.T) {
	svc, wb, diff := admissionServer(t)
	for _, tc := range []struct {
		name, url string
		least     int64 // one request's share at least
	}{
		{"proposal listings", wb + "/proposals?limit=1000", 4 * (60 << 10) * 2},
		{"diffs", diff, 8 * (256 << 10) * 2},
	} {
		const parallel = 80
		type answer struct {
			status int
			json   map[string]any
			err    error
		}
		answers := make([]answer, parallel)
		var wg sync.WaitGroup
		for i := range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := &answers[i]
				a.status, a.json, a.err = getJSON(tc.url)
			}()
		}
		wg.Wait()
		ok := 0
		for _, a := range answers {
			switch {
			case a.err != nil:
				t.Errorf("%s: %v", tc.name, a.err)
			case a.status == 200:
				ok++
			case a.status == 429 && a.json["code"] == "ResourceExhausted" && a.json["retryable"] == true:
			default:
				t.Errorf("%s: %d %v %v", tc.name, a.status, a.json["code"], a.json["message"])
			}
		}
		if ok == 0 {
			t.Errorf("%s: none of %d parallel requests was answered", tc.name, parallel)
		}
		// The high-water mark is the most held at once since the node started: the
		// listings run first, so a mark below one listing's share means they were not held.
		peak := svc.AdmissionHighWater()
		if peak > admissionBudget {
			t.Errorf("%s: the requests held %d bytes of the memory budget at once, more than the budget %d", tc.name, peak, admissionBudget)
		}
		if peak < tc.least {
			t.Errorf("%s: high-water mark %d bytes, below one request's share %d: they were not held under the budget", tc.name, peak, tc.least)
		}
	}
}

// TestLargeProposalListingIsCutToAPageShare: a listing whose page would hold more than an
// eighth of the memory budget answers fewer proposals than its limit, truncated with a
// next_cursor, and the cursor pages through every proposal.
func TestLargeProposalListingIsCutToAPageShare(t *testing.T) {
	_, wb, _ := admissionServer(t)
	seen, pages := 0, 0
	url := wb + "/proposals?limit=1000"
	for {
		r := do(t, "GET", url, nil)
		expect(t, r, 200, "")
		items, _ := r.json["proposals"].([]any)
		if len(items) == 0 {
			t.Fatalf("page %d is empty: %v", pages, r.json)
		}
		seen += len(items)
		pages++
		next, _ := r.json["next_cursor"].(string)
		if next == "" {
			if r.json["truncated"] != false {
				t.Errorf("last page truncated %v", r.json["truncated"])
			}
			break
		}
		if r.json["truncated"] != true {
			t.Errorf("page %d with a next_cursor has truncated %v", pages, r.json["truncated"])
		}
		url = wb + "/proposals?limit=1000&cursor=" + next
	}
	if seen != 40 || pages < 2 {
		t.Errorf("%d proposals in %d pages, want 40 in several (a page holds at most %d bytes of a %d-byte budget)", seen, pages, admissionBudget/8, admissionBudget)
	}
}

// TestOnePrincipalHoldsAtMostItsShares: with PrincipalLimits.MaxConcurrentAdmissions 1, a
// principal that holds a share of the memory budget is refused another at once, 429
// ResourceExhausted naming the limit, retryable, while another principal's listing runs;
// once its share is given back its listing runs too.
func TestOnePrincipalHoldsAtMostItsShares(t *testing.T) {
	s := newAttribServer(t, workbench.Config{Limits: workbench.PrincipalLimits{MaxConcurrentAdmissions: 1}}, rest.Options{})
	expect(t, do(t, "PUT", s.URL+wb+"/files/outputs/a.txt", strings.NewReader("x"), asHeader, "bob"), 201, "")
	alice := auth.WithPrincipal(t.Context(), auth.Principal{ID: "alice", AllAgents: true, Scopes: auth.Scopes})
	release, err := s.node.Service.AdmitMemory(alice, 1<<20, "the test's hold")
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, "GET", s.URL+wb+"/proposals", nil, asHeader, "alice")
	expect(t, r, 429, "ResourceExhausted")
	if d, _ := r.json["details"].(map[string]any); r.json["retryable"] != true || d["limit"] != workbench.LimitConcurrentAdmits || r.header.Get("Retry-After") == "" {
		t.Errorf("alice's second share: %v %v, Retry-After %q", r.json["retryable"], r.json["details"], r.header.Get("Retry-After"))
	}
	expect(t, do(t, "GET", s.URL+wb+"/proposals", nil, asHeader, "bob"), 200, "")
	release()
	expect(t, do(t, "GET", s.URL+wb+"/proposals", nil, asHeader, "alice"), 200, "")
}
