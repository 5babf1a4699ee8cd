package meta

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on names and paths (docs/workbench.md#common-rules).
const (
	MaxNameBytes = 128 // agent ids and workbench ids
	// MaxRelativePathBytes and MaxRelativePathComponents bound a path relative to its
	// section (docs/workbench.md#common-rules); a path inside a workbench also holds the
	// section's name, so its bounds leave room for that one component.
	MaxRelativePathBytes      = 4096
	MaxRelativePathComponents = 64
	MaxPathBytes              = MaxRelativePathBytes + 16 // a path inside a workbench
	MaxPathComponents         = MaxRelativePathComponents + 1
	keySeparator              = 0x00 // replaces '/' inside keys; NUL is never valid in a path
	incarnationKeySize        = 8
)

// ValidateName checks an agent id or workbench id: an ASCII letter or digit, then ASCII
// letters, digits, '_' or '-', at most MaxNameBytes bytes, case-sensitive. field names the
// argument in the returned InvalidArguments error.
func ValidateName(field, s string) *Error {
	if s == "" {
		return invalidArg(field, "must not be empty")
	}
	if len(s) > MaxNameBytes {
		return invalidArg(field, "must be at most %d bytes, got %d", MaxNameBytes, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return invalidArg(field, "must start with an ASCII letter or digit")
		}
		if !alnum && c != '_' && c != '-' {
			return invalidArg(field, "may contain only ASCII letters, digits, '_' and '-' (byte %d is %s)", i, DescribeChar(s[i:]))
		}
	}
	return nil
}

// DescribeChar describes the character s starts with for an error: a rune quoted, with
// its code point ('é' U+00E9, '\x00' U+0000), or a byte that starts no valid UTF-8 in
// hex (0xC3, not UTF-8): never a byte shown as the Latin-1 character of its value.
func DescribeChar(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n <= 1 {
		return fmt.Sprintf("0x%02X, not UTF-8", s[0])
	}
	return fmt.Sprintf("%q U+%04X", r, r)
}

// ValidatePath checks a relative path inside a workbench: non-empty, at most MaxPathBytes
// bytes and MaxPathComponents components, valid UTF-8, not absolute, no empty component
// (so no "//" and no trailing "/"), no "." or ".." component, no backslash, no NUL. No
// Unicode normalization or case folding happens anywhere. field names the argument in the
// returned InvalidArguments error. This is the syntax of every stored path, old or new;
// a path about to be written must also keep the rules of names (ValidateNewPath, name.go).
func ValidatePath(field, p string) *Error {
	if p == "" {
		return invalidArg(field, "must not be empty")
	}
	if len(p) > MaxPathBytes {
		return invalidArg(field, "must be at most %d bytes, got %d", MaxPathBytes, len(p))
	}
	if !utf8.ValidString(p) {
		return invalidArg(field, "must be valid UTF-8")
	}
	if p[0] == '/' {
		return invalidArg(field, "must be relative, not absolute")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return invalidArg(field, "must not contain NUL")
	}
	if strings.IndexByte(p, '\\') >= 0 {
		return invalidArg(field, "must not contain a backslash")
	}
	n := 0
	for comp := range strings.SplitSeq(p, "/") {
		n++
		switch comp {
		case "":
			return invalidArg(field, "must not contain an empty component ('//' or a trailing '/')")
		case ".", "..":
			return invalidArg(field, "must not contain a %q component", comp)
		}
	}
	if n > MaxPathComponents {
		return invalidArg(field, "must have at most %d components, got %d", MaxPathComponents, n)
	}
	return nil
}

// ComparePaths orders paths component-wise ('/' below every other byte): the order in
// which View.Files walks a workbench.
func ComparePaths(a, b string) int { return comparePaths(a, b) }

// pathKey encodes (incarnation, path) so that byte order of keys is component-wise order of
// paths: '/' becomes 0x00, which sorts below every byte a component may hold, so "a/b"
// and its children sort together and "a-b" never interleaves with "a/...".
func pathKey(incarnation uint64, p string) string {
	var b strings.Builder
	b.Grow(incarnationKeySize + len(p))
	var inc [incarnationKeySize]byte
	binary.BigEndian.PutUint64(inc[:], incarnation)
	b.Write(inc[:])
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			b.WriteByte(keySeparator)
		} else {
			b.WriteByte(p[i])
		}
	}
	return b.String()
}

// keyPath decodes the path part of a pathKey.
func keyPath(key string) string {
	return strings.ReplaceAll(key[incarnationKeySize:], "\x00", "/")
}

// childPrefix is the key prefix of everything strictly below dir ("" = the workbench top).
func childPrefix(incarnation uint64, dir string) string {
	if dir == "" {
		return pathKey(incarnation, "")
	}
	return pathKey(incarnation, dir) + "\x00"
}

// ancestorKey returns pathKey(inc, d) for an ancestor directory d of the path whose key
// is key (d a prefix of it, "" for the root): since pathKey maps byte for byte, that is a
// prefix of key, and taking it allocates nothing.
func ancestorKey(key, d string) string { return key[:incarnationKeySize+len(d)] }

// parentDir returns the directory part of p ("" for a top-level name).
func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// baseName returns the last component of p.
func baseName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// joinPath joins a directory and a name ("" dir = top level).
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
