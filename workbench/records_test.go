package workbench

import (
	"reflect"
	"strings"
	"testing"
)

// TestPageRecordsAgreesWithDecodingTheWholeBody: the streamed page and count of text lines
// and JSON arrays are what decoding the whole body gives, and a body that does not decode
// fails the same way.
func TestPageRecordsAgreesWithDecodingTheWholeBody(t *testing.T) {
	for _, tc := range []struct{ path, body string }{
		{"a.txt", ""}, {"a.txt", "\n"}, {"a.txt", "\n\n"}, {"a.txt", "\r\n"}, {"a.txt", "a"}, {"a.txt", "a\n"},
		{"a.txt", "a\r\nb\n\nc"}, {"a.txt", "é\nü\n"}, {"a.txt", "ok\n\xff\n"}, {"a.txt", strings.Repeat("x", 3*recordReadBuffer) + "\nend"},
		{"a.json", "[]"}, {"a.json", " [ ] "}, {"a.json", "[1, 2.5, -3e2, \"a,]\\\"[{\", {\"k\": [1, {\"x\": \"]\"}]}, [[]], null, true]"},
		{"a.json", "[1,]"}, {"a.json", "[,1]"}, {"a.json", "[1 2]"}, {"a.json", "[1] x"}, {"a.json", "[1"}, {"a.json", "[\"abc]"},
		{"a.json", "{\"a\": 1}"}, {"a.json", "[1]\n"}, {"a.yaml", "a: 1\n"},
	} {
		wantKind, all, wantErr := decodeRecords(tc.path, "", []byte(tc.body))
		for _, page := range [][2]int{{0, 2}, {1, 1}, {2, 300}} {
			kind, got, count, err := pageRecords(strings.NewReader(tc.body), tc.path, "", int64(page[0]), page[1])
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("%q: error %v, whole-body decoding says %v", tc.body, err, wantErr)
			}
			if err != nil {
				if err.Code != wantErr.Code {
					t.Errorf("%q: code %s, want %s", tc.body, err.Code, wantErr.Code)
				}
				continue
			}
			var want []any
			if page[0] < len(all) {
				want = all[page[0]:min(page[0]+page[1], len(all))]
			}
			if kind != wantKind || count != int64(len(all)) || len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
				t.Errorf("%q page %v: %s %d %#v, want %s %d %#v", tc.body, page, kind, count, got, wantKind, len(all), want)
			}
		}
	}
}
