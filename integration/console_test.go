package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"golang.org/x/mod/semver"

	"github.com/cairnstore/cairn/api/console"
	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/httpcall"
)

// The web console (api/console) end to end: a real `cairn serve` with keys, driven through
// Debian's chromium, headless, with chromedp. The page is used as a person would (keys
// typed, buttons clicked); what it shows is checked in the DOM, what it did on the node
// over the API. Screenshots of each destination go to the test's artifact directory
// (`go test -artifacts -outputdir DIR` keeps them).

// consoleWait bounds one wait for the page (a poll of the DOM); generous, for a loaded
// machine running the race-instrumented node.
const consoleWait = 90 * time.Second

// consoleHostile is stored text that must stay text: markup that would run or load
// something if the page ever parsed it as HTML.
const consoleHostile = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`

// chromiumPath finds the browser; the tests need it (.ci/run installs Debian's chromium).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the console's tests need a headless chromium on PATH (apt-get install chromium; .ci/run installs it)")
	return ""
}

// tab is one browser tab on the console.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string // the node's URL
}

// newBrowser starts a headless chromium for the test and returns its first tab.
func newBrowser(t *testing.T, base string) *tab {
	t.Helper()
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts, chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first call starts the browser, which lives as long as its context: no timeout.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &tab{t: t, ctx: ctx, base: base}
}

// isolated opens a tab in a new browser context (its own storage), as a second person.
func (b *tab) isolated() *tab {
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil { // opens the tab: no timeout
		b.t.Fatalf("open a tab in a new browser context: %v", err)
	}
	return &tab{t: b.t, ctx: ctx, base: b.base}
}

func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 3*consoleWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// until waits until the JavaScript expression is truthy.
func (b *tab) until(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, consoleWait+10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(consoleWait))); err != nil {
		status, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(document.getElementById('status')||{}).textContent + ' | ' + (document.getElementById('main')||{}).textContent`))
		b.t.Fatalf("waiting until %s (%s): %v\npage: %.2000s", what, expr, err, status)
	}
}

// eval runs a JavaScript expression and returns its value.
func eval[T any](b *tab, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// shot saves a screenshot of the whole page as name.png in the test's artifact directory.
func (b *tab) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)) // quality 100: a PNG
	if err == nil {
		err = os.WriteFile(b.t.ArtifactDir()+"/"+name+".png", png, 0o644)
	}
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
}

// open loads the console at hash with key typed into its key form (once per tab).
func (b *tab) open(key, hash string) *network.Response {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 3*consoleWait)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(b.base+"/ui/"+hash))
	if err != nil {
		b.t.Fatalf("open the console: %v", err)
	}
	b.until("the page asks for a key", `!document.getElementById('key-form').hidden`)
	b.do("enter the key", chromedp.SendKeys(chromedp.CSS("#key-input"), key), chromedp.Click(chromedp.CSS("#key-form button[type=submit]")))
	b.until("the page knows the key", `document.getElementById('key-form').hidden && document.getElementById('who').textContent.length > 0`)
	return resp
}

// click clicks the element sel. The console renders a view again after each answer; a
// render that replaces the element between finding it and clicking it makes CDP answer
// that the node is gone (chromedp asks for the node's position before it sends the
// mouse, so nothing was clicked), and the click is tried again on the element now on
// the page, within the wait's deadline.
func (b *tab) click(what, sel string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 3*consoleWait)
	defer cancel()
	for {
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		if err == nil {
			return
		}
		var cdpErr *cdproto.Error
		if !errors.As(err, &cdpErr) || !strings.Contains(strings.ToLower(cdpErr.Message), "node") || ctx.Err() != nil {
			b.t.Fatalf("%s: %v", what, err)
		}
	}
}

// consoleCall sends one API request with key (body: JSON, nil for none) and returns the
// status and the body.
func consoleCall(t *testing.T, method, u, key string, body any) (int, []byte) {
	t.Helper()
	payload, hdr := "", []string{"Authorization", "Bearer " + key}
	if body != nil {
		b, _ := json.Marshal(body)
		payload, hdr = string(b), append(hdr, "Content-Type", "application/json")
	}
	req := httpcall.New(t, method, u, strings.NewReader(payload))
	a := httpcall.Do(t, req, hdr...)
	return a.Status, a.Body
}

// consoleDoc is the part of GET /api/workbench/documents/:id the test reads.
type consoleDoc struct {
	Document struct {
		VersionID string `json:"versionId"`
		Title     string `json:"title"`
	} `json:"document"`
	Body      string `json:"body"`
	Proposals []struct {
		ProposalEventID string `json:"proposalEventId"`
		State           string `json:"state"`
	} `json:"proposals"`
	Events []struct {
		Type    string         `json:"type"`
		Payload map[string]any `json:"payload"`
	} `json:"events"`
	Judgments []json.RawMessage `json:"judgments"`
}

func getDoc(t *testing.T, base, key, id string) consoleDoc {
	t.Helper()
	st, body := consoleCall(t, "GET", base+"/api/workbench/documents/"+id, key, nil)
	var d consoleDoc
	if st != 200 || json.Unmarshal(body, &d) != nil {
		t.Fatalf("GET document %s: %d %s", id, st, body)
	}
	return d
}

