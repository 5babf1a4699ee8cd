package rest_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
)

// TestWriteAnswersEncodeAsMaps checks that a PUT's and an append's answers, written from
// a struct, are byte for byte what WriteJSON writes for the same members as a map (what
// the handler built before): "status" first, the others in byte order, HTML characters
// as they are; for new and overwritten files, inline and not, and names JSON or HTML
// would escape.
func TestWriteAnswersEncodeAsMaps(t *testing.T) {
	srv := newServer(t)
	base := srv.URL + "/v1/agents/a/workbenches/w/files/"
	big := strings.Repeat("x", 64<<10)
	cases := []struct{ method, path, body string }{
		{"PUT", "input/a&b<c>.txt", "{\"k\": 1}"},
		{"PUT", "input/a&b<c>.txt", "again"},
		{"PUT", "output/d\u00e9j\u00e0/big.bin", big},
		{"POST", "logs/run%20%22q%22.log?append", "line 1\n"},
		{"POST", "logs/run%20%22q%22.log?append", big},
	}
	for _, c := range cases {
		r := do(t, c.method, base+c.path, strings.NewReader(c.body), "Content-Type", "text/plain; charset=\"<a>&b\"")
		if r.status != 200 && r.status != 201 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		if _, ok := m["appended_bytes"]; ok != (c.method == "POST") {
			t.Fatalf("%s %s: appended_bytes present %v: %s", c.method, c.path, ok, r.body)
		}
		w := httptest.NewRecorder()
		rest.WriteJSON(w, 200, m)
		if !bytes.Equal(r.body, w.Body.Bytes()) {
			t.Fatalf("%s %s: body\n%s\nwant the map's encoding\n%s", c.method, c.path, r.body, w.Body.Bytes())
		}
	}
}
