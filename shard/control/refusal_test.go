package control

import (
	"errors"
	"fmt"
	"testing"
)

// TestRefusalsCarryAReasonWithoutThePackageName: the refusals an operator acts on match
// their sentinel and carry a public reason that names no package; other errors fall back.
func TestRefusalsCarryAReasonWithoutThePackageName(t *testing.T) {
	_, growErr := (&Plane{}).GrowShards(t.Context(), 0, 1) // refused before any etcd call
	for _, tc := range []struct {
		name     string
		err      error
		sentinel error
		reason   string
	}{
		{"a grow of no shard", growErr, ErrInvalidArgument, "shards to add must be at least 1, got 0"},
		{"an empty node id", validNodeID(""), ErrInvalidArgument, "node id must be 1 to 128 bytes, got 0"},
		// A refused character shows as itself and its code point, not its first byte as
		// the Latin-1 character of its value ('Ã').
		{"a node id with a non-ASCII character", validNodeID("nœud"), ErrInvalidArgument,
			`node id "nœud": byte 1 is 'œ' U+0153 (printable ASCII, no '/')`},
		{"a node id with a byte that is not UTF-8", validNodeID("n\xff"), ErrInvalidArgument,
			`node id "n\xff": byte 1 is 0xFF, not UTF-8 (printable ASCII, no '/')`},
		{"a wrapped refusal", fmt.Errorf("grow: %w", Refuse(ErrShardCountChanged, "the cluster has %d shards", 3)), ErrShardCountChanged, "the cluster has 3 shards"},
		{"not a refusal", fmt.Errorf("%w: etcd down", ErrControlPlaneUnavailable), ErrControlPlaneUnavailable, "fallback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.sentinel) {
				t.Fatalf("%v does not match %v", tc.err, tc.sentinel)
			}
			if got := PublicReason(tc.err, "fallback"); got != tc.reason {
				t.Fatalf("PublicReason = %q, want %q", got, tc.reason)
			}
		})
	}
}