func TestConsoleInABrowser(t *testing.T) {
	chromiumPath(t)
	dir := t.TempDir()
	key := func(name, scopes string) string {
		return framework.CreateKey(t, cairnRaceBin, nil, name, "--data-dir", dir, "--tenant", "acme", "--workspace", "main", "--scope", scopes).Secret
	}
	writer := key("writer", "workspace:read,workspace:write,review")
	reader := key("reader", "workspace:read")
	// A key of the whole root acme, bound to no OpenWOP tenant: the facade refuses it.
	whole := framework.CreateKey(t, cairnRaceBin, nil, "whole-root", "--data-dir", dir, "--agent", "acme", "--scope", "workspace:read,workspace:write,review").Secret
	p := framework.StartProcess(t, cairnRaceBin, dir, "--auth", "required")
	files := p.URL + "/v1/agents/acme/workbenches/main/files/"
	for _, body := range []string{"Decided: ship on Friday.\n", "Decided: ship on Friday.\n" + consoleHostile + "\n"} {
		if a := httpcall.Do(t, httpcall.New(t, "PUT", files+"input/standup.md", strings.NewReader(body)), framework.Bearer(writer)...); a.Status/100 != 2 {
			t.Fatalf("seed input/standup.md: %d %s", a.Status, a.Body)
		}
	}
	origin := consoleOrigin(t, p.URL, writer)

	b := newBrowser(t, p.URL)
	resp := b.open(writer, "#/documents")
	checkConsoleHeaders(t, resp)
	docID := consoleCreateAndEdit(t, b, origin)
	p1 := consoleSelectAndPropose(t, b, origin, 1)

	// A second browser context (another person, storage of its own) saves a version
	// meanwhile: the draft this tab holds is on an old base.
	b.do("type a draft", chromedp.SendKeys(chromedp.CSS("#edit-body"), "\nA draft on the old head."))
	before := getDoc(t, p.URL, writer, docID).Document.VersionID
	other := b.isolated()
	other.open(writer, "#/documents/"+url.PathEscape(docID))
	other.until("the other context shows the head, no draft", `!!document.getElementById('edit-body') && !document.getElementById('draft-note')`)
	other.do("edit in the other context", chromedp.SetValue(chromedp.CSS("#edit-body"), "# Standup\n\nEdited elsewhere.\n"))
	other.click("save in the other context", "#save-version")
	other.until("the other context saved", `document.getElementById('status').textContent.includes('Saved version')`)
	head := getDoc(t, p.URL, writer, docID).Document.VersionID
	if head == before {
		t.Fatalf("the other context's save did not move the head (still %s)", head)
	}
	b.click("save the stale draft", "#save-version")
	b.until("the 409 names the new head", fmt.Sprintf(`document.getElementById('status').textContent.includes('StaleBaseError') && document.getElementById('status').textContent.includes(%q)`, head))
	b.click("discard the draft", "#discard-draft")
	b.until("the editor shows the head", `document.getElementById('edit-body').value.includes('Edited elsewhere.')`)

	// The first proposal is stale now: shown stale, Accept disabled with the hint.
	sel := fmt.Sprintf(`article.proposal[data-proposal=%q]`, p1)
	b.until("the proposal is stale", fmt.Sprintf(`(() => { const c = document.querySelector(%q); return c && c.querySelector('.badge').textContent === 'stale'
		&& c.querySelector('button.accept').disabled && c.querySelector('.stale-hint').textContent.includes('Request a new proposal') })()`, sel))
	b.shot("documents-stale-proposal")

	p2 := consoleSelectAndPropose(t, b, origin, 2)
	consoleAcceptThroughANetworkFailure(t, b, p2, docID, writer)
	b.click("reject the stale proposal", sel+" button.reject")
	b.until("the stale proposal is rejected", fmt.Sprintf(`document.querySelector(%q).querySelector('.badge').textContent === 'rejected'`, sel))
	b.shot("documents-detail")

	consoleBrowse(t, b, writer)
	consoleReview(t, b, writer)
	consolePacks(t, b, writer, whole)
	consoleReader(t, b.isolated(), reader, docID, p2)
	consoleCrossSiteForm(t, b.isolated(), writer)
	if v := eval[string](b, `String(window.__pwned)`); v != "undefined" {
		t.Errorf("stored markup ran in the page: window.__pwned = %s", v)
	}
}

// consoleOrigin is the event id of the observation of input/standup.md.
func consoleOrigin(t *testing.T, base, key string) string {
	t.Helper()
	st, body := consoleCall(t, "GET", base+"/api/workbench/candidates", key, nil)
	var c struct {
		Candidates []struct{ EventID, Excerpt string } `json:"candidates"`
	}
	if st != 200 || json.Unmarshal(body, &c) != nil {
		t.Fatalf("candidates: %d %s", st, body)
	}
	for _, x := range c.Candidates {
		if strings.Contains(x.Excerpt, "path: input/standup.md") {
			return x.EventID
		}
	}
	t.Fatalf("no observation of input/standup.md among %s", body)
	return ""
}

func checkConsoleHeaders(t *testing.T, resp *network.Response) {
	t.Helper()
	h := map[string]string{}
	for k, v := range resp.Headers {
		h[strings.ToLower(k)] = fmt.Sprint(v)
	}
	if h["content-security-policy"] != console.SecurityPolicy || h["x-content-type-options"] != "nosniff" {
		t.Errorf("the console page came with headers %v, want its Content-Security-Policy and nosniff", h)
	}
	if !strings.Contains(h["content-security-policy"], "frame-ancestors 'none'") || strings.Contains(h["content-security-policy"], "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q is not restrictive", h["content-security-policy"])
	}
}

