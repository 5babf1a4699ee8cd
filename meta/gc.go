package meta

// checkPublishable fails a publish that references a blob of agent's root under delete
// intent (DESIGN.md §8): the writer must upload the blob again once its deletion is
// recorded.
func (a *applier) checkPublishable(agent string, segs []Segment) *Error { return nil }
