package openwop

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/internal/strictjson"
)

// Decoding request bodies. Every body the facade reads is a closed JSON object
// (workspace-file-create.schema.json, the seam's, RunOptions', proposal.schema.json's
// writable members): a member it does not name is refused, and a refusal names the member
// by its wire name and the rule it broke ("content: must be a string"), never a Go type,
// a Go field or the decoder's wording (issue 25 finding 14).

// maxEchoedName bounds how much of an unknown member's name an error repeats.
const maxEchoedName = 64

// bodyError is a body that is not the closed object its route takes; its text is the rule.
type bodyError struct{ rule string }

func (e *bodyError) Error() string { return e.rule }

// readClosed reads one JSON object of at most limit bytes into v (a pointer to a struct
// whose json tags name the members the object may hold). tooLarge: the body is over
// limit. err: a transport error, or a *bodyError naming the member and rule.
func readClosed(w http.ResponseWriter, r *http.Request, limit int64, v any) (tooLarge bool, err error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var over *http.MaxBytesError
	if errors.As(err, &over) {
		return true, err
	}
	if err != nil {
		return false, &bodyError{"the body could not be read"}
	}
	return false, decodeClosed(b, v)
}

// decodeClosed decodes the JSON object b into v, refusing text that is not Unicode (invalid
// UTF-8, an unpaired surrogate escape), a member named twice, members v does not name
// (matched exactly: encoding/json would also match other letter cases) and values of the
// wrong JSON kind. Errors are *bodyError.
func decodeClosed(b []byte, v any) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil || members == nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return &bodyError{"the body is not valid JSON (at byte " + strconv.FormatInt(syn.Offset, 10) + ")"}
		}
		return &bodyError{"the body must be a JSON object"}
	}
	// encoding/json turns text that is not Unicode into U+FFFD and keeps the last of two
	// members of one name: a body is taken as sent or refused, as on Cairn's other surfaces.
	if serr := strictjson.Check(b); serr != nil {
		return &bodyError{"the body is refused: " + serr.Error()}
	}
	names := memberNames(reflect.TypeOf(v).Elem())
	for name := range members {
		if !slices.Contains(names, name) {
			return &bodyError{"unknown member " + quoteName(name) + "; the object holds only " + strings.Join(names, ", ")}
		}
	}
	// null is no string or integer: encoding/json would leave such a member unset, as if
	// absent (a member of any kind, json.RawMessage, keeps it).
	t := reflect.TypeOf(v).Elem()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if raw, ok := members[name]; ok && t.Field(i).Type.Kind() == reflect.Pointer && string(bytes.TrimSpace(raw)) == "null" {
			return &bodyError{name + ": must be " + jsonKind(t.Field(i).Type) + ", not null"}
		}
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &bodyError{te.Field + ": must be " + jsonKind(te.Type)}
		}
		return &bodyError{"the body does not have the members' JSON kinds"}
	}
	return nil
}

// memberNames returns the JSON member names of struct type t, in declaration order.
func memberNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// jsonKind names the JSON kind a Go type decodes from, with its article.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// quoteName quotes a member name the client sent, cut to maxEchoedName bytes.
func quoteName(name string) string {
	if len(name) > maxEchoedName {
		name = strings.ToValidUTF8(name[:maxEchoedName], "") + "…"
	}
	return strconv.Quote(name)
}

// decodeStrict decodes raw (a JSON value already read) into v as decodeClosed does.
func decodeStrict(raw []byte, v any) error { return decodeClosed(bytes.TrimSpace(raw), v) }
