package meta

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// recordsDoc is the record/format page (docs/architecture.md links it).
var recordsDoc = filepath.Join("..", "docs", "records.md")

// docTableRows returns the rows of the Markdown tables whose first column is headed
// column, in the section of doc that starts with the line heading and ends at the next
// "## " heading, keyed by their second cell, a `name` in backquotes; each row is its
// trimmed cells.
func docTableRows(t *testing.T, doc, heading, column string) map[string][]string {
	t.Helper()
	rows := map[string][]string{}
	in, found, inTable, wanted := false, false, false, false
	for line := range strings.SplitSeq(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == heading
			found = found || in
		}
		if !in || !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if !inTable { // the header row
			inTable, wanted = true, cells[0] == column
			continue
		}
		if !wanted || len(cells) < 4 || len(cells[1]) < 3 || cells[1][0] != '`' || cells[1][len(cells[1])-1] != '`' {
			continue
		}
		name := cells[1][1 : len(cells[1])-1]
		if _, dup := rows[name]; dup {
			t.Errorf("%s, %q: %q has two rows", recordsDoc, heading, name)
		}
		rows[name] = cells
	}
	if !found || len(rows) == 0 {
		t.Fatalf("%s has no section %q with a table headed %q", recordsDoc, heading, column)
	}
	return rows
}

// TestRecordsDocNamesEveryOpAndTable: docs/records.md names every op of the op table
// (opDefs) with its code and cluster version, and every table of the snapshot stream
// (snapTables) with its tag and the format that added it, and names no op or table that
// does not exist; it states the current command and snapshot formats and cluster version.
// So an op, a table or a format cannot be added without the page saying what it stores.
func TestRecordsDocNamesEveryOpAndTable(t *testing.T) {
	raw, err := os.ReadFile(recordsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)

	ops := docTableRows(t, doc, "## The Raft log entry: a metadata command", "Code")
	for _, d := range opDefs {
		row, ok := ops[d.name]
		switch {
		case !ok:
			t.Errorf("%s does not name op %d %q (meta/ops.go)", recordsDoc, d.op, d.name)
		case row[0] != strconv.Itoa(int(d.op)) || row[3] != strconv.Itoa(d.version):
			t.Errorf("%s: op %q has code %s and cluster version %s, the op table %d and %d", recordsDoc, d.name, row[0], row[3], d.op, d.version)
		}
		delete(ops, d.name)
	}
	for name := range ops {
		t.Errorf("%s names op %q, which the op table does not declare", recordsDoc, name)
	}

	tables := docTableRows(t, doc, "## The Raft snapshot stream", "Tag")
	for _, tb := range snapTables {
		row, ok := tables[tb.name]
		switch {
		case !ok:
			t.Errorf("%s does not name snapshot table %d %q (meta/snapshot_tables.go)", recordsDoc, tb.tag, tb.name)
		case row[0] != strconv.Itoa(int(tb.tag)) || row[2] != strconv.Itoa(int(tb.since)):
			t.Errorf("%s: snapshot table %q has tag %s and format %s, the snapshot table %d and %d", recordsDoc, tb.name, row[0], row[2], tb.tag, tb.since)
		}
		delete(tables, tb.name)
	}
	for name := range tables {
		t.Errorf("%s names snapshot table %q, which the snapshot table does not declare", recordsDoc, name)
	}

	for _, c := range []string{
		fmt.Sprintf("CommandFormat = %d", CommandFormat),
		fmt.Sprintf("SnapshotFormat = %d", SnapshotFormat),
		fmt.Sprintf("ClusterVersion = %d", ClusterVersion),
		fmt.Sprintf("Format %d", SnapshotFormat),
	} {
		if !strings.Contains(doc, c) {
			t.Errorf("%s does not say %q", recordsDoc, c)
		}
	}
}
