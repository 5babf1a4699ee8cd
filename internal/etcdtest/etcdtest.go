package etcdtest

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/cairnstore/cairn/internal/freeport"
)

// readyTimeout bounds the wait for a started member to serve.
const readyTimeout = 30 * time.Second

// Cluster is a running etcd cluster of in-process members.
type Cluster struct {
	tb      testing.TB
	members []*member
}

type member struct {
	cfg *embed.Config
	e   *embed.Etcd // nil while stopped
}

// Start starts a one-member cluster.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	return StartCluster(tb, 1)
}

// StartCluster starts a cluster of n members and waits until every member serves.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	dir := tb.TempDir()
	c := &Cluster{tb: tb}
	var initial []string
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		peer, client := freeport.URL(tb), freeport.URL(tb)
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.InitialClusterToken = "cairn-test"
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.LogLevel = "error"
		cfg.TickMs, cfg.ElectionMs = 25, 250
		cfg.UnsafeNoFsync = true
		initial = append(initial, cfg.Name+"="+peer.String())
		c.members = append(c.members, &member{cfg: cfg})
	}
	for _, m := range c.members {
		m.cfg.InitialCluster = strings.Join(initial, ",")
	}
	tb.Cleanup(func() {
		for i := range c.members {
			c.Stop(i)
		}
	})
	// The members of a new cluster wait for each other: start them all, then wait.
	for i := range c.members {
		c.launch(i)
	}
	for i := range c.members {
		c.waitReady(i)
	}
	return c
}

func (c *Cluster) launch(i int) {
	c.tb.Helper()
	e, err := embed.StartEtcd(c.members[i].cfg)
	if err != nil {
		c.tb.Fatalf("etcdtest: start member %d: %v", i, err)
	}
	c.members[i].e = e
}

func (c *Cluster) waitReady(i int) {
	c.tb.Helper()
	e := c.members[i].e
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		c.tb.Fatalf("etcdtest: member %d: %v", i, err)
	case <-time.After(readyTimeout):
		c.tb.Fatalf("etcdtest: member %d not ready within %v", i, readyTimeout)
	}
}

// Stop stops member i and waits until it has stopped; it does nothing when i is stopped.
func (c *Cluster) Stop(i int) {
	if m := c.members[i]; m.e != nil {
		m.e.Close()
		<-m.e.Server.StopNotify()
		m.e = nil
	}
}

// Restart starts the stopped member i again on its ports and data and waits until it
// serves.
func (c *Cluster) Restart(i int) {
	c.tb.Helper()
	if c.members[i].e != nil {
		c.tb.Fatalf("etcdtest: Restart of running member %d", i)
	}
	c.members[i].cfg.ClusterState = embed.ClusterStateFlagExisting
	c.launch(i)
	c.waitReady(i)
}

// Endpoint returns the client address ("127.0.0.1:<port>") of member 0, the only one of
// a cluster from Start.
func (c *Cluster) Endpoint() string { return c.Endpoints(0)[0] }

// Endpoints returns the client addresses of the given members, of all when none is given.
func (c *Cluster) Endpoints(idx ...int) []string {
	if len(idx) == 0 {
		for i := range c.members {
			idx = append(idx, i)
		}
	}
	var eps []string
	for _, i := range idx {
		eps = append(eps, c.members[i].cfg.ListenClientUrls[0].Host)
	}
	return eps
}
