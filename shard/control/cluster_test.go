package control

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestCreateCluster(t *testing.T) {
	etcd := startEtcd(t, 1)
	p := newPlane(t, etcd.client(), testConfig(t))
	ctx := ctxTimeout(t, 20*time.Second)

	// Eight nodes start at once with the same flags: all see one cluster.
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Go(func() {
			c, err := p.CreateCluster(ctx, ClusterSpec{Shards: 8, Blob: "s3://bucket/prefix"})
			ids[i], errs[i] = c.ID, err
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] || ids[i] == "" {
			t.Fatalf("concurrent creation %d: id %q err %v; want id %q, no error", i, ids[i], errs[i], ids[0])
		}
	}
	got, err := p.Cluster(ctx)
	if err != nil || got.ID != ids[0] || got.Shards != 8 || got.Replication != DefaultReplication {
		t.Fatalf("Cluster() = %+v, %v; want id %s, 8 shards, replication %d", got, err, ids[0], DefaultReplication)
	}

	tests := []struct {
		name      string
		spec      ClusterSpec
		wantField string // "" = no error
	}{
		{"the same shard count is accepted again", ClusterSpec{Shards: 8}, ""},
		{"joining without a shard count is accepted", ClusterSpec{}, ""},
		{"the same replication factor is accepted", ClusterSpec{Shards: 8, Replication: 3}, ""},
		{"another shard count is refused", ClusterSpec{Shards: 4}, "shards"},
		{"another replication factor is refused", ClusterSpec{Shards: 8, Replication: 5}, "replication"},
		{"the same blob store is accepted", ClusterSpec{Blob: "s3://bucket/prefix"}, ""},
		{"another blob store is refused", ClusterSpec{Blob: "s3://other"}, "blob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := p.CreateCluster(ctx, tt.spec)
			if tt.wantField == "" {
				if err != nil || c.ID != ids[0] {
					t.Fatalf("CreateCluster(%+v) = %+v, %v; want the existing cluster", tt.spec, c, err)
				}
				return
			}
			var me *MismatchError
			if !errors.Is(err, ErrClusterMismatch) || !errors.As(err, &me) || me.Field != tt.wantField {
				t.Fatalf("CreateCluster(%+v) error = %v; want a MismatchError on %s", tt.spec, err, tt.wantField)
			}
			if after, _ := p.Cluster(ctx); after.Shards != 8 || after.Replication != 3 {
				t.Fatalf("a refused creation changed the cluster: %+v", after)
			}
		})
	}

	t.Run("joining a prefix without a cluster fails", func(t *testing.T) {
		cfg := testConfig(t)
		other := newPlane(t, etcd.client(), cfg)
		if _, err := other.CreateCluster(ctx, ClusterSpec{}); !errors.Is(err, ErrClusterNotCreated) {
			t.Fatalf("join of an empty prefix: %v, want ErrClusterNotCreated", err)
		}
	})
	t.Run("a shard count out of range is invalid", func(t *testing.T) {
		if _, err := p.CreateCluster(ctx, ClusterSpec{Shards: -1}); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("shards -1: %v, want ErrInvalidArgument", err)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"the defaults are valid", DefaultConfig(), true},
		{"a prefix ending in a slash is refused", Config{Prefix: "/cairn/", RequestTimeout: time.Second, NodeTTL: time.Second}, false},
		{"a fractional node TTL is refused", Config{Prefix: "/c", RequestTimeout: time.Second, NodeTTL: 1500 * time.Millisecond}, false},
		{"a zero request timeout is refused", Config{Prefix: "/c", NodeTTL: time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
				t.Fatalf("Validate(%+v) = %v, want ok=%v", tt.cfg, err, tt.ok)
			}
		})
	}
}
