package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// rlo is RIGHT-TO-LEFT OVERRIDE: the text after it displays reversed, so that
// "Invoice<RLO>gpj.exe" reads "Invoiceexe.jpg".
const rlo = "\u202E"

// TestConsoleOnASharedBrowser: what one person leaves in a browser and what stored text
// can make the page show. Forget key removes every unsaved draft, after a confirmation
// naming how many; a reason with a bidirectional override shows the override as an
// escape and cannot reorder the text beside it (a title cannot hold one: the create is
// refused), and a document's title shows isolated; the live feed shows the events it
// already held apart from the new ones.
func TestConsoleOnASharedBrowser(t *testing.T) {
	chromiumPath(t)
	dir := t.TempDir()
	writer := framework.CreateKey(t, cairnRaceBin, nil, "writer", "--data-dir", dir, "--tenant", "acme", "--workspace", "main",
		"--scope", "workspace:read,workspace:write,review").Secret
	p := framework.StartProcess(t, cairnRaceBin, dir, "--auth", "required")
	consolePut(t, p.URL, writer, "main", "input/standup.md", "Decided: ship on Friday.\n")
	docID := consoleBidiDocument(t, p.URL, writer, consoleOrigin(t, p.URL, writer))
	st, body := consoleCall(t, "POST", p.URL+"/v1/agents/acme/workbenches/main/proposals", writer, map[string]any{
		"path": "outputs/plan.md", "base_generation": 0, "text": "plan " + rlo + "edoc\n", "reason": "approve" + rlo + "txt.exe",
		"request_id": "bidi-proposal"})
	if st/100 != 2 {
		t.Fatalf("propose: %d %s", st, body)
	}

	b := newBrowser(t, p.URL)
	b.open(writer, "#/documents")
	t.Run("stored text cannot reorder the page", func(t *testing.T) {
		s := consoleStep(t, b)
		s.within("the document is listed", `document.querySelectorAll('#main tbody a').length > 0`)
		consoleIsolated(s, "the document list", "Invoice gpj.exe")
		s.do("open the document", chromedp.Navigate(p.URL+"/ui/#/documents/"+url.PathEscape(docID)))
		s.within("the document", `!!document.getElementById('doc-title') && !!document.getElementById('edit-body')`)
		consoleIsolated(s, "the document", "Invoice gpj.exe")
		s.do("open the review queue", chromedp.Navigate(p.URL+"/ui/#/review/acme"))
		s.within("the proposal", `!!document.querySelector('#main article.review pre.diff')`)
		consoleIsolated(s, "the review queue", "approve⟨U+202E⟩txt.exe")
	})
	t.Run("forget key removes every draft", func(t *testing.T) {
		s := consoleStep(t, b)
		s.do("open the document", chromedp.Navigate(p.URL+"/ui/#/documents/"+url.PathEscape(docID)))
		s.within("the editor", `!!document.getElementById('edit-body')`)
		s.do("type a draft", chromedp.SendKeys(chromedp.CSS("#edit-body"), "\nPrivate: the offer is 40k."))
		// A draft another key's owner left in this browser.
		eval[bool](s, `(localStorage.setItem('cairn.draft.other/ws/doc-1', '{"title":"t","body":"theirs","baseVersionId":"v"}'), true)`)
		drafts := `Object.keys(localStorage).filter(k => k.startsWith('cairn.draft.')).length`
		if n := eval[int](s, drafts); n != 2 {
			t.Fatalf("the browser holds %d drafts, want the one typed and the other owner's", n)
		}
		if msg := consoleForget(s, false); !strings.Contains(msg, "2 unsaved drafts") {
			t.Errorf("the confirmation reads %q, want the number of drafts lost", msg)
		}
		if n, kept := eval[int](s, drafts), eval[bool](s, `!!sessionStorage.getItem('cairn.key') && document.getElementById('key-form').hidden`); n != 2 || !kept {
			t.Errorf("after a dismissed confirmation: %d drafts, key kept %v; want both kept", n, kept)
		}
		consoleForget(s, true)
		s.afterReload("the key is forgotten", `!document.getElementById('key-form').hidden && !sessionStorage.getItem('cairn.key')`)
		if n := eval[int](s, drafts); n != 0 {
			t.Errorf("after Forget key the browser still holds %d drafts", n)
		}
	})
	t.Run("the feed shows what it held apart from what is new", func(t *testing.T) {
		s := b.isolated()
		s.t = t
		s.open(writer, "#/feed/acme")
		s.within("the feed is live, the earlier events listed apart", `document.getElementById('feed-state').textContent.startsWith('Live')
			&& [...document.querySelectorAll('#feed-history li')].some(l => l.textContent.includes('input/standup.md'))
			&& document.getElementById('feed-history-h').textContent.includes('already held')`)
		if old := eval[int](s, `[...document.querySelectorAll('#feed li')].filter(l => l.textContent.includes('input/standup.md')).length`); old != 0 {
			t.Errorf("%d events written before the page connected show as new", old)
		}
		consolePut(t, p.URL, writer, "main", "outputs/news.txt", "news")
		s.within("the new write shows as new", `[...document.querySelectorAll('#feed li')].some(l => l.textContent.includes('outputs/news.txt'))`)
		if n := eval[int](s, `(() => { const ids = [...document.querySelectorAll('#feed li, #feed-history li')].map(l => l.dataset.id); return ids.length - new Set(ids).size })()`); n != 0 {
			t.Errorf("the feed shows %d events twice", n)
		}
	})
}

