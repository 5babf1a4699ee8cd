package meta

import (
	"strings"
	"testing"
)

// TestSnapshotTablesRefuseAnIncompleteTable: a table without a reader or a writer, on a
// tag already declared or the end tag, or added by a format this binary does not write
// fails the table check (and so the package's start).
func TestSnapshotTablesRefuseAnIncompleteTable(t *testing.T) {
	if err := checkSnapTables(snapTables); err != nil {
		t.Fatal(err)
	}
	write := func(*state, func(string, *snapRecord) bool) {}
	read := func(*state, snapRecord) bool { return true }
	const fake uint8 = 200
	for _, tc := range []struct {
		name  string
		table snapTable
		want  string
	}{
		{"without a reader", snapTable{tag: fake, name: "fake", since: 1, write: write}, "no reader"},
		{"without a writer", snapTable{tag: fake, name: "fake", since: 1, read: read}, "no writer"},
		{"on a declared tag", snapTable{tag: recPath, name: "fake", since: 1, write: write, read: read}, "declared twice"},
		{"on the end tag", snapTable{tag: recEnd, name: "fake", since: 1, write: write, read: read}, "end tag"},
		{"of a newer format", snapTable{tag: fake, name: "fake", since: SnapshotFormat + 1, write: write, read: read}, "format"},
	} {
		err := checkSnapTables(append(append([]snapTable(nil), snapTables...), tc.table))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("a fake table %s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestSnapshotTablesAreReadBackThroughTheirTag: every table's record, written by its
// writer, is read by the table of its tag, and a record whose value is missing is
// refused by every table but those whose value is a plain counter or string.
func TestSnapshotTablesAreReadBackThroughTheirTag(t *testing.T) {
	for _, tab := range snapTables {
		if got := snapTableByTag[tab.tag]; got == nil || got.name != tab.name {
			t.Errorf("tag %d (%s) resolves to %v", tab.tag, tab.name, got)
		}
	}
	lenient := map[uint8]bool{recDedupeOrder: true, recDedupeCount: true, recSnapName: true}
	for _, tab := range snapTables {
		if ok := tab.read(newState(), snapRecord{T: tab.tag, K: []byte("agent")}); ok != lenient[tab.tag] {
			t.Errorf("table %s read a record without a value: %v", tab.name, ok)
		}
	}
}