// consoleCreateAndEdit creates a working document from origin through the page, keeps a
// draft across a reload, saves it, and returns the document's id.
func consoleCreateAndEdit(t *testing.T, b *tab, origin string) string {
	t.Helper()
	li := fmt.Sprintf(`#observations li[data-event=%q]`, origin)
	b.until("the observations are listed", fmt.Sprintf(`!!document.querySelector(%q)`, li+" button.create-doc"))
	b.shot("documents-list")
	b.click("open the create form", li+" button.create-doc")
	b.do("fill the form", chromedp.SendKeys(chromedp.CSS("#new-title"), "Standup <b>bold</b>"),
		chromedp.SendKeys(chromedp.CSS("#new-body"), "# Standup\n"+consoleHostile+"\n"))
	b.click("create", "#create-submit")
	b.until("the document opens", `location.hash.startsWith('#/documents/') && !!document.getElementById('doc-title')`)
	if got := eval[string](b, `document.getElementById('doc-title').textContent`); got != "Standup <b>bold</b>" {
		t.Errorf("the title shows as %q, want the stored text", got)
	}
	if n := eval[int](b, `document.querySelectorAll('#main b, #main img, #main script').length`); n != 0 {
		t.Errorf("stored markup became %d elements of the page", n)
	}
	id := strings.TrimPrefix(eval[string](b, `location.hash`), "#/documents/")
	b.do("type a draft", chromedp.SendKeys(chromedp.CSS("#edit-body"), "\nShip on Friday, after the review."))
	b.do("reload", chromedp.Reload())
	b.until("the draft survives the reload", `!!document.getElementById('draft-note') && document.getElementById('edit-body').value.includes('after the review.')`)
	b.click("save the draft", "#save-version")
	b.until("the version is saved", `document.getElementById('status').textContent.includes('Saved version') && !document.getElementById('draft-note')`)
	return id
}

// consoleSelectAndPropose records a selection of origin and requests a proposal from the
// fixture runner; it returns the n-th proposal's id.
func consoleSelectAndPropose(t *testing.T, b *tab, origin string, n int) string {
	t.Helper()
	b.do("select the origin", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#candidates input[value=%q]`, origin))))
	b.click("record the selection", "#record-selection")
	// The page renders again after the status says so: wait for the render that lists
	// the n-th selection, or the click may land on the button that render replaces.
	b.until("the selection is recorded", fmt.Sprintf(`document.getElementById('status').textContent.includes('Recorded selection')
		&& document.querySelectorAll('#proposal-selection option').length === %d && !!document.getElementById('request-proposal')`, n))
	b.click("request a proposal", "#request-proposal")
	b.until("the runner proposed", fmt.Sprintf(`document.querySelectorAll('article.proposal').length === %d`, n))
	diff := eval[string](b, `document.querySelector('article.proposal pre.diff').textContent`)
	if !strings.Contains(diff, "+## Sources") || n == 1 && !strings.Contains(diff, consoleHostile) {
		t.Errorf("the proposal's diff reads %q, want the Sources section (and the first, the stored markup as text)", diff)
	}
	return eval[string](b, `document.querySelector('article.proposal').dataset.proposal`)
}

// cutAnswers makes tab b lose the answer of every request whose URL matches pattern (a
// CDP fetch pattern): the request reaches the node, and the page gets a connection reset
// instead of its answer, until letThrough is called. The channel receives the cut
// requests' bodies.
func cutAnswers(b *tab, pattern string) (bodies <-chan string, letThrough func()) {
	b.t.Helper()
	sent := make(chan string, 8)
	cut := make(chan fetch.RequestID, 4)
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			for _, en := range e.Request.PostDataEntries {
				select { // Listen's function must not block
				case sent <- string(en.Bytes):
				default:
				}
			}
			select {
			case cut <- e.RequestID:
			default:
			}
		}
	}); err != nil {
		b.t.Fatal(err)
	}
	go func() { // cuts each paused answer: the node applied the request, the page gets no answer
		for {
			select {
			case rid := <-cut:
				_, _ = chromedp.Run(b.ctx, func(ctx context.Context, tg *chromedp.Target) (cdp.Empty, error) {
					return cdp.Call(ctx, tg, fetch.FailRequest, fetch.FailRequestParams{RequestID: rid, ErrorReason: network.ErrorReasonConnectionReset})
				})
			case <-b.ctx.Done():
				return
			}
		}
	}()
	enable := func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: pattern, RequestStage: fetch.RequestStageResponse}}})
		return err
	}
	b.do("cut the answers of "+pattern, chromedp.Func(enable))
	return sent, func() {
		b.t.Helper()
		disable := func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, fetch.Disable, cdp.Empty{})
			return err
		}
		b.do("let the answers through", chromedp.Func(disable))
	}
}

// drain returns what ch holds now.
func drain(ch <-chan string) []string {
	var out []string
	for len(ch) > 0 {
		out = append(out, <-ch)
	}
	return out
}