// consoleBidiDocument creates a working document from origin whose body holds an
// override, and returns its id. A title holding one is refused (api/documents/title.go).
func consoleBidiDocument(t *testing.T, base, key, origin string) string {
	t.Helper()
	doc := map[string]any{"originEventId": origin, "title": "Invoice" + rlo + "gpj.exe", "body": "# Notes\n" + rlo + "olleh\n", "requestId": "bidi-document"}
	if st, body := consoleCall(t, "POST", base+"/api/workbench/documents", key, doc); st != 400 || !strings.Contains(string(body), `"rule":"bidi-control"`) {
		t.Fatalf("a title holding an override: %d %s, want 400 bidi-control", st, body)
	}
	doc["title"] = "Invoice gpj.exe"
	st, body := consoleCall(t, "POST", base+"/api/workbench/documents", key, doc)
	var d struct {
		DocumentID string `json:"documentId"`
	}
	if st/100 != 2 || json.Unmarshal(body, &d) != nil || d.DocumentID == "" {
		t.Fatalf("create the document: %d %s", st, body)
	}
	return d.DocumentID
}

// consoleIsolated checks the page on screen: it shows want (stored text whose override
// is escaped), each time as the only text of an element that isolates it, and no
// explicit directional formatting character outside a <pre> (a body, shown as written).
func consoleIsolated(s *tab, where, want string) {
	s.t.Helper()
	bad := eval[string](s, fmt.Sprintf(`(() => {
		const want = %q, controls = /[\u202A-\u202E\u2066-\u2069]/, bad = [];
		let shown = 0;
		const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
		for (let n; (n = w.nextNode()); ) {
			const p = n.parentElement;
			if (p.closest('pre')) continue;
			if (controls.test(n.data)) bad.push('a control acts in ' + JSON.stringify(p.textContent));
			if (!n.data.includes(want)) continue;
			shown++;
			const ub = getComputedStyle(p).unicodeBidi;
			if (p.childNodes.length !== 1 || (ub !== 'isolate' && ub !== 'plaintext')) {
				bad.push('not isolated: <' + p.tagName.toLowerCase() + '> (unicode-bidi ' + ub + ', ' + p.childNodes.length + ' nodes) ' + JSON.stringify(p.textContent));
			}
		}
		if (!shown) bad.push('not shown as ' + want);
		return bad.join('\n');
	})()`, want))
	if bad != "" {
		s.t.Errorf("%s:\n%s", where, bad)
	}
}

// afterReload waits until expr is truthy on a page that reloads meanwhile (an
// evaluation in the page that goes away fails, and is tried again on the next).
func (b *tab) afterReload(what, expr string) {
	b.t.Helper()
	retry.Within(b.t, pagesWait, what, func() error {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr))
		if err == nil && !ok {
			err = fmt.Errorf("%s is false", expr)
		}
		return err
	})
}

// consoleForget clicks Forget key and answers its confirmation (accept or dismiss); it
// returns the confirmation's message.
func consoleForget(s *tab, accept bool) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, pagesWait)
	defer cancel()
	opened := make(chan string, 1)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			select { // Listen's function must not block
			case opened <- e.Message:
			default:
			}
		}
	}); err != nil {
		s.t.Fatal(err)
	}
	// The click lasts as long as the dialog it opens.
	clicked := make(chan error, 1)
	go func() { clicked <- chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#forget-key"))) }()
	var msg string
	select {
	case msg = <-opened:
	case err := <-clicked:
		s.t.Fatalf("Forget key asked for no confirmation (click: %v)", err)
	case <-time.After(pagesWait):
		s.t.Fatal("Forget key opened no confirmation")
	}
	if _, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept}); err != nil {
		s.t.Fatalf("answer the confirmation: %v", err)
	}
	if err := <-clicked; err != nil {
		s.t.Fatalf("click Forget key: %v", err)
	}
	return msg
}
