package meta

// indexFile updates the secondary index when the live entry of path in incarnation inc
// changes from old to e (either may be nil).
func (s *state) indexFile(inc uint64, path string, old, e *Entry) {}

// rebuildIndex recomputes the secondary index from the live paths (after a restore).
func (s *state) rebuildIndex() {}
