package s3

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Completing an upload happens once. A Complete claims its upload first — its record
// rewritten as completing, a compare-and-swap on the record's generation — so of two
// Completes, or a Complete and an Abort, one wins and the other finds the upload
// claimed, completed or gone. The object it publishes carries fieldUpload, the upload's
// id: before every attempt to publish, a Complete looks for that id among the key's
// newest versions, and publishes under a compare-and-swap on the generation it read
// there (or the caller's own If-Match / If-None-Match), so a Complete that a crash cut
// off after it published, retried, answers what was published instead of publishing the
// parts again over whatever was written since. The search covers every version written
// since the claim (generations grow, and a Complete publishes after its claim), not a
// fixed number of the newest. Whoever next finds such a claim with its version — a
// Complete sent again, an Abort, the sweep (multipart_reclaim.go) — records the upload as
// completed and removes its parts, as the Complete would have. A stale claim whose version
// is not found although retention let go of versions written since it cannot tell
// whether its Complete published: it is never published again, the upload is removed
// (NoSuchUpload), so a crash can never bring back old parts over newer data.

const (
	// fieldUpload names, on an object a Complete published, the upload it came from.
	fieldUpload = gatewayFieldPrefix + "upload"
	// claimTimeout is how long a Complete's claim holds off other Completes and Aborts
	// of its upload; a claim older than that is taken for one whose Complete died (a
	// crash) and may be taken over. It is far above what publishing the largest upload
	// takes (a Compose reads the parts back once).
	claimTimeout = 2 * time.Minute
	// publishedPage is how many of a key's versions one step of the search for the one an
	// upload published reads.
	publishedPage = 256
	// publishAttempts bounds a Complete's attempts to publish while other writes to its
	// key keep moving the generation it read.
	publishAttempts = 5
)

func operationAborted() error {
	return errorf(CodeOperationAborted, "a conflicting operation is in progress against this upload (it is being completed); please try again")
}