// consoleAcceptThroughANetworkFailure accepts proposal id while the answer is lost on the
// way back (the request reached the node): the page says the outcome is unknown, reloads,
// and the retry sends the same submission id, which the node answers from the first
// decision.
func consoleAcceptThroughANetworkFailure(t *testing.T, b *tab, id, docID, key string) {
	t.Helper()
	bodies, letThrough := cutAnswers(b, "*/decisions")
	card := fmt.Sprintf(`article.proposal[data-proposal=%q]`, id)
	b.click("accept", card+" button.accept")
	b.until("the outcome is unknown and the document reloaded", fmt.Sprintf(`!!document.getElementById('retry-write') && document.querySelector(%q).querySelector('.badge').textContent === 'accepted'`, card))
	unknown := eval[string](b, `document.getElementById('status').textContent`)
	b.shot("documents-outcome-unknown")
	letThrough()
	b.click("retry", "#retry-write")
	b.until("the retry is answered", `document.getElementById('status').textContent.includes('Recorded the decision: accept')`)
	sent := drain(bodies)
	var first struct{ SubmissionID string }
	if len(sent) != 1 || json.Unmarshal([]byte(sent[0]), &first) != nil || first.SubmissionID == "" {
		t.Fatalf("the cut request's bodies: %q", sent)
	}
	done := eval[string](b, `document.getElementById('status').textContent`)
	if !strings.Contains(unknown, first.SubmissionID) || !strings.Contains(done, first.SubmissionID) {
		t.Errorf("the retry did not reuse submission id %s: unknown %q, then %q", first.SubmissionID, unknown, done)
	}
	decisions := 0
	for _, ev := range getDoc(t, b.base, key, docID).Events {
		if ev.Type == evDecision && ev.Payload["proposalEventId"] == id {
			decisions++
			if ev.Payload["submissionId"] != first.SubmissionID {
				t.Errorf("the decision's submission id is %v, want %s", ev.Payload["submissionId"], first.SubmissionID)
			}
		}
	}
	if decisions != 1 {
		t.Errorf("the node recorded %d decisions of %s, want 1", decisions, id)
	}
}

// consoleBrowse walks Browse: the workbench, a file with stored markup shown as text, its
// history diffed, and the change feed.
func consoleBrowse(t *testing.T, b *tab, key string) {
	t.Helper()
	b.do("open the file", chromedp.Navigate(b.base+"/ui/#/browse/acme/main/~file/input/standup.md"))
	b.until("the file shows", `(document.getElementById('file-content')||{}).textContent?.includes('Decided')`)
	if got := eval[string](b, `document.getElementById('file-content').textContent`); !strings.Contains(got, consoleHostile) {
		t.Errorf("the file shows as %q, want its stored markup as text", got)
	}
	b.click("diff the two versions", "#compare-versions")
	b.until("the versions are diffed", `!!document.querySelector('#history-diff pre.diff span.ins')`)
	b.shot("browse-file-history")
	b.do("open the workbench", chromedp.Navigate(b.base+"/ui/#/browse/acme/main/input"))
	b.until("the section lists the file", `document.getElementById('main').textContent.includes('standup.md')`)
	b.shot("browse-workbench")
	consoleSnapshotAndCommit(t, b, key)
	consoleCommitPages(t, b, key)
	b.do("open the feed", chromedp.Navigate(b.base+"/ui/#/feed/acme"))
	b.until("the feed lists events", `document.querySelectorAll('#feed li, #feed-history li').length > 0 && document.getElementById('feed-state').textContent.startsWith('Live')`)
	b.shot("feed")
	if n := eval[int](b, `document.querySelectorAll('#main img, #main script').length`); n != 0 {
		t.Errorf("stored markup became %d elements of the page", n)
	}
}

// consoleSnapshotAndCommit takes a snapshot and a commit of the workbench over REST, then
// writes a file after them: Browse lists both, and each one's diff against live shows the
// file written since, with its diff.
func consoleSnapshotAndCommit(t *testing.T, b *tab, key string) {
	t.Helper()
	wb := b.base + "/v1/agents/acme/workbenches/main"
	st, body := consoleCall(t, "POST", wb+"/snapshots", key, map[string]any{"name": "before-after"})
	var snap struct {
		SnapshotID json.Number `json:"snapshot_id"`
	}
	if st/100 != 2 || json.Unmarshal(body, &snap) != nil || snap.SnapshotID == "" {
		t.Fatalf("snapshot: %d %s", st, body)
	}
	st, body = consoleCall(t, "POST", wb+"/commit", key, map[string]any{"manifest": map[string]any{"run": 1}, "content_digest_uri": "sha256:" + strings.Repeat("a", 64)})
	var commit struct {
		CommitIdentity string `json:"commit_identity"`
	}
	if st/100 != 2 || json.Unmarshal(body, &commit) != nil || commit.CommitIdentity == "" {
		t.Fatalf("commit: %d %s", st, body)
	}
	if a := httpcall.Do(t, httpcall.New(t, "PUT", wb+"/files/outputs/after.md", strings.NewReader("written after\n")), framework.Bearer(key)...); a.Status/100 != 2 {
		t.Fatalf("write outputs/after.md: %d %s", a.Status, a.Body)
	}
	for _, side := range []string{"commit:" + commit.CommitIdentity, "snapshot:" + snap.SnapshotID.String()} {
		b.do("open the workbench's root", chromedp.Navigate(b.base+"/ui/#/browse/acme/main"))
		link := fmt.Sprintf(`#main a[href=%q]`, "#/browse/acme/main/~diff/"+strings.ReplaceAll(side, ":", "%3A")) // the page's encodeURIComponent
		b.until("the workbench lists "+side, fmt.Sprintf(`!!document.querySelector(%q)`, link))
		if strings.HasPrefix(side, "commit:") {
			b.shot("browse-snapshots-commits")
		}
		b.click("diff "+side+" against live", link)
		show := `[...document.querySelectorAll('#main tr')].find(r => r.textContent.includes('outputs/after.md'))`
		b.until(side+" against live lists the file written since", "!!"+show)
		eval[bool](b, show+".querySelector('button').click() === undefined")
		b.until("the file's diff shows", `(document.querySelector('#file-diff pre.diff')||{}).textContent?.includes('+written after')`)
	}
}

