package rest

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// file serves PUT, GET, HEAD, POST ?append and DELETE of one file.
func (h *Handler) file(w http.ResponseWriter, r *http.Request, agent, id, path string) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.read(w, r, agent, id, path)
	case http.MethodPut:
		h.write(w, r, agent, id, path)
	case http.MethodPost:
		h.append(w, r, agent, id, path)
	case http.MethodDelete:
		h.delete(w, r, agent, id, path)
	default:
		allow(w, r, http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete)
	}
}

// unsupportedWriteHeaders are preconditions and partial-content headers a write cannot
// honour; ignoring them could overwrite data the caller meant to protect, so they are
// rejected (RFC 9110 §14.4: a server that does not support partial PUT rejects
// Content-Range).
var unsupportedWriteHeaders = []string{"If-Unmodified-Since", "If-Modified-Since", "If-Range", "Content-Range"}

func rejectUnsupported(r *http.Request) error {
	for _, h := range unsupportedWriteHeaders {
		if r.Header.Get(h) != "" {
			return invalidArg(h, "is not supported on writes; use If-Match with the generation (ETag)")
		}
	}
	return nil
}

// conditions parses If-Match: "<generation>" (or *) and If-None-Match: * on a write.
func conditions(r *http.Request) (cond meta.Condition, gen uint64, pre precondition, err error) {
	if err := rejectUnsupported(r); err != nil {
		return 0, 0, 0, err
	}
	im, err := conditionHeader(r, "If-Match", `"*" or one quoted generation such as "42"`)
	if err != nil {
		return 0, 0, 0, err
	}
	inm, err := conditionHeader(r, "If-None-Match", `only "*" (create-only) is supported on writes`)
	if err != nil {
		return 0, 0, 0, err
	}
	switch {
	case im != "" && inm != "":
		return 0, 0, 0, invalidArg("If-Match", "cannot be combined with If-None-Match")
	case inm != "":
		if strings.TrimSpace(inm) != "*" {
			return 0, 0, 0, invalidArg("If-None-Match", `only "*" (create-only) is supported on writes`)
		}
		return meta.CondCreateOnly, 0, ifNoneMatchStar, nil
	case im != "":
		if strings.TrimSpace(im) == "*" {
			return meta.CondReplaceOnly, 0, ifMatch, nil
		}
		g, err := parseETag(im)
		if err != nil {
			return 0, 0, 0, invalidArg("If-Match", "must be \"*\" or one quoted generation such as \"42\"")
		}
		return meta.CondIfGeneration, g, ifMatch, nil
	}
	return meta.CondNone, 0, noPrecondition, nil
}

// ifMatchGeneration reads the If-Match of an append or a delete: one generation (no "*"),
// which makes the write conditional; 0 and noPrecondition without the header.
func ifMatchGeneration(r *http.Request) (uint64, precondition, error) {
	im, err := conditionHeader(r, "If-Match", `one quoted generation such as "42"`)
	if err != nil || im == "" {
		return 0, noPrecondition, err
	}
	gen, err := parseETag(im)
	if err != nil {
		return 0, ifMatch, invalidArg("If-Match", "must be one quoted generation such as \"42\"")
	}
	return gen, ifMatch, nil
}

// conditionHeader returns the value of a precondition header of a write (If-Match,
// If-None-Match; "" when it is absent). Sent more than once, or empty, it is
// InvalidArguments naming the header and rule (what a value must be): an empty If-Match
// read as absent would make a conditional write unconditional, and of two lines only the
// first would count.
func conditionHeader(r *http.Request, name, rule string) (string, error) {
	vs := r.Header.Values(name)
	switch {
	case len(vs) == 0:
		return "", nil
	case len(vs) > 1:
		return "", invalidArg(name, "must be sent once, as %s", rule)
	case strings.TrimSpace(vs[0]) == "":
		return "", invalidArg(name, "must not be empty: %s", rule)
	}
	return vs[0], nil
}

// parseETag parses one entity tag "<generation>" (quotes optional, no weak tags).
func parseETag(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	g, err := strconv.ParseUint(s, 10, 64)
	if err != nil || g == 0 {
		return 0, errors.New("bad entity tag")
	}
	return g, nil
}

func etag(gen uint64) string { return `"` + strconv.FormatUint(gen, 10) + `"` }

func executableHeader(r *http.Request) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(r.Header.Get("Cairn-Executable"))) {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, invalidArg("Cairn-Executable", "must be true or false")
}

