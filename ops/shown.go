package ops

import "strings"

// shownURL returns a URL-valued setting as a refusal may echo it: without its userinfo,
// query and fragment, any of which may carry a secret (a password, a presigned
// signature, a token). It works on the text, so that a value url.Parse refuses is cut
// the same way: everything from the first '?' or '#' goes, and of the authority (after
// "scheme://", else from the start, up to the first '/') everything up to its last '@'.
// Every URL-valued setting echoes its value only through here.
func shownURL(raw string) string {
	s := raw
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + len("://")
	}
	end := len(s)
	if i := strings.IndexByte(s[start:], '/'); i >= 0 {
		end = start + i
	}
	if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
		s = s[:start] + s[start+at+1:]
	}
	return s
}
