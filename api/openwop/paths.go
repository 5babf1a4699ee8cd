package openwop

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// The routes this facade owns (escaped paths).
const (
	DiscoveryPath = "/.well-known/openwop"
	filesPrefix   = "/v1/host/workspace/files"
	runsPrefix    = "/v1/runs"
	seamPath      = "/v1/host/sample/workspace/op"
	// OpenAPIPath serves this facade's OpenAPI document (openapi.json).
	OpenAPIPath = "/v1/openapi-openwop.json"
	// The OpenWOP major-2 aliases of the seams profile (conformance seams-v2): the
	// workspace lives only there in v2, and the suite rewrites /v1/host/sample/... and
	// /v1/host/workspace/files... to them.
	v2FilesPrefix = "/conformance/seams/workspace/files"
	v2SeamPath    = "/conformance/seams/sample/workspace/op"
)

// Owns reports whether escapedPath is one of this facade's routes (the node's
// authentication middleware answers their 401 with this facade's envelope).
func Owns(escapedPath string) bool {
	switch escapedPath {
	case DiscoveryPath, OpenAPIPath, seamPath, v2SeamPath:
		return true
	}
	for _, p := range ownedPrefixes {
		if rest, ok := strings.CutPrefix(escapedPath, p); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return false
}

// ownedPrefixes are the routes Owns matches with everything under them.
var ownedPrefixes = [...]string{filesPrefix, runsPrefix, v2FilesPrefix, proposalsPrefix, installedPrefix, agentsPath}

// Public reports whether escapedPath needs no credential (discovery and the OpenAPI
// document; OpenAPI `security: []`).
func Public(escapedPath string) bool {
	return escapedPath == DiscoveryPath || escapedPath == OpenAPIPath
}

// MaxPathBytes is the longest workspace path (the pattern's 1 + 255 characters).
const MaxPathBytes = 256

// pathPattern is the published WorkspacePath pattern (workspace-file.schema.json).
var pathPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$`)

// DecodePath decodes the escaped {path} of a route exactly once and validates it: the
// published pattern, and no "." or ".." segment, no empty segment and no trailing "/"
// (the prose forbids "..", and Cairn's paths have no empty or dot segments: such a name
// could not be the same file through REST). Errors are validation_error.
func DecodePath(escaped string) (string, *Error) {
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return "", invalid("Invalid workspace path: bad percent-encoding.")
	}
	if !pathPattern.MatchString(p) {
		return "", invalid("Invalid workspace path: must match ^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$.")
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "..":
			return "", invalid("Invalid workspace path: a '..' segment is not allowed.")
		case ".", "":
			return "", invalid("Invalid workspace path: empty and '.' segments are not allowed.")
		}
	}
	return p, nil
}

// parseVersion parses ?version=N: an integer (any sign; a version that does not exist
// answers not_found). A non-integer is validation_error.
func parseVersion(raw string) (int64, *Error) {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, invalid("version MUST be an integer.")
	}
	return n, nil
}

func itoa(n int) string { return strconv.Itoa(n) }

// Route names the facade's route family of a request for metrics and the access log
// (never the raw path: it names tenants' files); false for a path the facade does not own.
func Route(r *http.Request) (string, bool) {
	p := r.URL.EscapedPath()
	if !Owns(p) {
		return "", false
	}
	switch {
	case p == DiscoveryPath:
		return "openwop_discovery", true
	case p == OpenAPIPath:
		return "openwop_openapi", true
	case p == seamPath || p == v2SeamPath:
		return "openwop_seam", true
	case strings.HasPrefix(p, proposalsPrefix):
		return "openwop_proposals", true
	case strings.HasPrefix(p, installedPrefix):
		return "openwop_installed_packs", true
	case strings.HasPrefix(p, agentsPath):
		return "openwop_agents", true
	case strings.HasPrefix(p, runsPrefix):
		return "openwop_runs", true
	}
	return "openwop_files", true
}
