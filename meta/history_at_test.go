package meta

import (
	"testing"
	"time"
)

// FileAtTime answers each path's body at a past command time, absent before it was
// written and after it was deleted; outside the root's retention age, or past a path's
// version cap, it refuses naming at_time.
func TestFileAtTimeAnswersInsideTheRetentionWindowOnly(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: Retention{Versions: 1, Age: time.Hour, MaxVersions: 4}})}
	h.put("f", "one") // command times 1000, 2000, ... ms
	h.put("f", "two")
	h.do(Delete{Agent: "a", Workspace: "w", Path: "f"})
	h.put("g", "g")
	v := h.f.View()
	ws, _ := v.Workspace("a", "w")
	for _, tc := range []struct {
		atMs int64
		want string
	}{{500, ""}, {1000, "one"}, {1999, "one"}, {2000, "two"}, {3000, ""}, {4000, ""}} {
		e, err := v.History().FileAtTime(ws, "f", tc.atMs)
		if err != nil {
			t.Fatalf("f at %d: %v", tc.atMs, err)
		}
		if got := ""; e != nil {
			got = string(e.Segments[0].Inline)
			if got != tc.want {
				t.Errorf("f at %d = %q, want %q", tc.atMs, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("f at %d is absent, want %q", tc.atMs, tc.want)
		}
	}
	var at2 []string
	if err := v.History().FilesAtTime(ws, "", 2000, func(p string, _ *Entry) bool { at2 = append(at2, p); return true }); err != nil || len(at2) != 1 || at2[0] != "f" {
		t.Fatalf("files at 2000 = %q, %v; want [f]", at2, err)
	}
	if _, err := v.History().FileAtTime(ws, "f", 5000); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("a time after now = %v, want InvalidArguments", err)
	}
	h.nowMs += time.Hour.Milliseconds()
	h.do(Tick{})
	tick := h.nowMs
	for range 5 {
		h.put("g", "more") // g passes its cap of 4 versions
	}
	v = h.f.View()
	ws, _ = v.Workspace("a", "w")
	if _, err := v.History().FileAtTime(ws, "f", 1000); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("a time before the retention age = %v, want InvalidArguments", err)
	}
	if _, err := v.History().FileAtTime(ws, "g", tick); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("g's version before its cap cut its history = %v, want InvalidArguments", err)
	}
	if e, err := v.History().FileAtTime(ws, "g", h.nowMs-1000); err != nil || e == nil {
		t.Fatalf("g's version inside its cap = %v, %v", e, err)
	}
}
