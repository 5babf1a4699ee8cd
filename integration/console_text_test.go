package integration

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/cairnstore/cairn/integration/framework"
)

// rlo is RIGHT-TO-LEFT OVERRIDE: the text after it displays reversed, so that
// "Invoice<RLO>gpj.exe" reads "Invoiceexe.jpg".
const rlo = "\u202E"

// TestConsoleOnASharedBrowser: what one person leaves in a browser and what stored text
// can make the page show: a title or reason with a bidirectional override shows the
// override as an escape and cannot reorder the text beside it.
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
		consoleIsolated(s, "the document list", "Invoice⟨U+202E⟩gpj.exe")
		s.do("open the document", chromedp.Navigate(p.URL+"/ui/#/documents/"+url.PathEscape(docID)))
		s.within("the document", `!!document.getElementById('doc-title') && !!document.getElementById('edit-body')`)
		consoleIsolated(s, "the document", "Invoice⟨U+202E⟩gpj.exe")
		s.do("open the review queue", chromedp.Navigate(p.URL+"/ui/#/review/acme"))
		s.within("the proposal", `!!document.querySelector('#main article.review pre.diff')`)
		consoleIsolated(s, "the review queue", "approve⟨U+202E⟩txt.exe")
	})
}

// consoleBidiDocument creates a working document from origin whose title and body hold
// an override, and returns its id.
func consoleBidiDocument(t *testing.T, base, key, origin string) string {
	t.Helper()
	st, body := consoleCall(t, "POST", base+"/api/workbench/documents", key, map[string]any{
		"originEventId": origin, "title": "Invoice" + rlo + "gpj.exe", "body": "# Notes\n" + rlo + "olleh\n", "requestId": "bidi-document"})
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
