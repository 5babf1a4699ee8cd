package control

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDecommissionMarksOnlyNodesTheClusterKnows: Decommission and Recommission name a node
// by its id or by a prefix only one known id starts with, and answer with the full id; an
// id the cluster does not know, or a prefix of several, is refused before anything is
// written; a node that already left is marked again without error, and said to be gone.
func TestDecommissionMarksOnlyNodesTheClusterKnows(t *testing.T) {
	p := newPlane(t, startEtcd(t, 1).client(), testConfig(t))
	ctx := ctxTimeout(t, 30*time.Second)
	for _, id := range []string{"4d6574e9-aaaa", "4d6574e9-bbbb", "n-x", "n-x2", "c0ffee-gone"} {
		r, err := p.Register(ctx, id, NodeInfo{ClientURL: "http://" + id, Instance: "instance-of-" + id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if id == "c0ffee-gone" { // it joined, and has left: bound to its data directory only
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// "d0wn-node" is in a replica set only (it crashed; its lease ran out).
	for s, rec := range []string{`{"voters":["4d6574e9-aaaa","4d6574e9-bbbb","n-x"],"nonvoters":[]}`, `{"voters":["d0wn-node"],"nonvoters":["4d6574e9-aaaa"]}`} {
		if _, err := p.cli.Put(ctx, p.k.shard(s), rec); err != nil {
			t.Fatal(err)
		}
	}
	// A mark of an id no node ever had, as a release before this check wrote.
	if _, err := p.cli.Put(ctx, p.k.leavingNode("stale-mark"), "2020-01-01T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	marks := func() []string {
		t.Helper()
		m, err := p.Leaving(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(m))
	}

	for _, tc := range []struct{ node, sentinel, reason string }{
		{"garbage", "not found", `no node of the cluster has the id "garbage" or an id that starts with it`},
		{"00000000-0000-0000-0000-000000000000", "not found", `no node of the cluster has the id "00000000-0000-0000-0000-000000000000"`},
		{"stale-mark", "not found", `no node of the cluster has the id "stale-mark"`},
		{"4d6574e9", "invalid", `node id "4d6574e9" is ambiguous: 2 node ids start with it (4d6574e9-aaaa, 4d6574e9-bbbb); give more of the id`},
		{"a/b", "invalid", `node id "a/b": byte 1 is '/'`},
	} {
		_, err := p.Decommission(ctx, tc.node, time.Now())
		want := map[string]error{"not found": ErrNodeNotFound, "invalid": ErrInvalidArgument}[tc.sentinel]
		if !errors.Is(err, want) || !strings.HasPrefix(PublicReason(err, ""), tc.reason) {
			t.Errorf("Decommission(%q): %v (reason %q); want %s, %q", tc.node, err, PublicReason(err, ""), tc.sentinel, tc.reason)
		}
	}
	if got := marks(); !slices.Equal(got, []string{"stale-mark"}) {
		t.Fatalf("leaving marks after the refused calls: %v; want only the stale one", got)
	}

	for _, tc := range []struct {
		node string
		want NodeMark
	}{
		{"4d6574e9-a", NodeMark{ID: "4d6574e9-aaaa", Registered: true, Shards: []int{0, 1}}},
		{"4d6574e9-aaaa", NodeMark{ID: "4d6574e9-aaaa", Registered: true, Shards: []int{0, 1}, WasLeaving: true}},
		{"n-x", NodeMark{ID: "n-x", Registered: true, Shards: []int{0}}}, // the id itself, though n-x2 starts with it
		{"c0ffee", NodeMark{ID: "c0ffee-gone"}},                          // gone: marked again, no error
		{"c0ffee-gone", NodeMark{ID: "c0ffee-gone", WasLeaving: true}},
		{"d0wn", NodeMark{ID: "d0wn-node", Shards: []int{1}}},
	} {
		got, err := p.Decommission(ctx, tc.node, time.Now())
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Decommission(%q) = %+v, %v; want %+v", tc.node, got, err, tc.want)
		}
	}
	if got := marks(); !slices.Equal(got, []string{"4d6574e9-aaaa", "c0ffee-gone", "d0wn-node", "n-x", "stale-mark"}) {
		t.Fatalf("leaving marks: %v", got)
	}

	// Recommission knows an id only marked leaving, so that such a mark can be cleared.
	for _, tc := range []struct {
		node       string
		id         string
		wasLeaving bool
	}{{"stale", "stale-mark", true}, {"4d6574e9-aa", "4d6574e9-aaaa", true}, {"4d6574e9-aaaa", "4d6574e9-aaaa", false}, {"n-x2", "n-x2", false}} {
		got, err := p.Recommission(ctx, tc.node)
		if err != nil || got.ID != tc.id || got.WasLeaving != tc.wasLeaving {
			t.Errorf("Recommission(%q) = %+v, %v; want %s, was leaving %v", tc.node, got, err, tc.id, tc.wasLeaving)
		}
	}
	if _, err := p.Recommission(ctx, "stale-mark"); !errors.Is(err, ErrNodeNotFound) {
		t.Errorf("Recommission of an id no longer marked nor known: %v, want ErrNodeNotFound", err)
	}
	if got := marks(); !slices.Equal(got, []string{"c0ffee-gone", "d0wn-node", "n-x"}) {
		t.Fatalf("leaving marks after the recommissions: %v", got)
	}
}
