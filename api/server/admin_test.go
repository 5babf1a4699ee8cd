package server

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

func TestAdminRoutesAreServedOnTheAdminListenerOnly(t *testing.T) {
	n, base := serveNode(t, testConfig(t))
	admin := "http://" + n.AdminAddr().String()
	if admin == base {
		t.Fatalf("the admin listener is the client listener (%s)", base)
	}
	if code, b := httpDo(t.Context(), http.MethodPut, base+"/v1/agents/a/workbenches/w/files/input/x", bytes.Repeat([]byte("x"), 8<<10)); code != http.StatusCreated {
		t.Fatalf("put: %d %s", code, b)
	}
	// The tenant listener does not serve the dry run that lists every agent's digests.
	code, b := httpDo(t.Context(), http.MethodPost, base+"/v1/admin/gc", []byte(`{"dry_run":true}`))
	if code != http.StatusNotFound || !bytes.Contains(b, []byte(`"NotFound"`)) {
		t.Fatalf("admin GC on the client listener: %d %s, want 404 NotFound", code, b)
	}
	code, b = httpDo(t.Context(), http.MethodPost, admin+"/v1/admin/gc", []byte(`{"dry_run":true}`))
	if code != http.StatusOK || !bytes.Contains(b, []byte(`"dry_run":true`)) {
		t.Fatalf("admin GC on the admin listener: %d %s", code, b)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, b := httpDo(t.Context(), http.MethodGet, admin+path, nil); code != http.StatusOK {
			t.Errorf("%s on the admin listener: %d %.200s", path, code, b)
		}
	}
	if code, _ := httpDo(t.Context(), http.MethodGet, admin+"/v1/agents/a/workbenches/w", nil); code != http.StatusNotFound {
		t.Errorf("a tenant route on the admin listener: %d, want 404", code)
	}
	// The admin listener checks Host and Origin like the client listener.
	code, _, b = send(t, http.MethodPost, admin+"/v1/admin/gc", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}, `{}`)
	wantForbidden(t, "a cross-site admin GC", code, b, "Sec-Fetch-Site")
	if !strings.HasPrefix(n.AdminAddr().String(), "127.0.0.1:") {
		t.Errorf("the admin listener is not on loopback: %s", n.AdminAddr())
	}
}