// partsKey identifies a Complete's part list: only the same list is answered again.
func partsKey(in completeRequest) string {
	h := sha256.New()
	for _, p := range in.Parts {
		fmt.Fprintf(h, "%d:%s\n", p.PartNumber, strings.Trim(strings.TrimSpace(p.ETag), `"`))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// completeUpload publishes the object as one command whose body is the listed parts'
// segments in order (workbench.Writes.Compose), under the request's If-None-Match: * or
// If-Match, once (see above), then removes the parts. The parts listed must exist with the
// ETags given (InvalidPart), in ascending order (InvalidPartOrder), every one but the last
// at least the least part size (EntityTooSmall).
func (m *multipart) completeUpload(w http.ResponseWriter, r *request) error {
	path, err := objectPath(r.key)
	if err != nil {
		return err
	}
	u, err := m.findUpload(r)
	if err != nil {
		return err
	}
	var in completeRequest
	if err := readXML(r, &in, "CompleteMultipartUpload", maxCompleteBody); err != nil {
		return err
	}
	if len(in.Parts) == 0 {
		return errorf(CodeMalformedXML, "the CompleteMultipartUpload document names no part")
	}
	key := partsKey(in)
	if done, ok, err := m.settled(r, u, path, key); ok || err != nil {
		if err != nil {
			return err
		}
		return m.answerCompleted(w, r, done)
	}
	req, err := m.composeRequest(r, u, path, in)
	if err != nil {
		if codeOf(err) == CodeInvalidPart {
			// An Abort may have removed the upload, and its parts with it, since it was
			// found: that is NoSuchUpload, not a part the caller got wrong.
			if _, ferr := m.findUpload(r); ferr != nil {
				return ferr
			}
		}
		return err
	}
	userCond, userGen, err := m.lookup.writeCondition(r, path)
	if err != nil {
		return err
	}
	// The claim.
	claimed := u.rec
	claimed.Completing = &completingUpload{ClaimMs: m.clock().UnixMilli(), Parts: key, Owner: m.owner}
	claimGen, err := m.writeRecord(r.bookkeeping(), r.agent, u, claimed)
	if err != nil {
		if codeOf(err) == CodePreconditionFailed || isConflict(err) {
			// Another Complete or an Abort changed the upload since it was read.
			if u, err = m.findUpload(r); err != nil {
				return err
			}
			if done, ok, err := m.settled(r, u, path, key); ok || err != nil {
				if err != nil {
					return err
				}
				return m.answerCompleted(w, r, done)
			}
			return operationAborted()
		}
		return fromWorkbench(err, CodeNoSuchUpload)
	}
	released := u.rec
	u.rec, u.gen = claimed, claimGen
	outcome := make(chan completeOutcome, 1)
	go func() {
		done, err := m.publish(r, u, path, key, req, userCond, userGen)
		if err != nil {
			// Nothing was published: the upload goes back to being in progress.
			if _, rerr := m.writeRecord(r.bookkeeping(), r.agent, u, released); rerr != nil {
				m.log.Warn("s3: releasing an upload's claim", "request_id", r.id, "err", rerr)
			}
		} else {
			m.finish(r.bookkeeping(), r.agent, u, done, "request_id", r.id)
		}
		outcome <- completeOutcome{done, err}
	}()
	return m.awaitComplete(w, r, outcome)
}

// completeOutcome is what publishing an upload came to.
type completeOutcome struct {
	done completedUpload
	err  error
}

// DefaultCompleteKeepAlive is Config.CompleteKeepAlive's default.
const DefaultCompleteKeepAlive = 5 * time.Second

// awaitComplete answers a Complete with its outcome. One that takes longer than
// CompleteKeepAlive (a Compose reads every part but the first back to hash it: seconds
// per GiB) is answered as S3 answers it: 200 at once, then a space every CompleteKeepAlive
// so that no client's read timeout cuts the connection, then the result's XML, or the
// error's XML in the 200's body (which the AWS SDKs and botocore read as the error, and
// retry; a Complete sent again answers the recorded result). The version id travels in a
// header, so such a late answer carries none.
func (m *multipart) awaitComplete(w http.ResponseWriter, r *request, outcome <-chan completeOutcome) error {
	tick := time.NewTicker(m.keepAlive)
	defer tick.Stop()
	started := false
	for {
		select {
		case o := <-outcome:
			switch {
			case !started && o.err != nil:
				return o.err
			case !started:
				return m.answerCompleted(w, r, o.done)
			case o.err != nil:
				e, ok := errors.AsType[*Error](o.err)
				if !ok {
					m.log.Error("s3: internal error", "request_id", r.id, "method", r.Method, "err", o.err)
					e = &Error{Code: CodeInternalError, Message: "we encountered an internal error; please try again"}
				}
				body, _ := xml.Marshal(errorBody{Code: e.Code, Message: e.Message, Resource: r.URL.Path, RequestID: r.id})
				_, _ = w.Write(body)
				return nil
			}
			body, _ := xml.Marshal(completeResult{Xmlns: xmlns, Location: "/" + r.bucket + "/" + r.key, Bucket: r.bucket, Key: r.key, ETag: o.done.ETag})
			_, _ = w.Write(body)
			return nil
		case <-tick.C:
			if !started {
				started = true
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, xml.Header)
			}
			_, _ = io.WriteString(w, " ")
			_ = http.NewResponseController(w).Flush()
		}
	}
}

// settled answers for an upload that is completed or claimed: the recorded answer of a
// completed one (NoSuchUpload for another part list); for a claimed one, what its
// Complete published if it did (found by fieldUpload), else OperationAborted while the
// claim is fresh. ok is false when the caller may go on and claim the upload.
func (m *multipart) settled(r *request, u upload, path, key string) (completedUpload, bool, error) {
	if c := u.rec.Completed; c != nil {
		if c.Parts != "" && c.Parts != key {
			return completedUpload{}, false, noSuchUpload()
		}
		return *c, true, nil
	}
	c := u.rec.Completing
	if c == nil {
		return completedUpload{}, false, nil
	}
	done, found, covered, err := m.published(r, u, path)
	switch {
	case err != nil:
		return completedUpload{}, false, err
	case found:
		done.Parts = c.Parts
		m.finish(r.bookkeeping(), r.agent, u, done, "request_id", r.id)
		if c.Parts != key {
			return completedUpload{}, false, noSuchUpload()
		}
		return done, true, nil
	case m.claimHeld(c):
		return completedUpload{}, false, operationAborted()
	case !covered:
		return completedUpload{}, false, m.giveUp(r.bookkeeping(), r.agent, u)
	}
	return completedUpload{}, false, nil // a claim its Complete left unpublished: take it over
}

// claimHeld reports whether claim c still holds off other Completes and Aborts of its
// upload: it is younger than claimTimeout and was not made by an earlier run of this
// node. A node that restarted runs none of the Completes it claimed before, so such a
// claim is taken over at once: a client retrying a Complete that a crash cut off is not
// answered OperationAborted (which S3 clients do not retry) for claimTimeout. A claim of
// another node, of this run, or without an owner holds for claimTimeout.
func (m *multipart) claimHeld(c *completingUpload) bool {
	if m.clock().Sub(time.UnixMilli(c.ClaimMs)) >= claimTimeout {
		return false
	}
	i := strings.LastIndexByte(c.Owner, '/')
	return m.owner == "" || i < 0 || c.Owner[:i] != m.instance || c.Owner == m.owner
}

// giveUp removes an upload whose stale claim cannot tell whether its Complete published
// (published: not found, not covered), so that nothing publishes its parts again: its
// record (only at the generation read: Conflict when a Complete or an Abort took it since,
// answered OperationAborted), then its parts. It answers NoSuchUpload.
func (m *multipart) giveUp(ctx context.Context, agent string, u upload) error {
	if _, err := m.svc.Writes.Delete(ctx, agent, UploadsWorkbench, u.dir+"/"+recordFile, u.gen, ""); err != nil {
		if isConflict(err) {
			return operationAborted()
		}
		return fromWorkbench(err, CodeNoSuchUpload)
	}
	if err := m.removeFiles(ctx, agent, u.dir, false); err != nil {
		m.log.Warn("s3: removing the parts of an upload whose completion is unknown", "upload", u.id, "err", err)
	}
	return noSuchUpload()
}

// finish records upload u as completed with done and removes its parts: what a Complete
// does once it has published, and what whoever finds a claim whose Complete a crash cut
// off after it published does for it. Failures are logged (logArgs name the request): the
// next to find the claim finishes it again.
func (m *multipart) finish(ctx context.Context, agent string, u upload, done completedUpload, logArgs ...any) {
	finished := u.rec
	finished.Completing, finished.Completed = nil, &done
	if _, err := m.writeRecord(ctx, agent, u, finished); err != nil {
		m.log.Warn("s3: recording a completed upload", append(logArgs, "upload", u.id, "err", err)...)
	}
	if err := m.removeFiles(ctx, agent, u.dir, true); err != nil {
		m.log.Warn("s3: removing a completed upload's parts", append(logArgs, "upload", u.id, "err", err)...)
	}
}

// published looks for the version of path (in r's bucket) that upload u published:
// publishedIn.
func (m *multipart) published(r *request, u upload, path string) (done completedUpload, found, covered bool, err error) {
	view, ws, err := m.lookup.workspace(r)
	if err != nil {
		return completedUpload{}, false, false, err
	}
	return m.publishedIn(view, ws, r.bucket, u, path)
}

// publishedIn looks for the version of path in the bucket's view that upload u published,
// among every retained version written after u's record was (a claimed upload's record is
// its claim, and its Complete publishes after it): found with that version's answer.
// covered says that the search reached a version as old as the record, or that the key has
// none, so that not found means the upload published nothing; when it is false, retention
// may have let go of the version the upload published, and not found proves nothing.
func (m *multipart) publishedIn(view *meta.View, ws *meta.Workspace, bucket string, u upload, path string) (done completedUpload, found, covered bool, err error) {
	for before := uint64(0); ; {
		rows, more, err := view.History().Versions(ws, path, before, publishedPage)
		if err != nil {
			if meta.CodeOf(err) == meta.CodeNotFound {
				return completedUpload{}, false, true, nil
			}
			return completedUpload{}, false, false, fromWorkbench(workbench.AsError(err), CodeNoSuchKey)
		}
		for _, row := range rows {
			if row.Version <= u.gen {
				return completedUpload{}, false, true, nil
			}
			if e := row.Entry; e != nil && e.Fields[fieldUpload] == meta.StringField(u.id) {
				return completedUpload{ETag: objectETag(e.Digest, e.Fields), VersionID: versionID(bucket, path, row.Version),
					CompletedMs: m.clock().UnixMilli()}, true, true, nil
			}
			before = row.Version
		}
		if !more {
			return completedUpload{}, false, false, nil
		}
	}
}

// composeRequest checks that the caller may write the object (workbench.Writes.MayWrite
// with its own principal: the publish runs with bookkeeping, multipart_access.go) and the
// listed parts against one view, and returns the publish of their concatenation (without
// its condition).
func (m *multipart) composeRequest(r *request, u upload, path string, in completeRequest) (workbench.ComposeRequest, error) {
	if err := m.svc.Writes.MayWrite(r.Context(), r.agent, r.bucket, path); err != nil {
		return workbench.ComposeRequest{}, fromWorkbench(err, CodeNoSuchBucket)
	}
	view, ws, _, err := m.svc.Reads.ViewAt(r.bookkeeping(), r.agent, UploadsWorkbench, workbench.At{})
	if err != nil {
		return workbench.ComposeRequest{}, fromWorkbench(err, CodeNoSuchUpload)
	}
	for i, p := range in.Parts {
		if i > 0 && p.PartNumber <= in.Parts[i-1].PartNumber {
			return workbench.ComposeRequest{}, errorf(CodeInvalidPartOrder, "the list of parts was not in ascending order: parts must be ordered by part number")
		}
	}
	parts := make([]workbench.ComposePart, len(in.Parts))
	sizes := make([]int64, len(in.Parts))
	for i, p := range in.Parts {
		invalid := errorf(CodeInvalidPart, "part %d could not be found, or its entity tag did not match the part's", p.PartNumber)
		if p.PartNumber < 1 || p.PartNumber > MaxPartNumber {
			return workbench.ComposeRequest{}, invalid
		}
		e, err := view.File(ws, u.dir+"/"+partName(p.PartNumber))
		if err != nil || !etagMatches(p.ETag, objectETag(e.Digest, e.Fields)) {
			return workbench.ComposeRequest{}, invalid
		}
		if i < len(in.Parts)-1 && e.Size < m.minPartSize {
			return workbench.ComposeRequest{}, errorf(CodeEntityTooSmall, "part %d is %d bytes: every part but the last must be at least %d bytes",
				p.PartNumber, e.Size, m.minPartSize)
		}
		parts[i] = workbench.ComposePart{Path: u.dir + "/" + partName(p.PartNumber), IfGeneration: e.Generation}
		sizes[i] = e.Size
	}
	fields := map[string]meta.FieldValue{fieldUpload: meta.StringField(u.id)}
	maps.Copy(fields, u.rec.fields())
	maps.Copy(fields, partsField(sizes))
	return workbench.ComposeRequest{Agent: r.agent, SrcWorkbench: UploadsWorkbench, Parts: parts,
		Workbench: r.bucket, Path: path, ContentType: u.rec.ContentType, Fields: fields}, nil
}

// publish composes the object once: under the caller's condition, or else under a
// compare-and-swap on the key's generation read just before, looking for what this
// upload published before each attempt (a Complete it took over may have published).
func (m *multipart) publish(r *request, u upload, path, key string, req workbench.ComposeRequest, userCond meta.Condition, userGen uint64) (completedUpload, error) {
	for attempt := 1; ; attempt++ {
		if done, found, _, err := m.published(r, u, path); err != nil || found {
			done.Parts = key
			return done, err
		}
		req.Cond, req.IfGeneration = userCond, userGen
		if userCond == meta.CondNone {
			req.Cond, req.IfGeneration = meta.CondCreateOnly, 0
			if f, err := m.svc.Reads.Open(r.Context(), r.agent, r.bucket, path); err == nil {
				req.Cond, req.IfGeneration = meta.CondIfGeneration, f.Info.Generation
			} else if clash := keyClash(err, meta.CondNone); clash != nil {
				return completedUpload{}, clash // the key is a directory, or under a file
			} else if codeOf(m.lookup.objectError(r, err)) != CodeNoSuchKey {
				return completedUpload{}, m.lookup.objectError(r, err)
			}
		}
		res, err := m.svc.Writes.Compose(r.bookkeeping(), req)
		if err == nil {
			return completedUpload{ETag: objectETag(res.Digest, req.Fields), VersionID: versionID(r.bucket, path, res.Generation),
				CompletedMs: m.clock().UnixMilli(), Parts: key}, nil
		}
		// Without the caller's condition, a Conflict or AlreadyExists is this Complete's
		// own compare-and-swap losing to another write of the key (or of a part), not a
		// key that clashes with a path: look again below.
		ownRace := userCond == meta.CondNone && (isConflict(err) || isAlreadyExists(err))
		if !ownRace {
			if clash := keyClash(err, userCond); clash != nil {
				return completedUpload{}, clash
			}
			if !isConflict(err) {
				return completedUpload{}, m.lookup.objectError(r, err)
			}
		}
		if done, found, _, ferr := m.published(r, u, path); ferr != nil || found {
			done.Parts = key
			return done, ferr
		}
		if userCond != meta.CondNone {
			return completedUpload{}, m.lookup.objectError(r, err)
		}
		if partChanged(err) {
			return completedUpload{}, errorf(CodeInvalidPart, "a part changed while the upload was completed: list the parts and complete again")
		}
		if attempt == publishAttempts {
			return completedUpload{}, errorf(CodeOperationAborted, "the key kept changing while the upload was completed; please try again")
		}
	}
}

// partChanged reports whether a Compose's conflict is about a part (uploaded again since
// it was checked) rather than the target.
func partChanged(err error) bool {
	var e *workbench.Error
	return errors.As(err, &e) && e.Details["field"] != nil && strings.HasPrefix(fmt.Sprint(e.Details["field"]), "parts")
}

func isConflict(err error) bool {
	var e *workbench.Error
	return errors.As(err, &e) && e.Code == workbench.CodeConflict
}

func isAlreadyExists(err error) bool {
	var e *workbench.Error
	return errors.As(err, &e) && e.Code == workbench.CodeAlreadyExists
}

// writeRecord replaces u's record with rec, only if it is still the generation read: the
// new generation; Conflict when the upload changed since.
func (m *multipart) writeRecord(ctx context.Context, agent string, u upload, rec uploadRecord) (uint64, error) {
	body, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	res, err := m.svc.Writes.Write(ctx, workbench.WriteRequest{Agent: agent, Workbench: UploadsWorkbench,
		Path: u.dir + "/" + recordFile, Body: strings.NewReader(string(body)), SizeHint: int64(len(body)), ContentType: "application/json",
		Cond: meta.CondIfGeneration, IfGeneration: u.gen})
	if err != nil {
		return 0, err
	}
	return res.Generation, nil
}

func (m *multipart) answerCompleted(w http.ResponseWriter, r *request, done completedUpload) error {
	w.Header().Set(versionHeader, done.VersionID)
	return writeXML(w, completeResult{Xmlns: xmlns, Location: "/" + r.bucket + "/" + r.key, Bucket: r.bucket, Key: r.key, ETag: done.ETag})
}
