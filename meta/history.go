package meta

import "strconv"

// MaxHistoryLimit bounds the versions one HistoryView.Versions call returns.
const MaxHistoryLimit = 1000

// HistoryView is the history reads of one View (View.History): the versions of a path
// that retention and holds keep, a file at a past generation or command time, the names
// that have history below a directory, and what a command changed or would refuse
// (ChangesAt, ChangedSince). Like every facet of a View it holds the View and reads only
// through it: the same immutable state, at the View's version, under its restriction.
type HistoryView struct{ v *View }

// Versions returns up to limit retained versions of path in ws, newest first, with a
// version (generation) below before (0: from the newest), as of the view: the live body,
// the superseded bodies retention or a hold still keeps, and the tombstones of deletes
// (Entry nil) — what History retention (retention.go) and holds kept, nothing else. more
// says older versions remain. A path with no retained version at all (never written, or
// its history pruned away) is NotFound; a path that is a directory is NotArtifact;
// InvalidArguments for a bad path or a limit outside 1..MaxHistoryLimit (field "limit").
//
// Each row's Version is the element's generation (a body's Entry.Generation, a delete's
// shard version), its Ordinal the number within its life, its Producer who made it; the
// proposal or decision that made a version, where there is one, is on its Entry.
func (h HistoryView) Versions(ws *Workspace, path string, before uint64, limit int) (out []FileVersion, more bool, err error) {
	if err := ValidatePath("path", path); err != nil {
		return nil, false, err
	}
	if limit < 1 || limit > MaxHistoryLimit {
		return nil, false, invalidArg("limit", "must be between 1 and %d, got %d", MaxHistoryLimit, limit)
	}
	rec, ok := h.v.record(ws, path)
	seen := false
	if ok {
		for _, el := range rec.Chain {
			if el.Version > h.v.at {
				continue
			}
			seen = true
			if before != 0 && el.Version >= before {
				continue
			}
			if len(out) == limit {
				return out, true, nil
			}
			out = append(out, fileVersion(el))
		}
	}
	if !seen {
		if _, err := h.v.File(ws, path); err != nil && CodeOf(err) != CodeNotFound {
			return nil, false, err
		}
		return nil, false, errorf(CodeNotFound, "the path has no retained version")
	}
	return out, false, nil
}

// FileAt returns the body path had at generation gen, when a retained chain element made
// it (a body written at gen that retention or a hold still keeps, and that the view's
// version covers). NotFound naming field "generation" when no retained body has that
// generation (never one, pruned, a delete's version, or beyond the view);
// InvalidArguments for a bad path.
func (h HistoryView) FileAt(ws *Workspace, path string, gen uint64) (FileVersion, error) {
	if err := ValidatePath("path", path); err != nil {
		return FileVersion{}, err
	}
	if rec, ok := h.v.record(ws, path); ok && gen <= h.v.at {
		for _, el := range rec.Chain {
			if el.Version == gen && el.Entry != nil {
				return fileVersion(el), nil
			}
			if el.Version < gen {
				break
			}
		}
	}
	return FileVersion{}, &Error{Code: CodeNotFound, Field: "generation",
		Message: "the path has no retained version with generation " + strconv.FormatUint(gen, 10)}
}
