package openwop_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/cairnstore/cairn/api/openwop"
)

// BenchmarkDraftAndApply measures one proposal's draft and apply (the judge of every pack
// the tenant has, the schema check and the guarded accept) on a real single-node stack;
// the tenant holds b.N packs by the end.
func BenchmarkDraftAndApply(b *testing.B) {
	base, _ := newPacksFacade(b, nil)
	for i := range b.N {
		name := "private.acme.p" + strconv.Itoa(i)
		body := map[string]any{"kind": openwop.KindAgentPack, "artifact": agentPack(name, "1.0.0", name+".main", "p")}
		c := call(b, http.MethodPost, base+"/proposals", body, ownerHeader, tenantA, reviewHeader, "yes")
		if c.status != http.StatusCreated {
			b.Fatalf("create: %d %s", c.status, c.body)
		}
		if r := call(b, http.MethodPost, base+"/proposals/"+c.json["id"].(string)+":apply", nil, ownerHeader, tenantA, reviewHeader, "yes"); r.status != http.StatusOK {
			b.Fatalf("apply: %d %s", r.status, r.body)
		}
	}
}

// BenchmarkReadback measures getInstalledPack of one installed pack.
func BenchmarkReadback(b *testing.B) {
	base, _ := newPacksFacade(b, nil)
	c := call(b, http.MethodPost, base+"/proposals", map[string]any{"kind": openwop.KindAgentPack, "artifact": agentPack(packP, "1.0.0", agentP, "p")},
		ownerHeader, tenantA, reviewHeader, "yes")
	if r := call(b, http.MethodPost, base+"/proposals/"+c.json["id"].(string)+":apply", nil, ownerHeader, tenantA, reviewHeader, "yes"); r.status != http.StatusOK {
		b.Fatalf("apply: %d %s", r.status, r.body)
	}
	b.ResetTimer()
	for range b.N {
		if r := call(b, http.MethodGet, base+"/installed-packs/"+packP, nil, ownerHeader, tenantA); r.status != http.StatusOK {
			b.Fatalf("readback: %d", r.status)
		}
	}
}
