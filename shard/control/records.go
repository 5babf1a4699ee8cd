package control

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Record is one etcd key Cairn owns and a backup keeps: its key under the plane's prefix
// (without the prefix) and its value.
type Record struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// ephemeral are the key spaces a backup leaves out: bound to a lease (nodes, leaders,
// the controller election), rebuilt by the nodes that run.
var ephemeral = []string{"/nodes/", "/leaders/", "/controller/"}

// Records returns every durable key of the cluster at one etcd revision (one range read):
// the cluster record, the cursor key, node identities, replica sets, placements and load
// counters; not the lease-bound ones. The revision is etcd's at the read. Errors wrap
// ErrControlPlaneUnavailable.
func (p *Plane) Records(ctx context.Context) ([]Record, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	resp, err := p.cli.Get(ctx, p.cfg.Prefix+"/", clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("%w: read records: %v", ErrControlPlaneUnavailable, err)
	}
	var out []Record
	for _, kv := range resp.Kvs {
		k := strings.TrimPrefix(string(kv.Key), p.cfg.Prefix)
		if kv.Lease != 0 || hasAnyPrefix(k, ephemeral) {
			continue
		}
		out = append(out, Record{Key: k, Value: kv.Value})
	}
	return out, resp.Header.Revision, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
