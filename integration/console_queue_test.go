package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/httpcall"
)

// The console against what a real root grows to: more workbenches than a listing page
// (here), and (console_pages_test.go, console_session_test.go) directories and histories
// of more than a page, bodies the file view cannot show whole, a node restarting under
// the live feed, a key revoked mid-session. Each check runs as a subtest of its own.

// pagesWait bounds one wait of these checks: a subtest that fails costs this much and
// the others still run.
const pagesWait = 45 * time.Second

// consoleStep is tab b seen from subtest t.
func consoleStep(t *testing.T, b *tab) *tab { return &tab{t: t, ctx: b.ctx, base: b.base} }

// within waits until expr is truthy, at most pagesWait.
func (b *tab) within(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pagesWait+10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(pagesWait))); err != nil {
		page, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(document.getElementById('status')||{}).textContent + ' | ' + (document.getElementById('main')||{}).textContent`))
		b.t.Fatalf("waiting until %s (%s): %v\npage: %.1500s", what, expr, err, page)
	}
}

// consoleWorkbenches creates workbenches a000…a<n-1> of root acme, then main.
func consoleWorkbenches(t *testing.T, base, key string, n int) {
	t.Helper()
	for i := range n + 1 {
		wb := fmt.Sprintf("a%03d", i)
		if i == n {
			wb = "main"
		}
		if st, body := consoleCall(t, "PUT", base+"/v1/agents/acme/workbenches/"+wb, key, nil); st/100 != 2 {
			t.Fatalf("create workbench %s: %d %s", wb, st, body)
		}
	}
}

// consolePut writes body to path of workbench wb of root acme with key.
func consolePut(t *testing.T, base, key, wb, path, body string) {
	t.Helper()
	u := base + "/v1/agents/acme/workbenches/" + wb + "/files/" + path
	if a := httpcall.Do(t, httpcall.New(t, "PUT", u, strings.NewReader(body)), append(framework.Bearer(key), "Content-Type", "text/plain")...); a.Status/100 != 2 {
		t.Fatalf("PUT %s: %d %s", path, a.Status, a.Body)
	}
}

// consolePropose proposes text for path of workbench wb (a new file) and returns its id.
func consolePropose(t *testing.T, base, key, wb, path, text string) string {
	t.Helper()
	st, body := consoleCall(t, "POST", base+"/v1/agents/acme/workbenches/"+wb+"/proposals", key, map[string]any{
		"path": path, "base_generation": 0, "text": text, "reason": "pages",
		"request_id": "pages-" + wb + "-" + strings.NewReplacer("/", "-", ".", "-").Replace(path)})
	var p struct {
		ProposalID string `json:"proposal_id"`
	}
	if st/100 != 2 || json.Unmarshal(body, &p) != nil || p.ProposalID == "" {
		t.Fatalf("propose %s/%s: %d %s", wb, path, st, body)
	}
	return p.ProposalID
}

// TestConsoleReviewQueueOfAWholeRoot: the queue of root acme, whose proposals are in
// workbench a000 and in main, after 100 others: every one is listed; a large one's diff
// (read with its whole body) only on request; a decision's judgment names its decider
// once; a key with review but not workspace:write, which a decision needs, gets no
// decision button.
func TestConsoleReviewQueueOfAWholeRoot(t *testing.T) {
	chromiumPath(t)
	dir := t.TempDir()
	key := func(name, scopes string) string {
		return framework.CreateKey(t, cairnRaceBin, nil, name, "--data-dir", dir, "--agent", "acme", "--scope", scopes).Secret
	}
	writer := key("writer", "workspace:read,workspace:write,review")
	reviewer := key("reviewer", "workspace:read,review")
	p := framework.StartProcess(t, cairnRaceBin, dir, "--auth", "required")
	consoleWorkbenches(t, p.URL, writer, 100)
	first := consolePropose(t, p.URL, writer, "a000", "outputs/first.md", "first\n")
	second := consolePropose(t, p.URL, writer, "a000", "outputs/second.md", "second\n")
	small := consolePropose(t, p.URL, writer, "main", "outputs/plan.md", "a plan\n")
	large := consolePropose(t, p.URL, writer, "main", "outputs/large.md", strings.Repeat("a long line of the proposal\n", 50_000)) // 1.4 MB
	card := func(id string) string { return fmt.Sprintf(`article[data-proposal=%q]`, id) }

	b := newBrowser(t, p.URL)
	b.open(writer, "#/review/acme")
	t.Run("the queue looks through every workbench", func(t *testing.T) {
		s := consoleStep(t, b)
		s.within("the proposals of main", fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q)`, card(small)+" pre.diff", card(large)))
		if n := eval[int](s, fmt.Sprintf(`performance.getEntriesByType('resource').filter(e => e.name.includes('include_body') && e.name.includes(%q)).length`, large)); n != 0 {
			t.Errorf("the queue read the large proposal's body %d times before it was asked to", n)
		}
		s.click("show the large diff", card(large)+" button.load-diff")
		s.within("the large diff", fmt.Sprintf(`!!document.querySelector(%q)`, card(large)+" pre.diff"))
	})
	t.Run("a judgment names its decider once", func(t *testing.T) {
		s := consoleStep(t, b)
		s.within("the first proposal", fmt.Sprintf(`!!document.querySelector(%q)`, card(first)+" button.accept"))
		s.click("accept it", card(first)+" button.accept")
		s.within("the decision is recorded", `document.querySelectorAll('#judgments tbody tr').length === 1`)
		if by := eval[string](s, `document.querySelector('#judgments tbody tr').children[2].textContent`); strings.Count(by, " via ") != 1 {
			t.Errorf("the judgment's By reads %q, want the decider and its surface once", by)
		}
	})
	t.Run("review without workspace:write offers no decision", func(t *testing.T) {
		s := b.isolated()
		s.t = t
		s.open(reviewer, "#/review/acme")
		s.within("the queue", fmt.Sprintf(`!!document.querySelector(%q)`, card(second)))
		if n := eval[int](s, `document.querySelectorAll('#main article button.accept, #main article button.reject').length`); n != 0 {
			t.Errorf("the queue offers %d decision buttons to a key whose decisions the API refuses", n)
		}
		s.within("the hint says why", `document.getElementById('main').textContent.includes('not workspace:write')`)
	})
}
