package mcp

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// fuzzValue builds a value of the kinds tool results hold (and some they do not) from
// the fuzzer's bytes, so that every branch of resultEncoder meets odd strings and numbers.
type fuzzValue struct {
	b    []byte
	strs []string
}

func (f *fuzzValue) next() byte {
	if len(f.b) == 0 {
		return 0
	}
	c := f.b[0]
	f.b = f.b[1:]
	return c
}

func (f *fuzzValue) value(depth int) any {
	c := f.next()
	if depth > 4 {
		c %= 8
	}
	s := f.strs[int(c)%len(f.strs)]
	n := int64(c) * int64(f.next()-128) * 1e9
	switch c % 16 {
	case 0:
		return nil
	case 1:
		return s
	case 2:
		return c%2 == 0
	case 3:
		return int(n)
	case 4:
		return n
	case 5:
		return uint64(n) * 3
	case 6:
		return float64(n) / 7
	case 7:
		return json.Number("12.5e3")
	case 8:
		m := map[string]any{}
		for range int(f.next() % 5) {
			m[f.strs[int(f.next())%len(f.strs)]] = f.value(depth + 1)
		}
		return m
	case 9:
		var a []any
		for range int(f.next() % 4) {
			a = append(a, f.value(depth+1))
		}
		return a
	case 10:
		return []map[string]any{{s: f.value(depth + 1)}, nil}
	case 11:
		return []string{s, s + s}
	case 12:
		return map[string]any(nil)
	case 13:
		return json.RawMessage(`{"b":1, "a":[true ,"<&>"]}`)
	case 14:
		return struct {
			X string `json:"x"`
			Y *int   `json:"y,omitempty"`
		}{X: s}
	default:
		return []any(nil)
	}
}

// FuzzResultEncoderMatchesEncodingJSON checks resultEncoder's promise: the bytes of
// encoding/json's Encoder with SetEscapeHTML(false), for any tree of maps, slices,
// strings (escapes, HTML characters, U+2028, invalid UTF-8), integers at their limits,
// floats, json.Number, RawMessage, structs and nils.
func FuzzResultEncoderMatchesEncodingJSON(f *testing.F) {
	f.Add([]byte{8, 3, 1, 8, 2, 9, 3, 1, 4, 5}, "status", "a<b>&c", "\u2028\x00\"\\\xff\x7f")
	f.Add([]byte{9, 3, 8, 3, 10, 1, 11, 12, 13, 14, 15, 6, 7}, "", "path/to/file.txt", "é")
	// One escape each, in otherwise plain ASCII: the quote, the backslash, a control byte,
	// DEL, and HTML characters (never escaped here).
	f.Add([]byte{0, 65, 0, 1, 1, 0, 2, 17, 0}, `say "hi"`, `back\slash`, "tab\there\x7f<&>")
	f.Fuzz(func(t *testing.T, b []byte, s1, s2, s3 string) {
		fv := &fuzzValue{b: b, strs: []string{s1, s2, s3, "status", "entries"}}
		root := map[string]any{}
		for len(fv.b) > 0 {
			root[fv.strs[int(fv.next())%len(fv.strs)]] = fv.value(0)
		}
		root["edge"] = []any{int64(math.MinInt64), uint64(math.MaxUint64), int(math.MaxInt64)}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(root); err != nil {
			t.Fatal(err)
		}
		got, err := encodeObject(root)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("resultEncoder\n%s\nencoding/json\n%s", got, want.Bytes())
		}
	})
}

// TestEncodeObjectPutsFirstKeysFirst checks the order encodeObject promises: the keys of
// first that are present, in that order, then the others in byte order; a nil map is {}.
func TestEncodeObjectPutsFirstKeysFirst(t *testing.T) {
	got, err := encodeObject(map[string]any{"b": 1, "status": "ok", "a": []any{}, "code": "X"}, "status", "missing", "code")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"status":"ok","code":"X","a":[],"b":1}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got, _ := encodeObject(nil); string(got) != "{}" {
		t.Fatalf("nil map: got %s, want {}", got)
	}
}

