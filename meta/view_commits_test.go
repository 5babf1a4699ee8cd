package meta

import (
	"fmt"
	"slices"
	"testing"
)

// TestCommitsListNewestFirstInPages: LifecycleView.Commits lists a workbench's commits by
// sealing version, newest first, whatever order their identities sort in; pages of every
// size continue exactly after the previous page's last commit; a view at an older version
// does not see later commits; a workbench created again under the same name lists none of
// its predecessor's.
func TestCommitsListNewestFirstInPages(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.put("outputs/r.txt", "v0")
	// Identities in an order unlike their sealing order (the table is keyed by identity).
	order := []int{7, 3, 9, 1, 5, 8, 2}
	var sealed []*CommitRecord // oldest first
	head := ""
	for i, id := range order {
		h.put("outputs/r.txt", fmt.Sprintf("v%d", i+1))
		ws, _ := h.f.View().Workspace("a", "w")
		r := h.do(Commit{Agent: "a", Workspace: "w", ExpectRevision: ws.Revision, ExpectHead: head, Replace: head != "",
			Identity: hexID(id), ContentDigestURI: uri(1), ManifestDigestURI: uri(2), TreeDigestURI: uri(3),
			Envelope: envBody(fmt.Sprintf(`{"commit":%d}`, id))})
		if r.Err != nil {
			t.Fatalf("commit %d: %v", id, r.Err)
		}
		sealed = append(sealed, r.Commit)
		head = hexID(id)
	}
	want := slices.Clone(sealed)
	slices.Reverse(want)
	identities := func(cs []*CommitRecord) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.Identity[60:]
		}
		return out
	}
	v := h.f.View()
	ws, _ := v.Workspace("a", "w")
	for _, limit := range []int{1, 2, 3, len(order), len(order) + 5} {
		var got []*CommitRecord
		var after *CommitRecord
		for pages := 0; ; pages++ {
			if pages > len(order) {
				t.Fatalf("limit %d: more pages than commits", limit)
			}
			page, more := v.Lifecycle().Commits(ws, after, limit)
			if len(page) > limit || more && len(page) != limit {
				t.Fatalf("limit %d: a page of %d, more %v", limit, len(page), more)
			}
			got = append(got, page...)
			if !more {
				break
			}
			after = page[len(page)-1]
		}
		if !slices.Equal(identities(got), identities(want)) {
			t.Errorf("limit %d: listed %v, want %v", limit, identities(got), identities(want))
		}
	}

	// At the version of the third commit, the four after it do not exist yet.
	old, err := v.At(sealed[2].Version)
	if err != nil {
		t.Fatal(err)
	}
	if page, more := old.Lifecycle().Commits(ws, nil, 100); more || !slices.Equal(identities(page), identities(want[len(want)-3:])) {
		t.Errorf("at version %d: listed %v (more %v), want %v", sealed[2].Version, identities(page), more, identities(want[len(want)-3:]))
	}

	// A workbench made again under the name lists nothing of its predecessor's.
	if r := h.do(DeleteWorkspace{Agent: "a", Name: "w"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	h.put("outputs/r.txt", "again")
	v = h.f.View()
	ws, _ = v.Workspace("a", "w")
	if page, more := v.Lifecycle().Commits(ws, nil, 100); len(page) != 0 || more {
		t.Errorf("the new workbench lists %v (more %v), want none", identities(page), more)
	}
}