// consoleQueueAcceptThroughANetworkFailure accepts Cairn proposal id in the review queue
// of tab b (a tab of its own: its own interception) while the answer is cut on the way
// back: the page says the outcome is unknown and reloads, the retry sends the same
// submission_id, and the node records one judgment.
func consoleQueueAcceptThroughANetworkFailure(t *testing.T, b *tab, key, id string) {
	t.Helper()
	card := fmt.Sprintf(`article.review[data-proposal=%q]`, id)
	b.open(key, "#/review/acme")
	b.until("the queue lists the proposal", fmt.Sprintf(`!!document.querySelector(%q)`, card+" button.accept"))
	bodies, letThrough := cutAnswers(b, "*/decision")
	b.click("accept in the queue", card+" button.accept")
	b.until("the outcome is unknown and the queue reloaded without it", fmt.Sprintf(`!!document.getElementById('retry-write') && !!document.getElementById('judgments') && !document.querySelector(%q)`, card))
	unknown := eval[string](b, `document.getElementById('status').textContent`)
	letThrough()
	b.click("retry", "#retry-write")
	b.until("the retry is answered", `document.getElementById('status').textContent.includes('Recorded the decision: accept')`)
	done := eval[string](b, `document.getElementById('status').textContent`)
	sent := drain(bodies)
	var first struct {
		SubmissionID string `json:"submission_id"`
	}
	if len(sent) != 1 || json.Unmarshal([]byte(sent[0]), &first) != nil || first.SubmissionID == "" {
		t.Fatalf("the cut request's bodies: %q", sent)
	}
	if !strings.Contains(unknown, first.SubmissionID) || !strings.Contains(done, first.SubmissionID) {
		t.Errorf("the queue's retry did not reuse submission id %s: unknown %q, then %q", first.SubmissionID, unknown, done)
	}
	st, body := consoleCall(t, "GET", b.base+"/v1/agents/acme/workbenches/main/judgments?path=outputs/plan.md", key, nil)
	var j struct {
		Judgments []struct {
			SubmissionID string `json:"submission_id"`
		} `json:"judgments"`
	}
	if st != 200 || json.Unmarshal(body, &j) != nil || len(j.Judgments) != 1 || j.Judgments[0].SubmissionID != first.SubmissionID {
		t.Errorf("the node's judgments of outputs/plan.md: %d %s, want one, submission %s", st, body, first.SubmissionID)
	}
}

// consoleReader opens the console with a read-only key in a second browser context: no
// control to write or decide, and the API refuses a decision forced from the page.
func consoleReader(t *testing.T, b *tab, key, docID, proposal string) {
	t.Helper()
	b.open(key, "#/documents/"+url.PathEscape(docID))
	b.until("the document shows read-only", `!!document.getElementById('doc-body') && document.querySelectorAll('article.proposal').length > 0`)
	for _, sel := range []string{"#edit-body", "#save-version", "#record-selection", "#request-proposal", "button.accept", "button.reject"} {
		if n := eval[int](b, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)); n != 0 {
			t.Errorf("a read-only key sees %d of %s", n, sel)
		}
	}
	b.shot("documents-read-only")
	b.do("open the review queue", chromedp.Navigate(b.base+"/ui/#/review/acme"))
	b.until("the queue shows the pending proposal", `document.querySelectorAll('article.review').length === 1`)
	if n := eval[int](b, `document.querySelectorAll('article.review button').length`); n != 0 {
		t.Errorf("a key without review sees %d decision buttons in the queue", n)
	}
	b.do("open the list", chromedp.Navigate(b.base+"/ui/#/documents"))
	b.until("the list shows", `!!document.getElementById('observations')`)
	if n := eval[int](b, `document.querySelectorAll('button.create-doc').length`); n != 0 {
		t.Errorf("a read-only key sees %d create buttons", n)
	}
	forced := fmt.Sprintf(`fetch('/api/workbench/proposals/%s/decisions', {method: 'POST', headers: {'Content-Type': 'application/json',
		Authorization: 'Bearer ' + sessionStorage.getItem('cairn.key')}, body: JSON.stringify({disposition: 'reject', submissionId: 'forced-1'})}).then(r => r.status)`, proposal)
	st, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](forced, func(p *runtime.EvaluateParams) { p.AwaitPromise = ptrTrue() }))
	if err != nil || st != http.StatusForbidden {
		t.Errorf("a decision forced with the read-only key answered %d (%v), want 403", st, err)
	}
	if v := eval[string](b, `String(localStorage.getItem('cairn.key'))`); v != "null" {
		t.Errorf("the key is in localStorage: %s", v)
	}
}

func ptrTrue() *bool { t := true; return &t }

