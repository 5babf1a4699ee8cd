package workbench_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestPendingProposalsAreInert mixes writes, proposals, accepts and rejects at random and
// checks after every step that no read, listing, grep, search, find or export of the
// workbench shows a byte (or the digest) of a proposal that is not accepted.
func TestPendingProposalsAreInert(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	paths := []string{"outputs/a.txt", "outputs/b.txt", "outputs/sub/c.txt", "logs/d.txt"}
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		ctx := t.Context()
		wb := fmt.Sprintf("w%d", run)
		if _, err := svc.Lifecycle.CreateWorkbench(ctx, "a", wb, ""); err != nil {
			rt.Fatal(err)
		}
		type prop struct{ id, marker, digest string }
		// open may still be decided; hidden are every proposal not accepted (open and
		// rejected), whose bytes must never show.
		var open, hidden []prop
		steps := rapid.IntRange(1, 12).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			path := rapid.SampledFrom(paths).Draw(rt, "path")
			switch op := rapid.IntRange(0, 3).Draw(rt, "op"); {
			case op == 0: // a plain write
				if _, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: wb, Path: path,
					Body: strings.NewReader(fmt.Sprintf("plain %d %d", run, i))}); err != nil {
					rt.Fatal(err)
				}
			case op == 1: // a proposal (at the head, or against "must not exist")
				marker := fmt.Sprintf("PENDING-%d-%d-%s", run, i, rapid.StringMatching(`[a-z]{6}`).Draw(rt, "salt"))
				in := workbench.ProposeInput{ID: wb, Path: path, Text: &marker, RequestID: fmt.Sprintf("r%d", i)}
				if rapid.Bool().Draw(rt, "must-not-exist") {
					in.BaseGeneration = ptr(uint64(0))
				}
				r, err := svc.Review.Propose(ctx, "a", in)
				if err != nil {
					rt.Fatal(err)
				}
				d := sha256.Sum256([]byte(marker))
				p := prop{id: r["proposal_id"].(string), marker: marker, digest: hex.EncodeToString(d[:])}
				open, hidden = append(open, p), append(hidden, p)
			case len(open) > 0: // decide one: accepted bytes become visible, rejected stay hidden
				k := rapid.IntRange(0, len(open)-1).Draw(rt, "which")
				accept := op == 2
				disp := "reject"
				if accept {
					disp = "accept"
				}
				p := open[k]
				_, err := svc.Review.Decide(ctx, "a", workbench.DecideInput{ID: wb, ProposalID: p.id, Disposition: disp, SubmissionID: fmt.Sprintf("s%d", i)})
				switch {
				case err == nil:
					open = append(open[:k], open[k+1:]...)
					if accept {
						hidden = slices.DeleteFunc(hidden, func(h prop) bool { return h.id == p.id })
					}
				case !accept || !isStale(err):
					rt.Fatalf("%s: %v", disp, err)
				}
			}
			seen := everythingVisible(rt, svc, wb)
			for _, p := range hidden {
				if strings.Contains(seen, p.marker) || strings.Contains(seen, p.digest) {
					rt.Fatalf("proposal %s (%s) is visible after step %d", p.id, p.marker, i)
				}
			}
		}
	})
}

// everythingVisible renders what every read-side operation shows of workbench wb: the
// recursive listing, every file read (text), an export (every file opened and read
// whole), grep for the markers, search over all files and find over the root.
func everythingVisible(rt *rapid.T, svc *workbench.Service, wb string) string {
	ctx := rt.Context()
	var out strings.Builder
	add := func(v any, err error) {
		if err != nil {
			rt.Fatal(err)
		}
		b, _ := json.Marshal(v)
		out.Write(b)
	}
	var walk func(dir string)
	walk = func(dir string) {
		l, err := svc.Reads.List(ctx, workbench.ListRequest{Agent: "a", Workbench: wb, Path: dir, Limit: 1000})
		add(l, err)
		for _, e := range l.Entries {
			if e.Kind == "directory" {
				walk(e.Path)
				continue
			}
			section, rel, _ := strings.Cut(e.Path, "/")
			add(svc.Tools.Read(ctx, "a", workbench.ReadInput{ID: wb, Section: section, Path: rel}))
			f, err := svc.Reads.Open(ctx, "a", wb, e.Path) // export: open and stream every file
			if err != nil {
				rt.Fatal(err)
			}
			body, err := f.ReadAll(ctx, 1<<20)
			add(string(body), err)
			add(svc.Tools.Stat(ctx, "a", workbench.StatInput{ID: wb, Path: &e.Path}))
		}
	}
	walk("")
	add(svc.Tools.Grep(ctx, "a", workbench.GrepInput{ID: wb, Pattern: "PENDING", Recursive: true}))
	add(svc.Tools.Search(ctx, "a", workbench.SearchInput{ID: &wb, Fields: []string{"artifact.digest", "artifact.size_bytes"}}))
	add(svc.Tools.Find(ctx, "a", workbench.FindInput{IncludeManifest: ptr(true)}))
	return out.String()
}

func isStale(err error) bool {
	var we *workbench.Error
	return errors.As(err, &we) && we.Code == workbench.CodeConflict && we.Details["reason"] == "stale"
}
