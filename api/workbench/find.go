package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/meta"
)

// FindInput is workbench_find's input.
type FindInput struct {
	Committed       *bool   `json:"committed"`
	ManifestPattern *string `json:"manifest_pattern"`
	IncludeManifest *bool   `json:"include_manifest"`
	Cursor          *string `json:"cursor"`
	Limit           *int    `json:"limit"`
}

// Find limits: results per page, and workbenches examined per call (bounded work; a call
// that reaches it returns truncated with a cursor even with fewer results).
const (
	DefaultFindLimit   = 100
	MaxFindLimit       = 100
	findScanPerCall    = 2000
	maxManifestPattern = 1024
)

// ToolFind implements workbench_find: the workbenches of the agent root, in name order,
// filtered by committed state and by a case-insensitive literal match over the stored run
// manifest (metadata/run_manifest.json of the head commit). Each page reads one version.
func (s *Service) ToolFind(ctx context.Context, agent string, in FindInput) (Result, error) {
	if err := meta.ValidateName("agent", agent); err != nil {
		return nil, AsError(err)
	}
	limit := DefaultFindLimit
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > MaxFindLimit {
			return nil, invalidArgument("limit", "must be between 1 and %d", MaxFindLimit)
		}
		limit = *in.Limit
	}
	pattern := deref(in.ManifestPattern)
	if len(pattern) > maxManifestPattern {
		return nil, invalidArgument("manifest_pattern", "must be at most %d bytes", maxManifestPattern)
	}
	args := "committed=" + boolArg(in.Committed) + "\x00pattern=" + pattern + "\x00manifest=" + strconv.FormatBool(deref(in.IncludeManifest))
	after := ""
	if in.Cursor != nil {
		cur, cerr := s.cursors.decode(*in.Cursor, "find", agent, "", "")
		if cerr != nil {
			return nil, cerr
		}
		if cur.Args != args {
			return nil, invalidArgument("cursor", "was issued for other arguments")
		}
		after = cur.After
	}
	view, err := s.readView(ctx, agent)
	if err != nil {
		return nil, AsError(err)
	}
	needle := strings.ToLower(pattern)
	var found []Result
	// scanAfter is the last workbench examined; more says a further match exists (or the
	// work bound stopped the scan before it could tell).
	scanned, more, scanAfter, resume := 0, false, after, after
scan:
	for {
		page, pageMore := view.Workspaces(agent, scanAfter, 256)
		for _, ws := range page {
			if scanned == findScanPerCall {
				more, resume = true, scanAfter
				break scan
			}
			scanned++
			scanAfter = ws.Name
			committed := ws.HeadIdentity != ""
			if in.Committed != nil && *in.Committed != committed {
				continue
			}
			var envelope []byte
			if committed && (pattern != "" || deref(in.IncludeManifest)) {
				if envelope, err = s.headEnvelope(ctx, view, ws); err != nil {
					return nil, err
				}
			}
			if pattern != "" && !bytes.Contains(bytes.ToLower(envelope), []byte(needle)) {
				continue
			}
			if len(found) == limit {
				more = true // a further match exists: the next page starts after the last one returned
				break scan
			}
			r := Result{"workbench_id": ws.Name, "path": s.WorkbenchPath(agent, ws.Name), "committed": committed,
				"file_count": ws.Files, "size_bytes": ws.Bytes}
			if committed {
				r["commit_identity"] = ws.HeadIdentity
				if c, ok := view.Head(ws); ok {
					r["committed_at_unix_seconds"] = c.CommittedAtMs / 1000
					r["commit_generation"] = c.Version
				}
			} else {
				r["commit_identity"] = nil
			}
			if deref(in.IncludeManifest) {
				if envelope != nil {
					r["manifest"] = json.RawMessage(envelope)
				} else {
					r["manifest"] = nil
				}
			}
			found = append(found, r)
			resume = ws.Name
		}
		if !pageMore || len(page) == 0 {
			break
		}
	}
	r := success()
	if found == nil {
		found = []Result{}
	}
	r["workbenches"] = found
	r["count"] = len(found)
	r["workbenches_scanned"] = scanned
	r["truncated"] = more
	r["next_cursor"] = nil
	if more {
		r["next_cursor"] = s.cursors.encode(cursor{Kind: "find", Agent: agent, Args: args, After: resume})
	}
	return r, nil
}

func boolArg(p *bool) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatBool(*p)
}

// headEnvelope reads the stored run manifest of ws's head commit as of view.
func (s *Service) headEnvelope(ctx context.Context, view *meta.View, ws *meta.Workspace) ([]byte, error) {
	e, err := view.File(ws, meta.RunManifestPath)
	if err != nil {
		return nil, AsError(err)
	}
	r, err := s.openEntry(ctx, ws.Agent, e, 0, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, AsError(err)
	}
	return buf.Bytes(), nil
}