// consoleReview proposes two changes over REST and an OpenWOP agent pack through the
// facade, then in the review queue accepts the first Cairn proposal and rejects the pack
// proposal, leaves the second Cairn one pending, and finds both decisions among the past
// ones.
func consoleReview(t *testing.T, b *tab, key string) {
	t.Helper()
	var ids []string
	for i, path := range []string{"outputs/plan.md", "outputs/other.md"} {
		st, body := consoleCall(t, "POST", b.base+"/v1/agents/acme/workbenches/main/proposals", key, map[string]any{
			"path": path, "base_generation": 0, "text": "Plan\n" + consoleHostile + "\n", "reason": "a plan", "request_id": fmt.Sprintf("review-%d", i)})
		var p struct {
			ProposalID string `json:"proposal_id"`
		}
		if st/100 != 2 || json.Unmarshal(body, &p) != nil || p.ProposalID == "" {
			t.Fatalf("propose %s: %d %s", path, st, body)
		}
		ids = append(ids, p.ProposalID)
	}
	ow := owClient{t: t, nodes: func() []string { return []string{b.base} }, key: key}
	created := ow.do(http.MethodPost, "/proposals", map[string]any{"kind": "agent-pack", "artifact": owAgentPack("1.0.0", consoleHostile), "title": "helper"})
	packID, _ := created.json["id"].(string)
	if created.status != http.StatusCreated || packID == "" {
		t.Fatalf("propose an OpenWOP pack: %d %s", created.status, created.body)
	}
	card := fmt.Sprintf(`article.review[data-proposal=%q]`, ids[0])
	pack := fmt.Sprintf(`article.pack[data-pack=%q]`, packID)
	b.do("open the review queue", chromedp.Navigate(b.base+"/ui/#/review/acme"))
	b.until("the queue lists both Cairn proposals and the pack", fmt.Sprintf(`document.querySelectorAll('article.review').length === 3 && !!document.querySelector(%q)`, pack))
	if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).querySelector('pre.diff').textContent`, card)); !strings.Contains(got, "+"+consoleHostile) {
		t.Errorf("the queue's diff reads %q, want the stored markup as text", got)
	}
	if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).querySelector('pre.diff').textContent`, pack)); !strings.Contains(got, owPackName) || !strings.Contains(got, "+") {
		t.Errorf("the pack's diff reads %q, want its manifest as inserted lines", got)
	}
	b.shot("review-queue")
	b.click("reject the pack in the queue", pack+" button.reject")
	b.until("the pack's rejection is recorded", fmt.Sprintf(`document.getElementById('status').textContent.includes('reject of the OpenWOP pack proposal') && !document.querySelector(%q)`, pack))
	if r := ow.do(http.MethodGet, "/proposals/"+packID, nil); r.status != http.StatusOK || r.json["state"] != "rejected" {
		t.Errorf("the rejected pack proposal reads %d %s", r.status, r.body)
	}
	consoleQueueAcceptThroughANetworkFailure(t, b.isolated(), key, ids[0])
	st, body := consoleCall(t, "GET", b.base+"/v1/agents/acme/workbenches/main/proposals/"+ids[0], key, nil)
	if st != 200 || !strings.Contains(string(body), `"state":"accepted"`) {
		t.Errorf("the accepted proposal reads %d %s", st, body)
	}
	b.do("reload the review queue", chromedp.Reload())
	b.until("the queue shows the one left", `document.querySelectorAll('article.review').length === 1 && !!document.getElementById('judgments')`)
	past := eval[string](b, `document.getElementById('judgments').textContent`)
	if !strings.Contains(past, "main/outputs/plan.md") || !strings.Contains(past, "accept") || !strings.Contains(past, "rejected") || !strings.Contains(past, owPackName) {
		t.Errorf("the past decisions read %q, want the accept of outputs/plan.md and the rejected pack", past)
	}
	b.shot("review-judgments")
}

// consoleCrossSiteForm loads a page of another site (a server of the test's own, named
// localhost where the node is 127.0.0.1) whose form posts to a state-changing route of
// the node, as a forged request would: the browser sends it with its Origin and
// Sec-Fetch-Site, the node's guard answers 403 before anything else (no key could have
// been sent), and nothing is written.
func consoleCrossSiteForm(t *testing.T, b *tab, key string) {
	t.Helper()
	target := b.base + "/v1/agents/acme/workbenches/main/files/outputs/forged.md?append"
	page := `<!doctype html><title>another site</title><form method="POST" enctype="text/plain" action="` +
		html.EscapeString(target) + `"><input name="x" value="forged"><button id="go" type="submit">go</button></form>`
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
	t.Cleanup(site.Close)
	u, err := url.Parse(site.URL)
	if err != nil {
		t.Fatal(err)
	}
	other := "http://localhost:" + u.Port() + "/"
	if strings.Contains(b.base, "://localhost") {
		t.Fatalf("the node's URL %s must not be on localhost for the page to be of another site", b.base)
	}
	b.do("open the other site's page", chromedp.Navigate(other), chromedp.WaitReady(chromedp.CSS("#go")))
	ctx, cancel := context.WithTimeout(b.ctx, 3*consoleWait)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("#go")))
	if err != nil {
		t.Fatalf("submit the other site's form: %v", err)
	}
	got := eval[string](b, `document.body.textContent`)
	if resp.Status != http.StatusForbidden || !strings.Contains(got, "cross-origin requests may not change state") {
		t.Errorf("the cross-site form post answered %d %q, want the guard's 403", resp.Status, got)
	}
	if st, body := consoleCall(t, "GET", b.base+"/v1/agents/acme/workbenches/main/files/outputs/forged.md", key, nil); st != http.StatusNotFound {
		t.Errorf("after the refused form post the file reads %d %s, want 404", st, body)
	}
}

