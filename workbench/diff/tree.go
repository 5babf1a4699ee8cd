package diff

import (
	"iter"
	"strings"
)

// Tree diff bounds.
const (
	DefaultTreeLimit = 100
	MaxTreeLimit     = 1000
	// DefaultMaxScan bounds the members one Tree call examines (both sides together), so a
	// page costs bounded time even when few members changed.
	DefaultMaxScan = 100_000
)

// Version is one side of a path in a tree: its body's digest ("sha256:<hex>") and size.
type Version struct {
	Digest string `json:"digest_uri"`
	Size   int64  `json:"size_bytes"`
}

// Member is a path of a tree with its body's SHA-256 and size (raw, so that walking a
// large tree allocates nothing per member; rows render the digest).
type Member struct {
	Path   string
	Digest [32]byte
	Size   int64
}

// version renders a member's side of a row.
func (m Member) version() *Version {
	return &Version{Digest: digestURI(m.Digest), Size: m.Size}
}

// Change says how a path differs between two trees.
type Change string

// Changes.
const (
	Added   Change = "added"
	Removed Change = "removed"
	Changed Change = "changed"
)

// Row is one path that differs: Old is nil for an added path, New for a removed one.
type Row struct {
	Path   string   `json:"path"`
	Change Change   `json:"change"`
	Old    *Version `json:"old,omitempty"`
	New    *Version `json:"new,omitempty"`
}

// TreeOptions bound one page of a tree diff.
type TreeOptions struct {
	// Limit is the most rows returned (1..MaxTreeLimit).
	Limit int
	// MaxScan is the most members examined, both sides together (≥ 2).
	MaxScan int
	// MaxPathBytes, when positive, bounds the page's rows by the bytes of their paths: no
	// row is added once the paths of the rows so far reach it (so they stay below
	// MaxPathBytes plus one path), and the page ends with More as at Limit. A caller sizes
	// the page's memory from Limit and MaxPathBytes before it runs.
	MaxPathBytes int64
	// Compare is the order both member sequences are sorted in (strings.Compare when
	// nil); the caller's sequences must be strictly increasing in it.
	Compare func(a, b string) int
}

// Validate checks the fields; the error is an *OptionError.
func (o TreeOptions) Validate() error {
	switch {
	case o.Limit < 1 || o.Limit > MaxTreeLimit:
		return &OptionError{"limit", "must be between 1 and 1000"}
	case o.MaxScan < 2:
		return &OptionError{"max_scan", "must be at least 2"}
	case o.MaxPathBytes < 0:
		return &OptionError{"max_path_bytes", "must not be negative"}
	}
	return nil
}

// TreePage is one page of a tree diff.
type TreePage struct {
	Rows []Row
	// More: paths remain past Last; the next page starts after it (it may hold no rows
	// when MaxScan ran out first).
	More bool
	// Last is the last path this page examined on both sides ("" when none).
	Last string
}

// Tree merge-walks two path-sorted member sequences (typically each starting after the
// previous page's Last) and returns the paths added, removed or changed (digest differs)
// from old to new, in order. It holds one page: at most o.Limit rows whose paths reach at
// most o.MaxPathBytes (plus one path), and it stops after o.MaxScan members. The error
// is an *OptionError.
func Tree(old, new iter.Seq[Member], o TreeOptions) (TreePage, error) {
	if err := o.Validate(); err != nil {
		return TreePage{}, err
	}
	cmp := o.Compare
	if cmp == nil {
		cmp = strings.Compare
	}
	nextOld, stopOld := iter.Pull(old)
	defer stopOld()
	nextNew, stopNew := iter.Pull(new)
	defer stopNew()
	a, okA := nextOld()
	b, okB := nextNew()
	page := TreePage{Rows: []Row{}}
	scanned := 0
	var pathBytes int64
	for okA || okB {
		if len(page.Rows) == o.Limit || scanned >= o.MaxScan || o.MaxPathBytes > 0 && pathBytes >= o.MaxPathBytes {
			page.More = true
			break
		}
		rows := len(page.Rows)
		c := 0
		switch {
		case !okB:
			c = -1
		case !okA:
			c = 1
		default:
			c = cmp(a.Path, b.Path)
		}
		switch {
		case c < 0:
			page.Rows = append(page.Rows, Row{Path: a.Path, Change: Removed, Old: a.version()})
			page.Last = a.Path
			a, okA = nextOld()
			scanned++
		case c > 0:
			page.Rows = append(page.Rows, Row{Path: b.Path, Change: Added, New: b.version()})
			page.Last = b.Path
			b, okB = nextNew()
			scanned++
		default:
			if a.Digest != b.Digest {
				page.Rows = append(page.Rows, Row{Path: a.Path, Change: Changed, Old: a.version(), New: b.version()})
			}
			page.Last = a.Path
			a, okA = nextOld()
			b, okB = nextNew()
			scanned += 2
		}
		if len(page.Rows) > rows {
			pathBytes += int64(len(page.Rows[rows].Path))
		}
	}
	return page, nil
}