// writeHeaders reads the headers a write and an append share: Cairn-Executable
// (executableHeader), then Idempotency-Key (idempotencyKeyOf).
func writeHeaders(r *http.Request) (exec bool, key string, err error) {
	if exec, err = executableHeader(r); err != nil {
		return false, "", err
	}
	key, err = idempotencyKeyOf(r)
	return exec, key, err
}

// fileAnswer is a write's answer: "status" first, then the other members in byte order,
// the bytes WriteJSON writes for the same members as a map (TestWriteAnswersEncodeAsMaps),
// without a map to build and sort. AppendedBytes and Digest are an append's alone.
type fileAnswer struct {
	Status        string  `json:"status"`
	AppendedBytes *int64  `json:"appended_bytes,omitempty"`
	ContentType   string  `json:"content_type"`
	Created       bool    `json:"created"`
	Digest        *string `json:"digest,omitempty"`
	DigestURI     string  `json:"digest_uri"`
	Executable    bool    `json:"executable"`
	Generation    uint64  `json:"generation"`
	Path          string  `json:"path"`
	RelativePath  string  `json:"relative_path"`
	Section       any     `json:"section"` // null outside the sections
	SizeBytes     int64   `json:"size_bytes"`
	WorkbenchID   string  `json:"workbench_id"`
}

func (h *Handler) fileJSON(id string, res workbench.FileResult) *fileAnswer {
	sec, rel := splitSection(res.Path)
	return &fileAnswer{Status: "success", WorkbenchID: id, Section: sec, RelativePath: rel, Path: res.Presentation,
		SizeBytes: res.Size, Generation: res.Generation, DigestURI: res.DigestURI(), ContentType: res.ContentType,
		Executable: res.Executable, Created: res.Created}
}

func (h *Handler) write(w http.ResponseWriter, r *http.Request, agent, id, path string) {
	r = mutation(r, "put", agent, id, path)
	cond, gen, pre, err := conditions(r)
	if err == nil && r.URL.RawQuery != "" {
		err = invalidArg("query", "PUT takes no query parameters")
	}
	var exec bool
	var key string
	if err == nil {
		exec, key, err = writeHeaders(r)
	}
	var fields map[string]meta.FieldValue
	if err == nil {
		fields, err = fieldHeaders(r)
	}
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	body := &countingReader{r: r.Body}
	res, err := h.svc.Writes.Write(r.Context(), workbench.WriteRequest{Agent: agent, Workbench: id, Path: path, Body: body, SizeHint: r.ContentLength,
		ContentType: r.Header.Get("Content-Type"), Executable: exec, Cond: cond, IfGeneration: gen, CreateWorkbench: true, RequestID: key,
		Fields: fields})
	h.bytesIn.Add(float64(body.n.Load()))
	if err != nil {
		h.writeError(w, r, err, pre)
		return
	}
	produced(r.Context(), res.Generation)
	h.writeFileResult(w, res, h.fileJSON(id, res))
}

// writeFileResult answers a write: 201 when it created the file, else 200; ETag the new
// generation; Idempotent-Replayed when the answer is a stored one.
func (h *Handler) writeFileResult(w http.ResponseWriter, res workbench.FileResult, body *fileAnswer) {
	w.Header().Set("ETag", etag(res.Generation))
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	writeStruct(w, status, body)
}

