package etcdtest_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/internal/etcdtest"
)

// A value written before a member stops is read back from it after its restart, and the
// cluster serves while one of three members is stopped.
func TestAMemberRestartsOnItsDataAndTheClusterServesMeanwhile(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "before"); err != nil {
		t.Fatal(err)
	}
	c.Stop(2)
	c.Stop(2) // a no-op
	if _, err := cli.Put(ctx, "k", "during"); err != nil {
		t.Fatalf("put with one of three members stopped: %v", err)
	}
	c.Restart(2)
	one, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(2), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	resp, err := one.Get(ctx, "k") // linearizable: the restarted member caught up
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "during" {
		t.Fatalf("get through the restarted member: %v %v", resp, err)
	}
}
