package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// decodeTargets are the result types the fuzz test decodes into: listings, the untyped
// values of queries (any, map[string]any, json.Number), kept raw JSON, and error details.
var decodeTargets = []func() any{
	func() any { return new(ListPage) },
	func() any { return new(SearchResult) },
	func() any { return new(AggregateResult) },
	func() any { return new(CatalogResult) },
	func() any { return new(FindResult) },
	func() any { return new(HistoryPage) },
	func() any { return new(ProposalList) },
	func() any { return new(DiffResult) },
	func() any { return new(json.RawMessage) },
	func() any { return new(map[string]any) },
	func() any { return new(any) },
	func() any { return new(errorEnvelope) },
	func() any { return new(struct{ N json.Number }) },
}

// errorEnvelope has the error body's shape: details are untyped.
type errorEnvelope struct {
	Code    string         `json:"code"`
	Details map[string]any `json:"details"`
}

// decodeWithEncodingJSON is what decodeResult replaces: a Decoder with UseNumber, and
// (as decodeResult does) nothing but whitespace after the value.
func decodeWithEncodingJSON(body []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return fmt.Errorf("%d bytes after the value", len(rest))
	}
	return nil
}

// A body decodes into the same value as encoding/json makes of it, or fails in both.
func FuzzDecodeResultMatchesEncodingJSON(f *testing.F) {
	seeds := []string{
		`{"workbench_id":"w","entries":[{"name":"a","path":"/workbenches/d/w/input/a","section":"input","relative_path":"a","kind":"file","size_bytes":3,"generation":7,"executable":true,"content_type":"text/plain"},{"name":"d","section":null,"kind":"directory","entry_count":2}],"next_cursor":null,"truncated":false}`,
		`{"hits":[{"workbench_id":"w","path":"p","score":1.5,"values":{"n":12345678901234567890,"f":1e-7,"s":"x","b":true,"z":null}}],"next_cursor":"c"}`,
		`{"groups":[{"key":{"artifact.ext":"py"},"count":3,"values":{"sum":1.25,"min":-0}}]}`,
		`{"manifest":{"a":[1,2,{"b":"c"}]},"workbenches":[]}`,
		`{"code":"InvalidArguments","details":{"field":"limit","max":1000,"list":[1,2.5,"x"]}}`,
		`{"N":12.50}`, `{"N":"12"}`, `{"n":1}`, `{"ENTRIES":[{"NAME":"case"}]}`,
		`{"entries":[{"name":"a"}],"entries":[{"path":"dup"}]}`,
		"{\"workbench_id\":\"bad \xff utf8\"}", `{"workbench_id":"\ud800"}`,
		`[1,2,3]`, `"s"`, `12`, `null`, `{"size_bytes":"3"}`, `{"size_bytes":1.5}`, `{"generation":-1}`,
		`{} `, `{}x`, `{"a":1}{"b":2}`, ``, `{`, `{"truncated":"yes"}`,
	}
	seeds = append(seeds, listPageEdges...)
	for _, s := range seeds {
		for i := range decodeTargets {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, target uint8, body []byte) {
		mk := decodeTargets[int(target)%len(decodeTargets)]
		want, got := mk(), mk()
		wantErr := decodeWithEncodingJSON(body, want)
		gotErr := decodeResult(body, got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%T of %q: encoding/json says %v, decodeResult says %v", want, body, wantErr, gotErr)
		}
		if wantErr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%T of %q:\nencoding/json %#v\ndecodeResult  %#v", want, body, want, got)
		}
	})
}

