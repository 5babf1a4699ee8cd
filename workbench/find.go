package workbench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"slices"
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

// Find implements workbench_find: the workbenches of the agent root, in name order,
// filtered by committed state and by a case-insensitive literal match over the stored run
// manifest (metadata/run_manifest.json of the head commit). Each page reads one version.
func (s *Reads) Find(ctx context.Context, agent string, in FindInput) (Result, error) {
	if err := mayReadAgent(ctx, agent); err != nil {
		return nil, err
	}
	limit, werr := limitArg(in.Limit, DefaultFindLimit, MaxFindLimit)
	if werr != nil {
		return nil, werr
	}
	pattern := deref(in.ManifestPattern)
	if len(pattern) > maxManifestPattern {
		return nil, invalidArgument("manifest_pattern", "must be at most %d bytes", maxManifestPattern)
	}
	args := "committed=" + boolArg(in.Committed) + "\x00pattern=" + pattern + "\x00manifest=" + strconv.FormatBool(deref(in.IncludeManifest))
	after := ""
	if in.Cursor != nil {
		cur, cerr := s.base.cursors.decode(ctx, *in.Cursor, "find", agent, "", "")
		if cerr != nil {
			return nil, cerr
		}
		if cur.Args != args {
			return nil, invalidArgument("cursor", "was issued for other arguments")
		}
		after = cur.After
	}
	view, err := s.base.readView(ctx, agent)
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
			// A key whose prefixes hide the manifest sees the commit, not its bytes:
			// a pattern cannot match them and the match carries no manifest.
			if committed && view.ShowsPath(agent, meta.RunManifestPath) {
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
			r := s.findMatch(agent, view, ws, envelope)
			if !deref(in.IncludeManifest) {
				delete(r, "manifest")
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
	r["path"] = s.base.RootPath(agent)
	r["matches"] = found
	r["match_count"] = len(found)
	r["entry_count"] = scanned
	r["truncated"] = more
	r["next_cursor"] = nil
	if more {
		r["next_cursor"] = s.base.cursors.encode(ctx, cursor{Kind: "find", Agent: agent, Args: args, After: resume})
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
func (s *Reads) headEnvelope(ctx context.Context, view *meta.View, ws *meta.Workspace) ([]byte, error) {
	e, err := view.File(ws, meta.RunManifestPath)
	if err != nil {
		return nil, AsError(err)
	}
	r, err := s.base.openEntry(ctx, ws.Agent, e, 0, -1)
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

// findMatch renders one workbench as workbench_find reports it. For a committed workbench
// envelope is the stored run manifest of its head commit: the match carries the commit's
// digests, the manifest's path, generation and size, the envelope itself (manifest) and a
// summary of it, and commit_identity_verified says whether the stored bytes are the ones
// the commit sealed and name its identity (recomputed from their own fields). For an
// uncommitted workbench every commit field is null and commit_identity_verified false.
func (s *Reads) findMatch(agent string, view *meta.View, ws *meta.Workspace, envelope []byte) Result {
	r := Result{"workbench_id": ws.Name, "path": s.base.WorkbenchPath(agent, ws.Name), "committed": false,
		"file_count": ws.Files, "size_bytes": ws.Bytes, "commit_identity": nil, "commit_identity_verified": false,
		"content_digest_uri": nil, "manifest_digest_uri": nil, "envelope_digest_uri": nil, "manifest": nil,
		"manifest_path": nil, "manifest_generation": nil, "manifest_size_bytes": nil, "manifest_summary": nil}
	c, ok := view.Lifecycle().Head(ws)
	if ws.HeadIdentity == "" || !ok {
		return r
	}
	r["committed"] = true
	r["commit_identity"] = c.Identity
	r["committed_at_unix_seconds"] = c.CommittedAtMs / 1000
	r["content_digest_uri"] = c.ContentDigestURI
	r["manifest_digest_uri"] = c.ManifestDigestURI
	r["envelope_digest_uri"] = DigestURI(c.EnvelopeDigest)
	r["manifest_path"] = s.base.WorkbenchPath(agent, ws.Name) + "/" + meta.RunManifestPath
	r["manifest_generation"] = c.Version
	r["manifest_size_bytes"] = c.EnvelopeSize
	var env RunManifest
	if err := json.Unmarshal(envelope, &env); err != nil {
		return r
	}
	r["manifest"] = json.RawMessage(envelope)
	var user map[string]json.RawMessage
	_ = json.Unmarshal(env.Manifest, &user)
	keys := slices.Sorted(maps.Keys(user))
	if keys == nil {
		keys = []string{}
	}
	var task any
	var t string
	if json.Unmarshal(user["task"], &t) == nil {
		task = t
	}
	r["manifest_summary"] = map[string]any{"schema": env.Schema, "workbench_id": env.WorkbenchID,
		"commit_identity": env.CommitIdentity, "committed_at_unix_seconds": env.CommittedAtUnixSeconds,
		"content_digest_uri": env.ContentDigestURI, "manifest_digest_uri": env.ManifestDigestURI,
		"manifest_keys": keys, "manifest_task": task}
	r["commit_identity_verified"] = sha256.Sum256(envelope) == [32]byte(c.EnvelopeDigest) &&
		env.CommitIdentity == c.Identity && manifestMatches(env, c)
	return r
}

// manifestMatches recomputes a stored envelope's manifest digest and commit identity from
// its own fields and compares them with the commit's.
func manifestMatches(env RunManifest, c *meta.CommitRecord) bool {
	canon, err := CanonicalManifest(env.Manifest)
	if err != nil {
		return false
	}
	d := ManifestDigestURI(canon)
	return d == c.ManifestDigestURI && env.ContentDigestURI == c.ContentDigestURI &&
		CommitIdentity(env.WorkbenchID, env.ContentDigestURI, d) == c.Identity
}