// consoleCommitPages seals 21 more commits of the workbench over REST (22 in all, more
// than a page): Browse lists the newest 20 from GET …/commits, newest first, the head
// marked, and "Show older commits" reads the rest, the first commit last.
func consoleCommitPages(t *testing.T, b *tab, key string) {
	t.Helper()
	wb := b.base + "/v1/agents/acme/workbenches/main"
	for i := range 21 {
		st, body := consoleCall(t, "POST", wb+"/commit", key, map[string]any{"manifest": map[string]any{"run": i + 2},
			"content_digest_uri": "sha256:" + strings.Repeat("a", 64), "replace": true})
		if st/100 != 2 {
			t.Fatalf("commit %d: %d %s", i+2, st, body)
		}
	}
	var want []string // newest first, as the node lists them
	for cursor := ""; ; {
		target := wb + "/commits?limit=7"
		if cursor != "" {
			target += "&cursor=" + url.QueryEscape(cursor)
		}
		st, body := consoleCall(t, "GET", target, key, nil)
		var page struct {
			Commits []struct {
				CommitIdentity string `json:"commit_identity"`
			} `json:"commits"`
			NextCursor *string `json:"next_cursor"`
		}
		if st != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("GET commits: %d %s", st, body)
		}
		for _, c := range page.Commits {
			want = append(want, c.CommitIdentity)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(want) != 22 {
		t.Fatalf("the node lists %d commits, want 22", len(want))
	}
	rows := `[...document.querySelectorAll('#commits tbody tr')]`
	listed := rows + `.map(r => r.querySelector('code').title)`
	b.do("open the workbench's root", chromedp.Navigate(b.base+"/ui/#/browse/acme/main"))
	b.until("Browse lists the newest 20 commits", rows+`.length === 20 && !document.getElementById('older-commits').hidden`)
	got := eval[[]string](b, listed)
	if strings.Join(got, ",") != strings.Join(want[:20], ",") || !eval[bool](b, rows+`[0].querySelector('.badge')?.textContent === 'head' && `+rows+`.slice(1).every(r => !r.querySelector('.badge'))`) {
		t.Errorf("Browse's first page lists %v, want %v with the first the head", got, want[:20])
	}
	b.click("show the older commits", "#older-commits")
	b.until("Browse lists every commit", rows+`.length === 22 && document.getElementById('older-commits').hidden`)
	if got := eval[[]string](b, listed); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Browse lists %v, want %v", got, want)
	}
	b.shot("browse-commits")
}

