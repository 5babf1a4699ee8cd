package rest_test

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
)

// referenceWriteJSON is WriteJSON as it was written before it encoded into a pooled
// buffer: status first by splicing two encodings.
func referenceWriteJSON(v map[string]any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	st, hasStatus := v["status"]
	if !hasStatus {
		_ = enc.Encode(v)
		return buf.Bytes()
	}
	delete(v, "status")
	_ = enc.Encode(st)
	head := bytes.Clone(bytes.TrimSpace(buf.Bytes()))
	buf.Reset()
	_ = enc.Encode(v)
	rest := bytes.TrimSpace(buf.Bytes())
	out := append([]byte(`{"status":`), head...)
	if len(rest) > 2 {
		out = append(append(out, ','), rest[1:]...)
	} else {
		out = append(out, '}')
	}
	return append(out, '\n')
}

// TestWriteJSONWritesStatusFirst checks WriteJSON's bytes against the splice it replaced,
// for answers with and without "status", with nothing else, with HTML characters, and
// with a value that does not encode (the answer then keeps what did); and that buffers
// reused across answers carry nothing over.
func TestWriteJSONWritesStatusFirst(t *testing.T) {
	maps := func() []map[string]any {
		return []map[string]any{
			{"status": "success", "b": 1, "a": []any{"<x>&", nil}, "c": map[string]any{"z": 1, "y": "é"}},
			{"status": "success"},
			{"a": 1, "b": "two"},
			{},
			{"status": "error", "code": "X", "details": map[string]any{"bad": math.NaN()}},
			{"status": math.Inf(1), "a": 1},
			{"status": "success", "big": string(bytes.Repeat([]byte("x"), 300<<10))},
			{"status": "success", "after": "big"},
		}
	}
	want := maps()
	for i, m := range maps() {
		w := httptest.NewRecorder()
		rest.WriteJSON(w, 200, m)
		if exp := referenceWriteJSON(want[i]); !bytes.Equal(w.Body.Bytes(), exp) {
			t.Errorf("map %d: WriteJSON wrote\n%.200s\nwant\n%.200s", i, w.Body.Bytes(), exp)
		}
		if w.Header().Get("Content-Type") != "application/json" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("map %d: headers %v", i, w.Header())
		}
	}
}
