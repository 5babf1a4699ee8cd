package diff

import (
	"encoding/hex"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
)

func seq(ms ...Member) iter.Seq[Member] { return slices.Values(ms) }

// m is a member whose digest is d repeated (rows show its digest's first hex byte).
func m(path, d string, size int64) Member {
	var dg [32]byte
	copy(dg[:], []byte(strings.Repeat(d, 32)))
	return Member{Path: path, Digest: dg, Size: size}
}

func TestTree(t *testing.T) {
	old := seq(m("a", "1", 1), m("b", "2", 2), m("c", "3", 3), m("e", "5", 5))
	new := seq(m("a", "1", 1), m("b", "X", 9), m("d", "4", 4), m("e", "5", 5), m("f", "6", 6))
	page, err := Tree(old, new, TreeOptions{Limit: 10, MaxScan: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(rowsText(page.Rows))
	want := "[b changed 2->X c removed 3-> d added ->4 f added ->6]"
	if got != want || page.More || page.Last != "f" {
		t.Fatalf("rows %s more=%v last=%q, want %s, no more, last f", got, page.More, page.Last, want)
	}
}

// shortDigest turns "sha256:<hex>" back into the letter m repeated.
func shortDigest(uri string) string {
	b, _ := hex.DecodeString(strings.TrimPrefix(uri, "sha256:")[:2])
	return string(b)
}

func rowsText(rows []Row) []string {
	var out []string
	for _, r := range rows {
		var o, n string
		if r.Old != nil {
			o = shortDigest(r.Old.Digest)
		}
		if r.New != nil {
			n = shortDigest(r.New.Digest)
		}
		out = append(out, fmt.Sprintf("%s %s %s->%s", r.Path, r.Change, o, n))
	}
	return out
}

// TestTreePaging: pages resumed after Last cover every difference exactly once, whatever
// the limit and scan bounds.
func TestTreePaging(t *testing.T) {
	var old, new []Member
	var want []string
	for i := range 50 {
		p := fmt.Sprintf("p%03d", i)
		switch i % 4 {
		case 0:
			old = append(old, m(p, "o", 1))
			want = append(want, p+" removed o->")
		case 1:
			new = append(new, m(p, "n", 1))
			want = append(want, p+" added ->n")
		case 2:
			old, new = append(old, m(p, "o", 1)), append(new, m(p, "n", 1))
			want = append(want, p+" changed o->n")
		default:
			old, new = append(old, m(p, "s", 1)), append(new, m(p, "s", 1))
		}
	}
	after := func(ms []Member, last string) iter.Seq[Member] {
		i, _ := slices.BinarySearchFunc(ms, last, func(x Member, p string) int {
			if x.Path <= p {
				return -1
			}
			return 1
		})
		return seq(ms[i:]...)
	}
	for _, o := range []TreeOptions{{Limit: 1, MaxScan: 1000}, {Limit: 7, MaxScan: 1000}, {Limit: 1000, MaxScan: 2}, {Limit: 3, MaxScan: 5},
		{Limit: 1000, MaxScan: 1000, MaxPathBytes: 1}, {Limit: 1000, MaxScan: 1000, MaxPathBytes: 10}} {
		t.Run(fmt.Sprintf("limit %d scan %d path bytes %d", o.Limit, o.MaxScan, o.MaxPathBytes), func(t *testing.T) {
			var got []string
			last := ""
			for pages := 0; ; pages++ {
				if pages > 200 {
					t.Fatal("paging does not end")
				}
				page, err := Tree(after(old, last), after(new, last), o)
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Rows) > o.Limit {
					t.Fatalf("%d rows, limit %d", len(page.Rows), o.Limit)
				}
				if o.MaxPathBytes > 0 {
					// Every path is 4 bytes: at most MaxPathBytes plus one path.
					if n := int64(4 * len(page.Rows)); n > o.MaxPathBytes+4 {
						t.Fatalf("%d rows hold %d path bytes, bound %d plus one path", len(page.Rows), n, o.MaxPathBytes)
					}
				}
				got = append(got, rowsText(page.Rows)...)
				if !page.More {
					break
				}
				last = page.Last
			}
			if !slices.Equal(got, want) {
				t.Fatalf("rows\n%v\nwant\n%v", got, want)
			}
		})
	}
}

func TestTreeOptions(t *testing.T) {
	for _, o := range []TreeOptions{{Limit: 0, MaxScan: 10}, {Limit: 1001, MaxScan: 10}, {Limit: 1, MaxScan: 1}, {Limit: 1, MaxScan: 2, MaxPathBytes: -1}} {
		if _, err := Tree(seq(), seq(), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
