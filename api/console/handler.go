package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/cairnstore/cairn/api/documents"
)

// Prefix is the path prefix of the console; /ui itself redirects to it.
const Prefix = "/ui/"

// SessionPath answers who the request's key is (session.go).
const SessionPath = Prefix + "session"

// SecurityPolicy is the Content-Security-Policy of every console answer: everything from
// this origin only, no inline script or style, no plugins, no <base>, forms only to this
// origin, never framed (CSP Level 3).
const SecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

//go:embed static
var static embed.FS

// Documents is what the console reads of the working-documents surface
// (*documents.Handler): the owner of a request's documents and the registered runners.
type Documents interface {
	Owner(r *http.Request) (tenant, workspace string, ok bool)
	Runners() []documents.Runner
}

// Packs is what the console reads of the OpenWOP facade (*openwop.Handler): the owner it
// serves a request as, the only one whose pack proposals that key reads and decides there.
type Packs interface {
	Owner(r *http.Request) (tenant, workspace string, ok bool)
}

// Handler serves Prefix and hands every other request to next.
type Handler struct {
	docs  Documents
	packs Packs
	next  http.Handler
	files map[string]file // by escaped path under Prefix ("" is index.html)
}

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// contentTypes are the types of the embedded files, by extension; a file of another
// extension is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// New returns the console over docs (nil: the node serves no working documents) and
// packs (nil: no OpenWOP facade) in front of next.
func New(docs Documents, packs Packs, next http.Handler) *Handler {
	h := &Handler{docs: docs, packs: packs, next: next, files: map[string]file{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return nil
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		name := strings.TrimPrefix(p, "static/")
		if name == "index.html" {
			name = ""
		}
		h.files[name] = file{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return nil
	})
	if err != nil {
		panic("console: the embedded files cannot be read: " + err.Error()) // a broken build
	}
	return h
}

// Owns reports whether the console serves path (an escaped URL path).
func Owns(path string) bool { return path == "/ui" || strings.HasPrefix(path, Prefix) }

// Public reports whether path is one of the console's files, which anyone may fetch (they
// hold no data); SessionPath is not.
func Public(path string) bool { return Owns(path) && path != SessionPath }

// SetHeaders sets the headers every console answer carries — SecurityPolicy, nosniff, no
// referrer, no caching without revalidation, never framed — on h. The node's guard and
// authentication call it too for a console path, so that their refusals (403, 401) carry
// them like the console's own answers.
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", SecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Frame-Options", "DENY")
}

// ServeHTTP serves the console's files and SessionPath, and hands every other path to next.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	if !Owns(p) {
		h.next.ServeHTTP(w, r)
		return
	}
	hd := w.Header()
	SetHeaders(hd)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed here (allowed: GET, HEAD)")
		return
	}
	if p == "/ui" {
		hd.Set("Location", Prefix)
		w.WriteHeader(http.StatusPermanentRedirect)
		return
	}
	if p == SessionPath {
		h.session(w, r)
		return
	}
	f, ok := h.files[strings.TrimPrefix(p, Prefix)]
	if !ok {
		plain(w, http.StatusNotFound, "no such console file: "+p)
		return
	}
	hd.Set("Content-Type", f.contentType)
	hd.Set("ETag", f.etag)
	if r.Header.Get("If-None-Match") == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Write(f.body)
}

// plain answers status with a one-line text message.
func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(msg + "\n"))
}