// FuzzAppendQuotedMatchesMarshal holds appendQuoted to json.Marshal of a string: the
// quoting of every result's text in the fast lane.
func FuzzAppendQuotedMatchesMarshal(f *testing.F) {
	f.Add(`{"status":"success","path":"a/b.txt"}`)
	f.Add("x <b>&amp;</b> \u2028 \u2029 é \"q\"\\\n\r\t\b\f\x00\x01\x1f\x7f \xff\xe2\x80 \xed\xa0\x80 end")
	var all []byte
	for b := range 256 {
		all = append(all, byte(b))
	}
	f.Add(string(all))
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendQuoted([]byte("prefix"), s); !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("appendQuoted(%q)\n%s\njson.Marshal\n%s", s, got[len("prefix"):], want)
		}
	})
}

// TestEncoderKeysStackNests checks that the key stack resultEncoder.object shares between
// nested objects leaves each object its own keys, however deep and wide, in an encoder
// reused from the pool.
func TestEncoderKeysStackNests(t *testing.T) {
	inner := func(n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[string(rune('a'+i))] = i
		}
		return m
	}
	root := map[string]any{"status": "success", "z": inner(3)}
	list := []map[string]any{}
	for i := range 40 {
		list = append(list, map[string]any{"name": i, "sub": inner(i % 7), "deep": map[string]any{"y": inner(20), "x": []any{inner(2)}}})
	}
	root["entries"] = list
	want, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got, err := encodeObject(root)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encodeObject\n%s\njson.Marshal\n%s", got, want)
		}
	}
}

// FuzzTypedItemsEncodeAsTheirMaps holds the typed items of workbench_list and
// workbench_read (workbench.ListedEntry, workbench.ReadItem), written by resultEncoder
// directly, to the maps they replaced, written by it member by member, and to
// encoding/json's writing of the structs.
func FuzzTypedItemsEncodeAsTheirMaps(f *testing.F) {
	f.Add("file", "a.txt", "/agents/a/wb/w/input/a.txt", "a.txt", "input", int64(5), int64(0), uint64(9), true, []byte(`"line <1> \u2028 é"`))
	f.Add("directory", "d", "/agents/a/wb/w/d", "d", "", int64(-1), int64(3), uint64(0), false, []byte(`{"k":[1,2.5,null,true,"x"]}`))
	f.Add("fi\"le", "\xff", "p\\", "\x00", "sec\ttion", int64(1<<62), int64(1), uint64(1<<63), true, []byte(`1e400`))
	f.Fuzz(func(t *testing.T, kind, name, path, rel, sec string, size, count int64, gen uint64, isFile bool, value []byte) {
		typed := workbench.ListedEntry{Kind: kind, Name: name, Path: path, RelativePath: rel, SizeBytes: size}
		old := map[string]any{"kind": kind, "name": name, "path": path, "relative_path": rel, "size_bytes": size, "section": nil}
		if sec != "" {
			typed.Section, old["section"] = &sec, sec
		}
		if isFile {
			typed.Generation, old["generation"], old["entry_count"] = &gen, gen, nil
		} else {
			typed.EntryCount, old["entry_count"] = &count, count
		}
		var v any = string(value)
		var decoded any
		if json.Unmarshal(value, &decoded) == nil {
			v = decoded
		}
		typedRes := map[string]any{"status": "success", "entries": []workbench.ListedEntry{typed, typed},
			"items": []workbench.ReadItem{{Index: count, Value: v}, {Index: size, Value: name}}}
		oldRes := map[string]any{"status": "success", "entries": []map[string]any{old, old},
			"items": []map[string]any{{"index": count, "value": v}, {"index": size, "value": name}}}
		got, err := encodeObject(typedRes, "status")
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeObject(oldRes, "status")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("typed\n%s\nmaps\n%s", got, want)
		}
		var viaJSON bytes.Buffer
		enc := json.NewEncoder(&viaJSON)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(typedRes); err != nil {
			t.Fatal(err)
		}
		sorted, err := encodeObject(typedRes) // keys in byte order, as encoding/json writes a map
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sorted, bytes.TrimSuffix(viaJSON.Bytes(), []byte("\n"))) {
			t.Fatalf("resultEncoder\n%s\nencoding/json\n%s", sorted, viaJSON.Bytes())
		}
	})
}
