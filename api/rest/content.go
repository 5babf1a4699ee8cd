package rest

import (
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// storedContentHeaders makes a stored body inert on the API's origin (a file stored as
// text/html must not run as a page of this server): Content-Security-Policy: sandbox
// (no script, no same-origin rights even when rendered), nosniff,
// Cross-Origin-Resource-Policy: same-origin (another origin's <script src> or <img> gets
// nothing: Fetch, CORP), and for active types (activeType) Content-Disposition:
// attachment unless the caller asked for ?disposition=inline.
func storedContentHeaders(hd *headerValues, contentType, path string, inline bool) {
	hd.set("Content-Security-Policy", "sandbox")
	hd.set("X-Content-Type-Options", "nosniff")
	hd.set("Cross-Origin-Resource-Policy", "same-origin")
	if inline || !activeType(contentType) {
		return
	}
	name := path[strings.LastIndexByte(path, '/')+1:]
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		hd.set("Content-Disposition", v)
	} else {
		hd.set("Content-Disposition", "attachment")
	}
}

// headerValues sets response headers whose keys are constants in canonical form (as
// http.CanonicalHeaderKey writes them; TestHeaderValuesKeysAreCanonical): each set does
// what Header.Set does without canonicalizing the key again, and the values of one
// response share a backing array (a file read sets a dozen headers).
type headerValues struct {
	hd http.Header
	vs []string
}

// set replaces key's values with v. Each value's slice has no room beyond itself, so an
// Add to one header never writes into the next one's value.
func (h *headerValues) set(key, v string) {
	h.vs = append(h.vs, v)
	n := len(h.vs)
	h.hd[key] = h.vs[n-1 : n : n]
}

// activeType reports whether a browser may execute or render a body of this media type
// with script: HTML, XHTML, SVG, any XML, JavaScript/ECMAScript. A type that does not
// parse counts as active.
func activeType(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return true
	}
	switch {
	case mt == "text/html", mt == "application/xhtml+xml", mt == "image/svg+xml",
		mt == "text/xml", mt == "application/xml", strings.HasSuffix(mt, "+xml"),
		strings.Contains(mt, "javascript"), strings.Contains(mt, "ecmascript"):
		return true
	}
	return false
}

// dispositionQuery reads ?disposition=inline|attachment (default attachment for active
// types): whether the caller asked for the body inline.
func dispositionQuery(q url.Values) (bool, error) {
	switch q.Get("disposition") {
	case "", "attachment":
		return false, nil
	case "inline":
		return true, nil
	}
	return false, invalidArg("disposition", `must be "inline" or "attachment"`)
}

// redirectQuery parses ?redirect: a direct read (docs/architecture.md#the-read-path). Present without a value
// or "true": a GET of a one-segment body stored uncompressed is answered 307 to a
// presigned object-store URL when the node allows direct reads (--s3-direct-reads); any
// other body, or a node that does not, is served as usual (200/206). "false": as absent.
func redirectQuery(q url.Values) (bool, error) {
	if _, ok := q["redirect"]; !ok {
		return false, nil
	}
	switch q.Get("redirect") {
	case "", "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalidArg("redirect", `must be empty, "true" or "false"`)
}