func (h *Handler) append(w http.ResponseWriter, r *http.Request, agent, id, path string) {
	r = mutation(r, "append", agent, id, path)
	if r.URL.RawQuery != "append" && r.URL.RawQuery != "append=" {
		h.writeError(w, r, invalidArg("query", "POST on a file must be ?append"), noPrecondition)
		return
	}
	gen, pre, err := ifMatchGeneration(r)
	if err == nil && r.Header.Get("If-None-Match") != "" {
		err = invalidArg("If-None-Match", "is not supported on append")
	}
	if err == nil {
		err = rejectUnsupported(r)
	}
	var exec bool
	var key string
	if err == nil {
		exec, key, err = writeHeaders(r)
	}
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	body := &countingReader{r: r.Body}
	res, err := h.svc.Writes.Append(r.Context(), workbench.AppendRequest{Agent: agent, Workbench: id, Path: path, Body: body, SizeHint: r.ContentLength,
		ContentType: r.Header.Get("Content-Type"), Executable: exec, IfGeneration: gen, CreateWorkbench: true, RequestID: key})
	h.bytesIn.Add(float64(body.n.Load()))
	if err != nil {
		h.writeError(w, r, err, pre)
		return
	}
	produced(r.Context(), res.Generation)
	out := h.fileJSON(id, res.FileResult)
	digest := workbench.DigestURI(res.AppendDigest)
	out.AppendedBytes, out.Digest = &res.AppendedBytes, &digest
	h.writeFileResult(w, res.FileResult, out)
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, agent, id, path string) {
	r = mutation(r, "delete", agent, id, path)
	var gen uint64
	var err error
	if r.URL.RawQuery != "" {
		err = invalidArg("query", "DELETE takes no query parameters")
	}
	if err == nil && r.Header.Get("If-None-Match") != "" {
		err = invalidArg("If-None-Match", "is not supported on DELETE")
	}
	if err == nil {
		err = rejectUnsupported(r)
	}
	pre := noPrecondition
	if err == nil {
		gen, pre, err = ifMatchGeneration(r)
	}
	var key string
	if err == nil {
		key, err = idempotencyKeyOf(r)
	}
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	v, err := h.svc.Writes.Delete(r.Context(), agent, id, path, gen, key)
	if err != nil {
		h.writeError(w, r, err, pre)
		return
	}
	produced(r.Context(), v)
	sec, rel := splitSection(path)
	WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "workbench_id": id, "section": sec, "relative_path": rel,
		"path": h.svc.Tools.WorkbenchPath(agent, id) + "/" + path, "generation": v})
}

// read serves GET and HEAD: ETag, If-None-Match (304), single Range (206/416), streaming;
// ?generation=N reads a retained version (history.go), its ETag that generation.
func (h *Handler) read(w http.ResponseWriter, r *http.Request, agent, id, path string) {
	q, err := queryParams(r, "at_snapshot", "disposition", "redirect", "generation")
	var at workbench.At
	if err == nil {
		at, err = atSnapshotQuery(q)
	}
	inline, redirect := false, false
	if err == nil {
		inline, err = dispositionQuery(q)
	}
	if err == nil {
		redirect, err = redirectQuery(q)
	}
	var gen uint64
	if err == nil {
		gen, err = generationQuery(q) // history.go
	}
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	var f *workbench.File
	if gen != 0 {
		f, err = h.svc.Reads.OpenGeneration(r.Context(), agent, id, path, gen)
	} else {
		f, err = h.svc.Reads.OpenAt(r.Context(), agent, id, path, at)
	}
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	info := f.Info
	hd := w.Header()
	fh := headerValues{hd: hd, vs: make([]string, 0, 12)}
	tag := etag(info.Generation)
	fh.set("Etag", tag)
	fh.set("Cairn-Generation", tag[1:len(tag)-1]) // the generation in decimal, as in the ETag
	fh.set("Cairn-Digest", workbench.DigestURI(info.Digest))
	fh.set("Cairn-Executable", strconv.FormatBool(info.Executable))
	fh.set(ProducerHeader, info.Producer.String())
	fh.set("Last-Modified", time.UnixMilli(info.ModifiedAtMs).UTC().Format(http.TimeFormat))
	fh.set("Accept-Ranges", "bytes")
	fh.set("Content-Type", info.ContentType)
	storedContentHeaders(&fh, info.ContentType, path, inline)
	if im := r.Header.Get("If-Match"); im != "" && !etagMatches(im, info.Generation) {
		e := &workbench.Error{Code: workbench.CodeConflict, Message: "the file's generation is " + strconv.FormatUint(info.Generation, 10),
			Details: map[string]any{"current_generation": info.Generation}}
		h.writeError(w, r, e, ifMatch)
		return
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, info.Generation) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if redirect && r.Method == http.MethodGet {
		u, err := f.DirectURL(r.Context())
		if err != nil {
			dropBodyHeaders(hd)
			h.writeError(w, r, err, noPrecondition)
			return
		}
		if u != nil {
			// A direct read (content.go redirectQuery): the client fetches the object itself
			// and checks it against Cairn-Digest, which stays with the file's other Cairn-*
			// headers and ETag. The URL expires: never cache the answer.
			for _, k := range []string{"Content-Type", "Content-Disposition", "X-Content-Type-Options", "Accept-Ranges"} {
				hd.Del(k)
			}
			hd.Set("Location", u.String())
			hd.Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
	}
	offset, length := int64(0), info.Size
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" && ifRangeHolds(r, info.Generation) {
		o, n, ok := parseRange(rg, info.Size)
		if !ok {
			hd.Set("Content-Range", fmt.Sprintf("bytes */%d", info.Size))
			hd.Del("ETag")
			e := &workbench.Error{Code: workbench.CodeInvalidArguments, Message: "Range: not satisfiable for a body of " + strconv.FormatInt(info.Size, 10) + " bytes",
				Details: map[string]any{"field": "Range", "size_bytes": info.Size}}
			WriteJSON(w, http.StatusRequestedRangeNotSatisfiable, e.Envelope())
			return
		}
		if n >= 0 {
			offset, length, status = o, n, http.StatusPartialContent
			hd.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", o, o+n-1, info.Size))
		}
	}
	fh.set("Content-Length", strconv.FormatInt(length, 10))
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	body, err := f.Reader(r.Context(), offset, length)
	if err != nil {
		dropBodyHeaders(hd)
		h.writeError(w, r, err, noPrecondition)
		return
	}
	defer body.Close()
	// The first bytes are read before the status line, so that an object store that is down
	// or an object that is missing is answered with its status and error envelope; only a
	// failure after the body has started cuts the stream.
	first, err := readFirst(body, length)
	if err != nil {
		dropBodyHeaders(hd)
		h.writeError(w, r, err, noPrecondition)
		return
	}
	w.WriteHeader(status)
	n, err := w.Write(first)
	sent := int64(n)
	if err == nil {
		var m int64
		m, err = io.Copy(w, body)
		sent += m
	}
	h.bytesOut.Add(float64(sent))
	if err != nil {
		if r.Context().Err() == nil && h.log != nil {
			h.log.Error("read stream failed", "path", r.URL.EscapedPath(), "sent_bytes", sent, "err", err)
		}
		// Headers are gone: cut the connection (HTTP/2: reset the stream) so that the
		// client sees a failed transfer, never a clean end of a short body.
		panic(http.ErrAbortHandler)
	}
}

