package bench

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdMaxValueBytes is the largest body the etcd baseline puts: etcd refuses requests
// above 1.5 MiB by default (--max-request-bytes), key and framing included.
const etcdMaxValueBytes = 1 << 20

// etcdDialTimeout bounds connecting to the etcd cluster.
const etcdDialTimeout = 10 * time.Second

// etcdPrefix is the key prefix of every key the baseline writes.
const etcdPrefix = "/cairn-bench-baseline/"

// etcdBaseline is BaselineEtcd bound to a run: one client (one gRPC connection per
// endpoint, multiplexed), as an application would share it.
type etcdBaseline struct {
	c         *clientv3.Client
	prefix    string
	sizeBytes int64
	nonce     uint64
}

func openEtcdBaseline(ctx context.Context, cfg Config, nonce uint64) (*etcdBaseline, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: cfg.EtcdEndpoints, DialTimeout: etcdDialTimeout, Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("etcd baseline: %w", err)
	}
	b := &etcdBaseline{c: c, prefix: fmt.Sprintf("%s%016x/", etcdPrefix, nonce), sizeBytes: cfg.SizeBytes, nonce: nonce}
	// Fail now, not as a phase of errors, when the cluster does not answer.
	sctx, cancel := context.WithTimeout(ctx, etcdDialTimeout)
	defer cancel()
	if _, err := c.Get(sctx, b.prefix, clientv3.WithCountOnly()); err != nil {
		c.Close()
		return nil, fmt.Errorf("etcd baseline: %v: %w", cfg.EtcdEndpoints, err)
	}
	return b, nil
}

func (b *etcdBaseline) phase(ctx context.Context, i int) (Op, func() error, error) {
	prefix := fmt.Sprintf("%sp%d/", b.prefix, i)
	op := OpFunc(func(ctx context.Context, seq uint64) error {
		_, err := b.c.Put(ctx, fmt.Sprintf("%s%09d", prefix, seq), string(payloadBytes(b.nonce, seq, b.sizeBytes)))
		return err
	})
	return op, func() error {
		if _, err := b.c.Delete(context.WithoutCancel(ctx), prefix, clientv3.WithPrefix()); err != nil {
			return fmt.Errorf("etcd baseline: clean up: %w", err)
		}
		return nil
	}, nil
}

func (b *etcdBaseline) Close() error { return b.c.Close() }
