package rest_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
)

// TestListingsEncodeAsTheirMapsDid checks that a listing's body is byte for byte the
// encoding of the same values as nested maps (what the handler built before it encoded
// entries as structs, rest.WriteJSON with "status" first and every other key in byte
// order), for files and directories, at the workbench top (sections, section null) and
// inside a section, with names that JSON or HTML would escape.
func TestListingsEncodeAsTheirMapsDid(t *testing.T) {
	srv := newServer(t)
	base := srv.URL + "/v1/agents/a/workbenches/w/"
	for _, p := range []string{"input/a&b<c>.txt", "input/d\u00e9j\u00e0/x.json", "input/sub/deeper/y", "input/z \"q\""} {
		expect(t, do(t, "PUT", base+"files/"+strings.ReplaceAll(p, " ", "%20"), strings.NewReader("{\"k\": 1}"), "Content-Type", "application/json"), 201, "")
	}
	for _, u := range []string{"list", "list?path=input", "list?path=input/sub", "list?path=input&limit=2"} {
		r := do(t, "GET", base+u, nil)
		expect(t, r, 200, "")
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if len(m["entries"].([]any)) == 0 {
			t.Fatalf("%s: no entries: %s", u, r.body)
		}
		w := httptest.NewRecorder()
		rest.WriteJSON(w, 200, m)
		if !bytes.Equal(r.body, w.Body.Bytes()) {
			t.Fatalf("%s: body\n%s\nwant the maps' encoding\n%s", u, r.body, w.Body.Bytes())
		}
	}
}
