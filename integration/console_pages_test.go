package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/cairnstore/cairn/integration/framework"
)

// TestConsoleBrowsesEveryPageAndAnyBody: Browse reaches every workbench of a root, every
// entry of a directory and every retained version of a file past their first page
// (100), says when a text is shown cut and does not show a binary body as text.
func TestConsoleBrowsesEveryPageAndAnyBody(t *testing.T) {
	chromiumPath(t)
	dir := t.TempDir()
	writer := framework.CreateKey(t, cairnRaceBin, nil, "writer", "--data-dir", dir, "--agent", "acme", "--scope", "workspace:read,workspace:write").Secret
	p := framework.StartProcess(t, cairnRaceBin, dir, "--auth", "required")
	consoleWorkbenches(t, p.URL, writer, 100)
	for i := range 101 {
		consolePut(t, p.URL, writer, "main", fmt.Sprintf("input/many/f%03d.txt", i), "x")
		consolePut(t, p.URL, writer, "main", "outputs/log.txt", fmt.Sprintf("version %d\n", i))
	}
	consolePut(t, p.URL, writer, "main", "outputs/accents.txt", strings.Repeat("é", 150_000)) // 300,000 bytes
	consolePut(t, p.URL, writer, "main", "outputs/blob.bin", "\x00\x01\x02binary\xff")
	consolePut(t, p.URL, writer, "main", "outputs/gone.txt", "soon deleted")
	if st, body := consoleCall(t, "DELETE", p.URL+"/v1/agents/acme/workbenches/main/files/outputs/gone.txt", writer, nil); st/100 != 2 {
		t.Fatalf("delete outputs/gone.txt: %d %s", st, body)
	}
	long := strings.Repeat("n", 1000) + ".txt"
	consolePut(t, p.URL, writer, "main", "outputs/"+long, "a long name")

	b := newBrowser(t, p.URL)
	b.open(writer, "#/browse/acme")
	more := func(s *tab, what, route string, first, all int) {
		s.t.Helper()
		s.do("open "+what, chromedp.Navigate(p.URL+"/ui/#/browse/acme"+route))
		s.within("the first page of "+what, fmt.Sprintf(`document.querySelectorAll('#main tbody tr').length === %d && !!document.querySelector('button.show-more:not([hidden])')`, first))
		s.click("show more", "button.show-more")
		s.within("every one of "+what, fmt.Sprintf(`document.querySelectorAll('#main tbody tr').length === %d && document.querySelector('button.show-more').hidden`, all))
	}
	t.Run("every workbench is reachable", func(t *testing.T) { more(consoleStep(t, b), "the workbenches", "", 100, 101) })
	t.Run("every entry of a directory is reachable", func(t *testing.T) {
		more(consoleStep(t, b), "the entries", "/main/input/many", 100, 101)
	})
	t.Run("every retained version is reachable", func(t *testing.T) {
		more(consoleStep(t, b), "the versions", "/main/~file/outputs/log.txt", 100, 101)
	})
	t.Run("a directory written to between two pages is listed again", func(t *testing.T) {
		s := consoleStep(t, b)
		s.do("open the entries", chromedp.Navigate(p.URL+"/ui/#/browse/acme/main/input/many"))
		s.within("the first page", `document.querySelectorAll('#main tbody tr').length === 100 && !!document.querySelector('button.show-more:not([hidden])')`)
		consolePut(t, p.URL, writer, "main", "input/many/f101.txt", "x")
		s.click("show more", "button.show-more")
		s.within("every entry, listed again, and why", `document.querySelectorAll('#main tbody tr').length === 102
			&& document.getElementById('main').textContent.includes('changed meanwhile: listed again from the start')`)
	})
	t.Run("a deletion is in the history", func(t *testing.T) {
		s := consoleStep(t, b)
		s.do("open the file", chromedp.Navigate(p.URL+"/ui/#/browse/acme/main/~file/outputs/gone.txt"))
		s.within("the deletion and the version before it", `document.querySelectorAll('#main tbody tr').length === 2
			&& document.querySelector('#main tbody tr').textContent.includes('deleted')`)
	})
	t.Run("a long name does not widen the page", func(t *testing.T) {
		s := consoleStep(t, b)
		s.do("open the section", chromedp.Navigate(p.URL+"/ui/#/browse/acme/main/outputs"))
		s.within("the long name", fmt.Sprintf(`document.getElementById('main').textContent.includes(%q)`, long))
		if w := eval[string](s, `document.documentElement.scrollWidth + ' > ' + document.documentElement.clientWidth`); !strings.HasPrefix(w, "1280 ") {
			t.Errorf("the page is %s pixels wide: a long name widens it", w)
		}
	})
	t.Run("a text cut after 256 KiB says so", func(t *testing.T) {
		s := consoleStep(t, b)
		s.do("open the file", chromedp.Navigate(p.URL+"/ui/#/browse/acme/main/~file/outputs/accents.txt"))
		s.within("the start and the note", `(document.getElementById('file-content')||{}).textContent?.includes('only the first 262144 of 300000 bytes shown')`)
		if got := eval[string](s, `document.getElementById('file-content').textContent.split('\n')[0]`); strings.Trim(got, "é") != "" {
			t.Errorf("the shown text holds more than the file's characters: %q", got[max(0, len(got)-20):])
		}
	})
	t.Run("a binary body is not shown as text", func(t *testing.T) {
		s := consoleStep(t, b)
		s.do("open the file", chromedp.Navigate(p.URL+"/ui/#/browse/acme/main/~file/outputs/blob.bin"))
		s.within("the binary note", `(document.getElementById('file-content')||{}).textContent?.includes('Not UTF-8 text') && !!document.getElementById('show-binary')`)
		s.click("show it anyway", "#show-binary")
		s.within("the body as text", `document.getElementById('file-content').textContent.includes('binary')`)
	})
}
