package workbench

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/meta"
)

// A merge past MaxRewindChanges changes, or conflicts, is refused naming the merge (not a
// rewind) and the fork, with details.rule too_many_changes; one change less is planned.
func TestMergePastTheChangeLimitIsRefusedAsAMerge(t *testing.T) {
	base, parent := &meta.Entry{Digest: meta.Digest{1}, Generation: 1}, &meta.Entry{Digest: meta.Digest{1}, Generation: 1}
	fork, other := &meta.Entry{Digest: meta.Digest{2}, Generation: 2}, &meta.Entry{Digest: meta.Digest{3}, Generation: 3}
	full := func() *mergePlan {
		p := &mergePlan{}
		for range MaxRewindChanges - 1 {
			p.changes = append(p.changes, meta.PathChange{})
			p.conflicts = append(p.conflicts, mergeConflict{})
		}
		return p
	}
	for _, tt := range []struct {
		name         string
		parent, want string
	}{
		{"a path only the fork changed", "", "would change more than 4096 paths"},
		{"a path both sides changed", "clash", "has more than 4096 conflicts"},
	} {
		p, par := full(), parent
		if tt.parent == "clash" {
			par = other
		}
		if err := p.decide("a.txt", base, fork, par); err != nil {
			t.Fatalf("%s: the %dth is refused: %v", tt.name, MaxRewindChanges, err)
		}
		err := p.decide("b.txt", base, fork, par)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidArguments || e.Details["field"] != "fork" ||
			e.Details["rule"] != "too_many_changes" || !strings.Contains(e.Message, "the merge "+tt.want) || strings.Contains(e.Message, "rewind would") {
			t.Fatalf("%s: past the limit: %v", tt.name, err)
		}
	}
}