// consolePacks: the staleness of OpenWOP pack proposals, and what a key of the whole root
// sees of them. A pack installed at 1.0.0 makes a proposal of 1.0.0 stale (apply would
// refuse it: its version is not greater) with Apply disabled and the hint, while one of
// 1.1.0 is not; a key of the whole root acme, bound to no tenant, sees both over REST with
// the same staleness and no decision buttons, and the API refuses the decisions it could
// force (REST: the packs workbench is the facade's; the facade: the key has no tenant).
// Then the tenant's key applies 1.1.0 and rejects the stale one in the queue.
func consolePacks(t *testing.T, b *tab, key, whole string) {
	t.Helper()
	ow := owClient{t: t, nodes: func() []string { return []string{b.base} }, key: key}
	propose := func(version, prompt string) string {
		t.Helper()
		r := ow.do(http.MethodPost, "/proposals", map[string]any{"kind": "agent-pack", "artifact": owAgentPack(version, prompt), "title": "helper " + version})
		id, _ := r.json["id"].(string)
		if r.status != http.StatusCreated || id == "" {
			t.Fatalf("propose pack %s: %d %s", version, r.status, r.body)
		}
		return id
	}
	if r := ow.do(http.MethodPost, "/proposals/"+propose("1.0.0", "You help.")+":apply", nil); r.status != http.StatusOK || r.json["state"] != "applied" {
		t.Fatalf("apply 1.0.0: %d %s", r.status, r.body)
	}
	same, newer := propose("1.0.0", "You help again."), propose("1.1.0", "You help more.")
	staleCard, freshCard := fmt.Sprintf(`article.pack[data-pack=%q]`, same), fmt.Sprintf(`article.pack[data-pack=%q]`, newer)
	// The tab shows this queue already (consoleReview): load it again.
	b.do("open the review queue", chromedp.Navigate(b.base+"/ui/#/review/acme"), chromedp.Reload())
	b.until("the queue lists both pack proposals", fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q)`, staleCard, freshCard))
	if !eval[bool](b, fmt.Sprintf(`(() => { const c = document.querySelector(%q); return c.querySelector('.badge').textContent === 'stale'
		&& c.querySelector('button.accept').disabled && !c.querySelector('button.reject').disabled
		&& c.querySelector('.stale-hint').textContent.includes('1.0.0 is not greater') })()`, staleCard)) {
		t.Errorf("the pack proposal of the installed version reads %q, want stale with Apply disabled and the hint", eval[string](b, fmt.Sprintf(`document.querySelector(%q).textContent`, staleCard)))
	}
	if !eval[bool](b, fmt.Sprintf(`(() => { const c = document.querySelector(%q); return c.querySelector('.badge').textContent !== 'stale'
		&& !c.querySelector('button.accept').disabled && !c.querySelector('.stale-hint') })()`, freshCard)) {
		t.Errorf("the pack proposal of a greater version reads %q, want it pending with Apply enabled", eval[string](b, fmt.Sprintf(`document.querySelector(%q).textContent`, freshCard)))
	}
	b.shot("review-pack-stale")
	consoleSemverIsApplys(t, b)

	// The key of the whole root: the same proposals over REST, read-only.
	w := b.isolated()
	w.open(whole, "#/review/acme")
	restStale, restFresh := fmt.Sprintf(`article.review[data-proposal=%q]`, same), fmt.Sprintf(`article.review[data-proposal=%q]`, newer)
	w.until("the whole-root key's queue lists both pack proposals and the pending Cairn one", fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q)
		&& [...document.querySelectorAll('article.review')].some(c => c.textContent.includes('main/outputs/other.md') && !!c.querySelector('button.accept'))`, restStale, restFresh))
	for _, c := range []struct{ card, badge string }{{restStale, "stale"}, {restFresh, "pending"}} {
		if !eval[bool](w, fmt.Sprintf(`(() => { const c = document.querySelector(%q); return c.querySelector('.badge').textContent === %q
			&& c.querySelectorAll('button').length === 0 && c.querySelector('.pack-hint').textContent.includes('bound to no tenant') })()`, c.card, c.badge)) {
			t.Errorf("the whole-root key's card reads %q, want %s, no buttons and why", eval[string](w, fmt.Sprintf(`document.querySelector(%q).textContent`, c.card)), c.badge)
		}
	}
	w.shot("review-whole-root-key")
	if st, body := consoleCall(t, "POST", b.base+"/v1/agents/acme/workbenches/openwop-packs/proposals/"+newer+"/decision", whole,
		map[string]any{"disposition": "accept", "submission_id": "forced-pack"}); st != http.StatusForbidden {
		t.Errorf("a REST decision of a pack proposal with the whole-root key answered %d %s, want 403", st, body)
	}
	wholeOW := owClient{t: t, nodes: ow.nodes, key: whole}
	if r := wholeOW.do(http.MethodPost, "/proposals/"+newer+":apply", nil, "OpenWOP-Version", "2.0"); r.status != http.StatusForbidden {
		t.Errorf("the facade's apply with the whole-root key answered %d %s, want 403", r.status, r.body)
	}
	if r := ow.do(http.MethodGet, "/proposals/"+newer, nil); r.json["state"] != "draft" {
		t.Errorf("after the refused decisions the pack proposal reads %d %s, want it a draft still", r.status, r.body)
	}

	// The tenant's key decides both in the queue.
	b.click("apply the greater version", freshCard+" button.accept")
	b.until("the apply is recorded", fmt.Sprintf(`document.getElementById('status').textContent.includes('apply of the OpenWOP pack proposal') && !document.querySelector(%q)`, freshCard))
	b.until("the other is still stale against 1.1.0", fmt.Sprintf(`!!document.querySelector(%q) && document.querySelector(%q).querySelector('.stale-hint').textContent.includes('version 1.1.0')`, staleCard, staleCard))
	b.click("reject the stale one", staleCard+" button.reject")
	b.until("the rejection is recorded", fmt.Sprintf(`document.getElementById('status').textContent.includes('reject of the OpenWOP pack proposal') && !document.querySelector(%q)`, staleCard))
	for id, state := range map[string]string{newer: "applied", same: "rejected"} {
		if r := ow.do(http.MethodGet, "/proposals/"+id, nil); r.json["state"] != state {
			t.Errorf("pack proposal %s reads %d %s, want %s", id, r.status, r.body, state)
		}
	}
}

// consoleSemverIsApplys: the page's version comparison (semver.js), which decides whether
// a pack proposal is stale, answers as the facade's apply compares versions
// (golang.org/x/mod/semver after a "v"), over every pair of a table of versions.
func consoleSemverIsApplys(t *testing.T, b *tab) {
	t.Helper()
	versions := []string{"1", "1.2", "1.0.0", "1.0.1", "1.2.0", "2.0.0", "10.0.0", "9.99.99", "1.0.0-alpha", "1.0.0-alpha.1",
		"1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0-0", "1.0.0+build", "1.0.0-01",
		"1.2-pre", "01.0.0", "x", "", "123456789012345678901234567890.0.0", "123456789012345678901234567889.9.9"}
	var want []bool
	for _, a := range versions {
		for _, c := range versions {
			want = append(want, semver.IsValid("v"+a) && semver.IsValid("v"+c) && semver.Compare("v"+a, "v"+c) > 0)
		}
	}
	list, _ := json.Marshal(versions)
	expr := fmt.Sprintf(`import('/ui/semver.js').then(m => { const v = %s; return v.flatMap(a => v.map(c => m.greater(a, c))); })`, list)
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]bool](expr, func(p *runtime.EvaluateParams) { p.AwaitPromise = ptrTrue() }))
	if err != nil || len(got) != len(want) {
		t.Fatalf("the page's semver.js: %v (%d answers, want %d)", err, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("greater(%q, %q) = %v in the page, %v for the facade", versions[i/len(versions)], versions[i%len(versions)], got[i], want[i])
		}
	}
}
