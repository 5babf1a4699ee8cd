package control

import (
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestEachRecordReadsEveryDurableKeyOfOneRevisionAPageAtATime: 25 durable keys read three
// at a time come out in key order, once each, without the lease-bound key spaces or a key
// beside the prefix; keys written while they are read, each into a page still to come,
// are not among them (every page is read at the first page's revision), and the revision
// returned is that one.
func TestEachRecordReadsEveryDurableKeyOfOneRevisionAPageAtATime(t *testing.T) {
	etcd := startEtcd(t, 1)
	cli := etcd.client()
	cfg := testConfig(t)
	p := newPlane(t, cli, cfg)
	ctx := ctxTimeout(t, 30*time.Second)
	var want []string
	for i := range 25 {
		k := fmt.Sprintf("/roots/r%02d", i)
		want = append(want, k)
		if _, err := cli.Put(ctx, cfg.Prefix+k, "v"+k); err != nil {
			t.Fatal(err)
		}
	}
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"/nodes/n1", "/leaders/0", "/controller/x"} {
		if _, err := cli.Put(ctx, cfg.Prefix+k, "ephemeral"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, cfg.Prefix+"/roots/leased", "x", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, cfg.Prefix+"x/outside", "x"); err != nil { // shares the prefix's bytes, not its key space
		t.Fatal(err)
	}
	var got []string
	rev, err := p.EachRecord(ctx, 3, func(r Record) error {
		if string(r.Value) != "v"+r.Key {
			t.Errorf("%s = %q", r.Key, r.Value)
		}
		got = append(got, r.Key)
		if late := len(got) + 3; late < 25 { // a page or more ahead of this one
			if _, err := cli.Put(ctx, fmt.Sprintf("%s/roots/r%02d-late", cfg.Prefix, late), "late"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	resp, err := cli.Get(ctx, cfg.Prefix+"/roots/r24")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision > rev {
		t.Fatalf("revision %d: the last record %v, %v", rev, resp, err)
	}
	if _, err := p.EachRecord(ctx, 0, func(Record) error { return nil }); err == nil {
		t.Fatal("a page of 0 keys was accepted")
	}
}
