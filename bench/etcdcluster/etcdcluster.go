package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Members is the cluster size.
const Members = 3

// startTimeout bounds the wait for the members to elect a leader.
const startTimeout = 60 * time.Second

// Cluster is a running three-member cluster.
type Cluster struct {
	members   []*embed.Etcd
	endpoints []string
}

// Start starts the members with their data under dir (one subdirectory each), on free
// loopback ports, and waits until the cluster serves requests or ctx is done. A port
// found free may be taken by another process before a member binds it (tests run beside
// each other): the cluster is then started again on other ports, in a directory of its
// own, at most startAttempts times in all.
func Start(ctx context.Context, dir string) (*Cluster, error) {
	var err error
	for attempt := range startAttempts {
		var c *Cluster
		c, err = start(ctx, filepath.Join(dir, fmt.Sprintf("try%d", attempt)))
		if !errors.Is(err, syscall.EADDRINUSE) {
			return c, err
		}
	}
	return nil, err
}

// startAttempts bounds how often Start tries again after a port was taken.
const startAttempts = 3

// start is one attempt of Start, with the members' data under dir.
func start(ctx context.Context, dir string) (*Cluster, error) {
	peer := make([]url.URL, Members)
	client := make([]url.URL, Members)
	var initial []string
	for i := range Members {
		p, err := freeURL()
		if err != nil {
			return nil, err
		}
		c, err := freeURL()
		if err != nil {
			return nil, err
		}
		peer[i], client[i] = p, c
		initial = append(initial, fmt.Sprintf("m%d=%s", i, p.String()))
	}
	c := &Cluster{}
	for i := range Members {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		cfg.ListenPeerUrls = []url.URL{peer[i]}
		cfg.AdvertisePeerUrls = []url.URL{peer[i]}
		cfg.ListenClientUrls = []url.URL{client[i]}
		cfg.AdvertiseClientUrls = []url.URL{client[i]}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "cairn-bench"
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.LogLevel = "error"
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("etcdcluster: start member %s: %w", cfg.Name, err)
		}
		c.members = append(c.members, e)
		c.endpoints = append(c.endpoints, client[i].Host)
	}
	wait, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for _, e := range c.members {
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			c.Close()
			return nil, fmt.Errorf("etcdcluster: member %s failed: %w", e.Config().Name, err)
		case <-wait.Done():
			c.Close()
			return nil, fmt.Errorf("etcdcluster: members not ready: %w", wait.Err())
		}
	}
	return c, nil
}

// Endpoints returns the members' client addresses, "127.0.0.1:<port>".
func (c *Cluster) Endpoints() []string { return append([]string(nil), c.endpoints...) }

// Close stops every member.
func (c *Cluster) Close() {
	for _, e := range c.members {
		e.Close()
	}
	c.members = nil
}

// freeURL returns an http URL on a loopback port that was free a moment ago.
func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("etcdcluster: find a free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return url.URL{}, errors.Join(fmt.Errorf("etcdcluster: find a free port"), err)
	}
	return url.URL{Scheme: "http", Host: addr}, nil
}
