package host

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// TestALeaderlessShardShowsItsRecordedMembers: when no leader answers, the status lists
// the record's voters then non-voters, lags unknown, and says why without package names.
func TestALeaderlessShardShowsItsRecordedMembers(t *testing.T) {
	got := recordMembers(control.ReplicaSet{Voters: []string{"n1", "n2", "n3"}, Nonvoters: []string{"n4"}})
	want := []control.Server{{ID: "n1", Voter: true, Lag: -1}, {ID: "n2", Voter: true, Lag: -1}, {ID: "n3", Voter: true, Lag: -1}, {ID: "n4", Lag: -1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("recordMembers = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: shard 1 has no known leader", shard.ErrNotLeader), "no known leader"},
		{fmt.Errorf("ask n2: %w", context.DeadlineExceeded), "the leader did not answer within 3s"},
		{errors.New("mux: connection refused"), "the leader could not be asked"},
	} {
		if got := statusError(tc.err); got != tc.want || strings.Contains(got, ":") {
			t.Errorf("statusError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