// listPageEdges are listing pages at the edges of what decodeListPage reads itself.
var listPageEdges = []string{
	`{"status":"success","at_snapshot":12,"entries":[{"content_type":"text/plain","entry_count":0,"executable":true,"generation":3,"kind":"file","name":"a","path":"/w/input/a","relative_path":"a","section":"input","size_bytes":5},{"entry_count":2,"kind":"directory","name":"d","path":"/w/d","relative_path":"d","section":null,"size_bytes":0}],"entry_count":2,"next_cursor":null,"path":"","truncated":false,"workbench_id":"w","workbench_path":"/w"}` + "\n",
	` { "entries" : [ { "name" : "déjà" } ] , "entry_count" : -0 } `,
	`{"entries":[{"name":"x","path":"/w/a","relative_path":"long/er/than/the/path"},{"name":"a","path":null,"relative_path":""},{"relative_path":"b","path":"/w/ab"}]}`,
	`{"entries":null}`, `{"entries":[]}`, `{"entries":[null]}`, `{"entries":[{}],"entries":[]}`, `{"entries":[{"name":"a","size_bytes":1}],"entries":[{"name":"b"}]}`, `{"entries":[{"name":"a","name":"b"}]}`,
	`{"entries":[{"NAME":"a"}]}`, `{"entries":[{"ſize_bytes":1}]}`, `{"ENTRY_COUNT":1}`, `{"entries":[{"nam\u0065":"a"}]}`,
	`{"entries":[{"name":"a\"b"}]}`, `{"entries":[{"name":"a\u2028"}]}`, "{\"entries\":[{\"name\":\"a\tb\"}]}", "{\"entries\":[{\"name\":\"\xff\"}]}",
	`{"entries":[{"size_bytes":01}]}`, `{"entries":[{"size_bytes":1.0}]}`, `{"entries":[{"size_bytes":1e2}]}`, `{"entries":[{"size_bytes":-}]}`,
	`{"entries":[{"size_bytes":9223372036854775808}]}`, `{"entries":[{"generation":-0}]}`, `{"entries":[{"generation":18446744073709551615}]}`,
	`{"entries":[{"executable":null,"generation":null,"name":null,"size_bytes":null}]}`, `{"entries":[{"executable":1}]}`, `{"truncated":nul}`,
	`{"status":{"nested":[1,2]},"entries":[]}`, `{"status":[],"entries":[]}`, `{"extra":-1.5}`, `{"extra":truex}`, `{"entries":[{"kind":"file"},]}`,
	`{"entries":[{"kind":"file"}]`, `{"entries":[{"kind":"file"}]}}`, `{"entry_count":1,}`, `{,}`, `{"a"}`, `{"a":}`,
}

// TestDecodeListPageMatchesEncodingJSON decodes the edge pages with decodeResult and with
// encoding/json, and checks that the server's own pages take decodeListPage.
func TestDecodeListPageMatchesEncodingJSON(t *testing.T) {
	for _, body := range listPageEdges {
		var want, got ListPage
		wantErr, gotErr := decodeWithEncodingJSON([]byte(body), &want), decodeResult([]byte(body), &got)
		if (wantErr == nil) != (gotErr == nil) || wantErr == nil && !reflect.DeepEqual(want, got) {
			t.Errorf("%q: encoding/json %#v (%v), decodeResult %#v (%v)", body, want, wantErr, got, gotErr)
		}
	}
	for _, body := range [][]byte{[]byte(listPageEdges[0]), listPageBody(100), []byte(`{"entries":[]}`)} {
		var p ListPage
		if !decodeListPage(body, &p) {
			t.Errorf("decodeListPage does not read %.200q", body)
		}
	}
}

// listPageBody is a listing page of n files as the server writes it.
func listPageBody(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"status":"success","entries":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"content_type":"application/octet-stream","entry_count":0,"executable":false,"generation":%d,"kind":"file","name":"%09d","path":"/workbenches/default/w/input/bench/list/%09d","relative_path":"bench/list/%09d","section":"input","size_bytes":1024}`, i+3, i, i, i)
	}
	b.WriteString(`],"entry_count":100,"next_cursor":null,"path":"input/bench/list","truncated":false,"workbench_id":"w","workbench_path":"/workbenches/default/w"}`)
	return b.Bytes()
}

// BenchmarkDecodeListPage decodes a page of 100 entries with encoding/json (what the
// client did) and with decodeResult, side by side:
//
//	go test ./api/client -run '^$' -bench BenchmarkDecodeListPage -benchmem
func BenchmarkDecodeListPage(b *testing.B) {
	body := listPageBody(100)
	for _, c := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"encoding-json", decodeWithEncodingJSON}, {"decodeResult", decodeResult}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var p ListPage
				if err := c.decode(body, &p); err != nil || len(p.Entries) != 100 {
					b.Fatalf("%d entries, %v", len(p.Entries), err)
				}
			}
		})
	}
}
