package workbench

import "testing"

// setPaths gives each entry the path joinPath gives it, at the top and below it, whatever
// the lengths of the names around it.
func TestSetPathsJoinsEachName(t *testing.T) {
	names := []string{"a", "b.txt", "déjà vu", "x", "", "a-much-longer-name-than-the-others.json"}
	for _, dir := range []string{"", "input", "input/sub/deeper"} {
		entries := make([]ListEntry, len(names))
		for i, n := range names {
			entries[i].Name = n
		}
		setPaths(dir, entries)
		for i, e := range entries {
			if want := joinPath(dir, names[i]); e.Path != want || e.Name != names[i] {
				t.Errorf("dir %q, entry %d: name %q path %q, want %q %q", dir, i, e.Name, e.Path, names[i], want)
			}
		}
	}
	setPaths("input", nil) // an empty page
}
