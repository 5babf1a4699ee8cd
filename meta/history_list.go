package meta

import "strings"

// List is View.List over everything with a retained version: the direct children of
// dir ("" = the top) whose own chain or some chain below them holds an element the view
// covers, live or not, in byte order of their names, after the name after ("" = from the
// first). A file child (KindFile) is a path with such a chain: Entry is its live body, nil
// when its newest element is a tombstone. A directory child (KindDirectory, Dir zero) has
// such a path below it. One name may be both, a deleted file whose name is now a
// directory: then the file comes first, and the two are never split across calls, so
// limit counts names. A dir with nothing below it lists nothing (no NotFound, no
// NotDirectory: a path may have been a file and now be a directory). Errors:
// InvalidArguments for a bad dir.
//
// The history listing of an S3 bucket (ListObjectVersions, api/s3/versions.go) walks it:
// the keys whose versions and delete markers Versions pages.
func (h HistoryView) List(ws *Workspace, dir, after string, limit int) (entries []DirEntry, more bool, err error) {
	if dir != "" {
		if err := ValidatePath("path", dir); err != nil {
			return nil, false, err
		}
	}
	limit = max(limit, 1)
	prefix := childPrefix(ws.Incarnation, dir)
	pivot := prefix
	if after != "" {
		pivot = prefix + after + "\x01"
	}
	names := 0
	for {
		var next string
		done := true
		h.v.st.paths.Ascend(pivot, func(key string, rec *pathRecord) bool {
			if !strings.HasPrefix(key, prefix) {
				return false
			}
			if !rec.covered(h.v.at) {
				return true
			}
			rest := key[len(prefix):]
			i := indexNUL(rest)
			name := rest[:i]
			if h.v.pathsRestricted(ws.Agent) && !h.v.ShowsPath(ws.Agent, joinPath(dir, name)) {
				// Outside the view's prefixes (OnlyPaths): a file is missing, a directory
				// holds what the prefixes below it hold.
				if i < len(rest) && h.historyBelow(ws, joinPath(dir, name)) {
					if names == limit {
						more = true
						return false
					}
					names++
					entries = append(entries, DirEntry{Name: name, Kind: KindDirectory})
				}
				if i < len(rest) {
					next, done = prefix+name+"\x01", false
					return false
				}
				return true
			}
			if n := len(entries); n == 0 || entries[n-1].Name != name {
				if names == limit {
					more = true
					return false
				}
				names++
			}
			if i == len(rest) {
				entries = append(entries, DirEntry{Name: name, Kind: KindFile, Entry: rec.at(h.v.at)})
				return true
			}
			entries = append(entries, DirEntry{Name: name, Kind: KindDirectory})
			// Skip the rest of this subtree: restart the scan after it.
			next, done = prefix+name+"\x01", false
			return false
		})
		if done || more {
			return entries, more, nil
		}
		pivot = next
	}
}

// covered reports whether the chain holds an element at or below version v.
func (r *pathRecord) covered(v uint64) bool {
	return len(r.Chain) > 0 && r.Chain[len(r.Chain)-1].Version <= v
}

// historyBelow reports whether a prefix of a view restricted to prefixes (OnlyPaths) below
// dir holds a path with an element the view covers.
func (h HistoryView) historyBelow(ws *Workspace, dir string) bool {
	for _, p := range h.v.only.prefixes {
		if p == dir || !hasPathPrefix(p, dir) {
			continue
		}
		if rec, ok := h.v.st.paths.Get(pathKey(ws.Incarnation, p)); ok && rec.covered(h.v.at) {
			return true
		}
		found := false
		sub := childPrefix(ws.Incarnation, p)
		h.v.st.paths.Ascend(sub, func(key string, rec *pathRecord) bool {
			if !strings.HasPrefix(key, sub) {
				return false
			}
			found = rec.covered(h.v.at)
			return !found
		})
		if found {
			return true
		}
	}
	return false
}