// firstReadBytes bounds the buffer readFirst fills before a read's status line is written.
const firstReadBytes = 32 << 10

// readFirst reads the first bytes (at least one, at most firstReadBytes) of a body of
// length bytes. It fails only when no byte came: with the body's error, or
// io.ErrUnexpectedEOF when the body is empty. An error that comes with bytes is left to the
// copy that follows (workbench body readers repeat it on the next Read).
func readFirst(body io.Reader, length int64) ([]byte, error) {
	if length <= 0 {
		return nil, nil
	}
	buf := make([]byte, min(length, firstReadBytes))
	n, err := io.ReadAtLeast(body, buf, 1)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return buf[:n], err
}

// bodyHeaders describe the file's body; an error answer in place of the body drops them.
var bodyHeaders = []string{"ETag", "Cairn-Generation", "Cairn-Digest", "Cairn-Executable", ProducerHeader, "Last-Modified",
	"Accept-Ranges", "Content-Length", "Content-Range"}

func dropBodyHeaders(hd http.Header) {
	for _, k := range bodyHeaders {
		hd.Del(k)
	}
}

func etagMatches(header string, gen uint64) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return true
		}
		t = strings.TrimPrefix(t, "W/")
		if g, err := parseETag(t); err == nil && g == gen {
			return true
		}
	}
	return false
}

// ifRangeHolds: a Range with an If-Range naming another generation serves the whole body.
func ifRangeHolds(r *http.Request, gen uint64) bool {
	ir := r.Header.Get("If-Range")
	if ir == "" {
		return true
	}
	g, err := parseETag(ir)
	return err == nil && g == gen
}

// parseRange parses one "bytes=" range (RFC 9110 §14.1.2) against size. It returns length
// -1 to mean "ignore the header and serve the whole body" (several ranges, another unit or
// a malformed header: all allowed by the RFC), ok=false when a well-formed range cannot be
// satisfied. Positions beyond int64 are clamped to the end of the body.
func parseRange(h string, size int64) (offset, length int64, ok bool) {
	spec, found := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, -1, true
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if !found || !digits(first) || !digits(last) || first == "" && last == "" {
		return 0, -1, true
	}
	if first == "" { // suffix: the last N bytes
		n := parseClamped(last)
		if n == 0 || size == 0 {
			return 0, 0, false
		}
		n = min(n, size)
		return size - n, n, true
	}
	o := parseClamped(first)
	if o >= size {
		return 0, 0, false
	}
	end := size - 1
	if last != "" {
		e := parseClamped(last)
		if e < o {
			return 0, -1, true // invalid range-spec: ignore the header
		}
		end = min(e, size-1)
	}
	return o, end - o + 1, true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseClamped parses a string of digits, clamping values beyond int64 to MaxInt64.
func parseClamped(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return n
}
