package meta

import (
	"fmt"
	"testing"
)

// TestAnAggregateFormsAtMostMaxAggregateGroups: grouping into exactly MaxAggregateGroups
// groups is answered; one more group is ResourceExhausted on group_by, whatever the limit
// of groups returned, so an aggregate's memory is bounded before it runs.
func TestAnAggregateFormsAtMostMaxAggregateGroups(t *testing.T) {
	x := newQFix(t)
	for i := range MaxAggregateGroups {
		x.put("w", fmt.Sprintf("f%05d", i), "", nil)
	}
	q := AggregateQuery{Scope: Scope{Agent: "a"}, Measures: []Measure{{Name: "n", Op: MeasureCount}}, GroupBy: []string{ArtifactName}, Limit: 1}
	res, err := x.f.View().Aggregate(q)
	if err != nil || res.TotalGroups != MaxAggregateGroups || len(res.Groups) != 1 {
		t.Fatalf("%d groups: %v, total %d, %d returned", MaxAggregateGroups, err, res.TotalGroups, len(res.Groups))
	}
	x.put("w", "one-more", "", nil)
	for _, mode := range []planMode{planScan, planIndex} {
		_, err = x.f.View().aggregate(q, mode)
		if err == nil || err.Code != CodeResourceExhausted || err.Field != "group_by" {
			t.Fatalf("%s: %d groups: %v, want ResourceExhausted on group_by", planName(mode), MaxAggregateGroups+1, err)
		}
	}
	q.GroupBy = []string{ArtifactSection} // one group: the bound is on groups, not files
	if res, err := x.f.View().Aggregate(q); err != nil || res.TotalGroups != 1 {
		t.Fatalf("grouped by section: %v %v", res, err)
	}
}
