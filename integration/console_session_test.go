package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// TestConsoleOutlivesRestartsAndRevokedKeys: the live feed goes on after its node
// restarts, without a gap or a repeat; a key revoked while the page is open brings the
// key form back; a malformed address is no page, not a stale one.
func TestConsoleOutlivesRestartsAndRevokedKeys(t *testing.T) {
	chromiumPath(t)
	dir := t.TempDir()
	key := func(name, scopes string) framework.Key {
		return framework.CreateKey(t, cairnRaceBin, nil, name, "--data-dir", dir, "--agent", "acme", "--scope", scopes)
	}
	writer := key("writer", "workspace:read,workspace:write,admin").Secret
	// Revoking keys acts on the whole node: it takes an admin key of every root.
	operator := framework.CreateKey(t, cairnRaceBin, nil, "operator", "--data-dir", dir, "--all-agents", "--scope", "admin").Secret
	doomed := key("doomed", "workspace:read")
	doomedFeed := key("doomed-feed", "workspace:read")
	p := framework.StartProcess(t, cairnRaceBin, dir, "--auth", "required", "--admin-listen", "127.0.0.1:0")
	// The next incarnation listens where this one does: the open page reconnects there.
	p.Args = append(p.Args, "--listen", strings.TrimPrefix(p.URL, "http://"))
	consolePut(t, p.URL, writer, "main", "outputs/before.txt", "before")

	b := newBrowser(t, p.URL)
	b.open(writer, "#/feed/acme")
	t.Run("the feed goes on after the node restarts", func(t *testing.T) {
		s := consoleStep(t, b)
		s.within("the feed is live", `document.getElementById('feed-state').textContent.startsWith('Live') && document.querySelectorAll('#feed-history li').length > 0`)
		p.Stop()
		p.Restart()
		consolePut(t, p.URL, writer, "main", "outputs/after-restart.txt", "back")
		s.within("the feed shows the write after the restart", `document.getElementById('feed-state').textContent.startsWith('Live')
			&& (document.querySelector('#feed li') || {}).textContent?.includes('outputs/after-restart.txt')`)
		if n := eval[int](s, `(() => { const ids = [...document.querySelectorAll('#feed li, #feed-history li')].map(l => l.dataset.id); return ids.length - new Set(ids).size })()`); n != 0 {
			t.Errorf("the feed shows %d events twice after reconnecting", n)
		}
	})
	t.Run("a revoked key is asked for again", func(t *testing.T) {
		s := b.isolated()
		s.t = t
		s.open(doomed.Secret, "#/browse/acme")
		s.within("the workbenches", `document.querySelectorAll('#main tbody tr').length > 0`)
		revoke := exec.Command(cairnRaceBin, "admin", "key", "revoke", "--admin-server", p.AdminURL, doomed.ID)
		revoke.Env = framework.ChildEnv("CAIRN_API_KEY=" + operator)
		if out, err := revoke.CombinedOutput(); err != nil {
			t.Fatalf("revoke: %v\n%s", err, out)
		}
		// Every node refuses a revoked key within seconds: open views until one is refused.
		views := 0
		retry.Within(t, 30*time.Second, "a view after the revocation asks for a key", func() error {
			if eval[bool](s, `!document.getElementById('key-form').hidden`) {
				return nil
			}
			s.do("open another view", chromedp.Navigate(p.URL+"/ui/#/browse/acme/main/"+[]string{"outputs", "input"}[views%2]))
			views++
			return fmt.Errorf("%d views after the revocation, the page still asks for no key: %s", views, eval[string](s, `document.getElementById('main').textContent`))
		})
		s.within("the page says why", `document.getElementById('main').textContent.includes('refused this key')`)
	})
	t.Run("a feed whose key is revoked asks for a key", func(t *testing.T) {
		s := b.isolated()
		s.t = t
		s.open(doomedFeed.Secret, "#/feed/acme")
		s.within("the feed is live", `document.getElementById('feed-state').textContent.startsWith('Live')`)
		revoke := exec.Command(cairnRaceBin, "admin", "key", "revoke", "--admin-server", p.AdminURL, doomedFeed.ID)
		revoke.Env = framework.ChildEnv("CAIRN_API_KEY=" + operator)
		if out, err := revoke.CombinedOutput(); err != nil {
			t.Fatalf("revoke: %v\n%s", err, out)
		}
		// The node ends the open stream with an error frame (Unauthenticated).
		s.within("the key form is back", `!document.getElementById('key-form').hidden && document.getElementById('main').textContent.includes('refused this key')`)
	})
	t.Run("a malformed address is no page", func(t *testing.T) {
		s := consoleStep(t, b)
		s.do("open a cut link", chromedp.Navigate(p.URL+"/ui/#/browse/acme/%E0%A4%A"))
		s.within("the page says so", `document.getElementById('main').textContent.includes('not a valid console address')`)
	})
}
