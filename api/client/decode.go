package client

import (
	"bytes"
	"encoding/json"
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// decodeResult decodes the JSON value of a success body into out with the semantics of
// encoding/json's Decoder with UseNumber, in about 40% of its time for a listing page:
// the reference implementation of encoding/json/v2 under its v1 options (case-insensitive
// names, duplicate names and invalid UTF-8 allowed, legacy ",string" and omitempty, methods
// called as v1 calls them). Two kinds of value keep encoding/json itself, since v2 does not
// know encoding/json's own types: an untyped value (any, map[string]any, []any) decodes
// with its numbers as json.Number, exactly as the server wrote them, and a json.Number
// field takes the number's text. Unlike a Decoder, anything but whitespace after the
// value is an error: the server writes one value per body.
//
// FuzzDecodeResultMatchesEncodingJSON checks the results are the same value.
func decodeResult(body []byte, out any) error {
	// A page into a new ListPage (decodeAnswer's) takes decodeListPage; what it does not
	// take starts again from the new page.
	if p, ok := out.(*ListPage); ok && reflect.ValueOf(p).Elem().IsZero() {
		if decodeListPage(body, p) {
			return nil
		}
		*p = ListPage{}
	}
	return jsonv2.Unmarshal(body, out, decodeOptions)
}

var decodeOptions = jsonv2.JoinOptions(
	jsonv1.DefaultOptionsV1(),
	jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
		jsonv2.UnmarshalFunc(func(b []byte, v *any) error {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			return dec.Decode(v)
		}),
		jsonv2.UnmarshalFunc(func(b []byte, n *json.Number) error { return json.Unmarshal(b, n) }),
	)),
)
