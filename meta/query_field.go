package meta

import (
	"encoding/hex"
	"slices"
	"strings"
	"time"
)

// Built-in field names.
const (
	ArtifactSection     = "artifact.section"
	ArtifactName        = "artifact.name"
	ArtifactExt         = "artifact.ext"
	ArtifactSizeBytes   = "artifact.size_bytes"
	ArtifactContentType = "artifact.content_type"
	ArtifactGeneration  = "artifact.generation"
	ArtifactUpdatedAt   = "artifact.updated_at"
	ArtifactDigest      = "artifact.digest"
	ArtifactProducer    = "artifact.producer"
	// ArtifactProducerPrincipal and ArtifactProducerSurface are Cairn's: the parts of
	// artifact.producer, as workbench_stat's card.producer_principal and producer_surface.
	ArtifactProducerPrincipal = "artifact.producer_principal"
	ArtifactProducerSurface   = "artifact.producer_surface"
)

const artifactPrefix = "artifact."

var builtinFields = []string{ArtifactSection, ArtifactName, ArtifactExt, ArtifactSizeBytes,
	ArtifactContentType, ArtifactGeneration, ArtifactUpdatedAt, ArtifactDigest, ArtifactProducer,
	ArtifactProducerPrincipal, ArtifactProducerSurface}

var builtinKinds = map[string]FieldKind{
	ArtifactSection: FieldString, ArtifactName: FieldString, ArtifactExt: FieldString,
	ArtifactSizeBytes: FieldInt, ArtifactContentType: FieldString, ArtifactGeneration: FieldInt,
	ArtifactUpdatedAt: FieldString, ArtifactDigest: FieldString, ArtifactProducer: FieldString,
	ArtifactProducerPrincipal: FieldString, ArtifactProducerSurface: FieldString,
}

// BuiltinFields returns the names of the built-in fields, in documentation order.
func BuiltinFields() []string { return slices.Clone(builtinFields) }

// fileField returns the value of field name of the file at path with entry e.
func fileField(path string, e *Entry, name string) (FieldValue, bool) {
	if !strings.HasPrefix(name, artifactPrefix) {
		v, ok := e.Fields[name]
		return v, ok
	}
	switch name {
	case ArtifactSection:
		if s, ok := sectionOf(path); ok {
			return StringField(s), true
		}
	case ArtifactName:
		return StringField(baseName(path)), true
	case ArtifactExt:
		if x, ok := extOf(path); ok {
			return StringField(x), true
		}
	case ArtifactSizeBytes:
		return IntField(e.Size), true
	case ArtifactContentType:
		return StringField(e.ContentType), true
	case ArtifactGeneration:
		return IntField(int64(e.Generation)), true
	case ArtifactUpdatedAt:
		return StringField(FormatUpdatedAt(e.ModifiedAtMs)), true
	case ArtifactDigest:
		return StringField(digestURI(e.Digest)), true
	case ArtifactProducer:
		if !e.Producer.IsZero() {
			return StringField(e.Producer.String()), true
		}
	case ArtifactProducerPrincipal:
		if e.Producer.Principal != "" {
			return StringField(e.Producer.Principal), true
		}
	case ArtifactProducerSurface:
		if e.Producer.Surface != "" {
			return StringField(e.Producer.Surface), true
		}
	}
	return FieldValue{}, false
}

// forEachField calls fn for every field the file has: the built-ins in BuiltinFields
// order, then the attached fields in no particular order.
func forEachField(path string, e *Entry, fn func(name string, v FieldValue)) {
	for _, name := range builtinFields {
		if v, ok := fileField(path, e, name); ok {
			fn(name, v)
		}
	}
	for name, v := range e.Fields {
		fn(name, v)
	}
}

// Sections are the five virtual prefixes of a workbench (docs/workbench.md#common-rules).
var sections = []string{"input", "scripts", "outputs", "logs", "metadata"}

func sectionOf(path string) (string, bool) {
	i := strings.IndexByte(path, '/')
	if i < 0 || !slices.Contains(sections, path[:i]) {
		return "", false
	}
	return path[:i], true
}

func extOf(path string) (string, bool) {
	name := baseName(path)
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || i == len(name)-1 {
		return "", false
	}
	b := []byte(name[i+1:])
	for j, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[j] = c + ('a' - 'A')
		}
	}
	return string(b), true
}

// FormatUpdatedAt renders Unix milliseconds as artifact.updated_at does: RFC 3339 UTC with
// exactly three fractional digits, so byte order is time order (years 0000..9999).
func FormatUpdatedAt(ms int64) string {
	var b [32]byte
	return string(appendUpdatedAt(b[:0], ms))
}

// appendUpdatedAt appends FormatUpdatedAt(ms).
func appendUpdatedAt(b []byte, ms int64) []byte {
	return time.UnixMilli(ms).UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
}

// digestURI renders a digest as "sha256:" + lower-case hex.
func digestURI(d Digest) string {
	var b [len("sha256:") + 2*len(Digest{})]byte
	return string(appendDigestURI(b[:0], d))
}

// appendDigestURI appends digestURI(d).
func appendDigestURI(b []byte, d Digest) []byte {
	return hex.AppendEncode(append(b, "sha256:"...), d[:])
}

// checkFieldName accepts a built-in field name or a valid attached field name.
func checkFieldName(arg, name string) *Error {
	if strings.HasPrefix(name, artifactPrefix) {
		if _, ok := builtinKinds[name]; ok {
			return nil
		}
		return invalidArg(arg, "%q is not a built-in field (%s)", name, strings.Join(builtinFields, ", "))
	}
	return ValidateFieldName(arg, name)
}

// kindFamily groups kinds the way predicates compare them: numbers together, so an
// integer is a "number" as a float is.
func kindFamily(k FieldKind) string {
	if k == FieldInt {
		return kindName(FieldFloat)
	}
	return kindName(k)
}

// kindName is the JSON type name of a kind.
func kindName(k FieldKind) string {
	switch k {
	case FieldInt:
		return "integer"
	case FieldFloat:
		return "number"
	case FieldString:
		return "string"
	case FieldBool:
		return "boolean"
	}
	return "null"
}
