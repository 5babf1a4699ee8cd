package workbench_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// commitSHA256URI hashes bytes the test built by hand, independently of the code under test.
func commitSHA256URI(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestCanonicalManifestForms(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"an empty object stays empty", `{}`, `{}`},
		{"whitespace outside strings goes", " \t{\n  \"a\" :\t1 ,\r\n \"b\" : [ 1 , 2 ] }\n ", `{"a":1,"b":[1,2]}`},
		{"keys sort at every depth and arrays keep their order",
			`{"z":{"y":[{"b":1,"a":2}],"x":1},"a":[3,1,2]}`, `{"a":[3,1,2],"z":{"x":1,"y":[{"a":2,"b":1}]}}`},
		{"empty objects and arrays stay", `{"o":{},"a":[],"n":[[],{}]}`, `{"a":[],"n":[[],{}],"o":{}}`},
		{"numbers keep the caller's spelling",
			`{"n":[1.0, 1e3, -0.0, 1.50, 123456789012345678901234567890, 1E+2, -1e-7, 0]}`,
			`{"n":[1.0,1e3,-0.0,1.50,123456789012345678901234567890,1E+2,-1e-7,0]}`},
		{"literals stay", `{"t":true,"f":false,"n":null}`, `{"f":false,"n":null,"t":true}`},
		{"HTML characters are not escaped", `{"h":"<a href=\"x\">&amp;</a>","\u003c":"\u003e\u0026"}`,
			`{"<":">&","h":"<a href=\"x\">&amp;</a>"}`},
		{"unicode keys sort by UTF-8 bytes, not UTF-16 units",
			`{"\ud83d\ude00":1,"\uFF61":2,"a":3,"\u00e9":4,"B":5}`,
			"{\"B\":5,\"a\":3,\"\u00e9\":4,\"\uFF61\":2,\"\U0001F600\":1}"},
		{"escapes of printable characters decode to raw UTF-8", `{"s":"\u00e9\u0041\/\ud83d\ude00é"}`,
			"{\"s\":\"\u00e9A/\U0001F600\u00e9\"}"},
		{"control characters get short or lower-case hex escapes",
			`{"s":"\b\f\n\r\t\u0000\u0001\u001F\u001b"}`, `{"s":"\b\f\n\r\t\u0000\u0001\u001f\u001b"}`},
		{"quote and backslash are escaped, DEL and U+2028 are not",
			`{"s":"q\"b\\\u007f\u2028\u2029"}`, "{\"s\":\"q\\\"b\\\\\x7f\u2028\u2029\"}"},
		{"keys equal only before decoding are distinct", `{"a\\u0062":1,"ab":2}`, `{"a\\u0062":1,"ab":2}`},
		{"keys are escaped like values", `{"k\"\n":1}`, `{"k\"\n":1}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := workbench.CanonicalManifest([]byte(c.in))
			if err != nil {
				t.Fatalf("CanonicalManifest(%s): %v", c.in, err)
			}
			if string(got) != c.want {
				t.Fatalf("CanonicalManifest(%s)\n got %s\nwant %s", c.in, got, c.want)
			}
			if again, err := workbench.CanonicalManifest(got); err != nil || !bytes.Equal(again, got) {
				t.Fatalf("not idempotent: %s -> %s (%v)", got, again, err)
			}
		})
	}
}

// The digest of a tricky manifest is pinned twice: against the SHA-256 of canonical bytes
// written out by hand, and against a hex digest computed outside Go (sha256sum).
func TestManifestDigestGolden(t *testing.T) {
	in := "{\n  \"z\": {\"y\": [{\"b\": 1, \"a\": 2}], \"x\": 1},\n  \"s\": \"\\u003c\\u003e\\u0026\\u00e9\\n\",\n" +
		"  \"n\": [1.0, 1e3, -0.0, 1.50, 123456789012345678901234567890],\n  \"b\": {},\n  \"a\": []\n}\n"
	want := []byte("{\"a\":[],\"b\":{},\"n\":[1.0,1e3,-0.0,1.50,123456789012345678901234567890],\"s\":\"<>&\xc3\xa9\\n\"," +
		"\"z\":{\"x\":1,\"y\":[{\"a\":2,\"b\":1}]}}")
	got, err := workbench.CanonicalManifest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("canonical\n got %s\nwant %s", got, want)
	}
	const golden = "sha256:4e071d2f4cc17775068224ef182730664b674b77610f2f43bc2affc0c8cc0132"
	if d := workbench.ManifestDigestURI(got); d != commitSHA256URI(want) || d != golden {
		t.Fatalf("digest %s, want %s", d, golden)
	}
}

func TestCanonicalManifestRejects(t *testing.T) {
	deep := func(n int) string { // the top object plus n-1 nested arrays: depth n
		return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`
	}
	if _, err := workbench.CanonicalManifest([]byte(deep(workbench.MaxManifestDepth))); err != nil {
		t.Fatalf("depth %d must be accepted: %v", workbench.MaxManifestDepth, err)
	}
	for _, c := range []struct{ name, in string }{
		{"empty input", ``},
		{"only whitespace", " \n"},
		{"an array at the top", `[]`},
		{"a string at the top", `"s"`},
		{"a number at the top", `1`},
		{"null at the top", `null`},
		{"duplicate keys", `{"a":1,"a":2}`},
		{"duplicate keys spelled differently", `{"a":1,"\u0061":2}`},
		{"duplicate keys in a nested object", `{"x":[{"k":1,"k":1}]}`},
		{"trailing data", `{"a":1} x`},
		{"a second object", `{"a":1}{}`},
		{"invalid UTF-8 in a string", "{\"a\":\"\xff\"}"},
		{"invalid UTF-8 in a key", "{\"\xc3\":1}"},
		{"a lone high surrogate", `{"a":"\ud800"}`},
		{"a lone high surrogate before another escape", `{"a":"\ud800\u0041"}`},
		{"a lone low surrogate", `{"a":"\udc00"}`},
		{"surrogates in the wrong order", `{"a":"\udc00\ud800"}`},
		{"a trailing comma", `{"a":1,}`},
		{"a leading zero", `{"a":01}`},
		{"a bare word", `{"a":nope}`},
		{"an unterminated object", `{"a":1`},
		{"a missing colon", `{"a" 1}`},
		{"nesting deeper than the limit", deep(workbench.MaxManifestDepth + 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := workbench.CanonicalManifest([]byte(c.in))
			if err == nil {
				t.Fatalf("accepted %q as %s", c.in, got)
			}
			commitWantInvalid(t, err, "manifest")
		})
	}
}

func commitWantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var we *workbench.Error
	if !errors.As(err, &we) || we.Code != workbench.CodeInvalidArguments || we.Details["field"] != field {
		t.Fatalf("want InvalidArguments naming %q, got %#v", field, err)
	}
}

func TestValidateContentDigestURI(t *testing.T) {
	hex64 := strings.Repeat("0123456789abcdef", 4)
	if err := workbench.ValidateContentDigestURI("sha256:" + hex64); err != nil {
		t.Fatalf("valid digest rejected: %v", err)
	}
	for _, bad := range []string{"", "sha256:", "sha256:" + hex64[:63], "sha256:" + hex64 + "0", "SHA256:" + hex64,
		"sha256:" + strings.ToUpper(hex64), "sha512:" + hex64, "sha256:" + hex64[:63] + "g", " sha256:" + hex64,
		"sha256:" + hex64 + "\n", hex64} {
		commitWantInvalid(t, workbench.ValidateContentDigestURI(bad), "content_digest_uri")
	}
}

func commitBE64(n int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func TestCommitIdentityGolden(t *testing.T) {
	a := "sha256:" + strings.Repeat("a", 64)
	b := "sha256:" + strings.Repeat("b", 64)
	var pre []byte
	pre = append(pre, "nokv.workbench.commit_identity.v1\x00"...)
	for _, s := range []string{"w", a, b} {
		pre = append(append(pre, commitBE64(len(s))...), s...)
	}
	sum := sha256.Sum256(pre)
	const golden = "5b0e27a6facb56ee93e8b4e61e8e1eb1a71977204ac6b2de58a9e5bdc8115de3" // sha256sum
	if got := workbench.CommitIdentity("w", a, b); got != hex.EncodeToString(sum[:]) || got != golden {
		t.Fatalf("identity %s, want %s", got, golden)
	}
	// Lengths keep the fields apart: moving a byte across a boundary changes the identity.
	if workbench.CommitIdentity("ab", "c", "d") == workbench.CommitIdentity("a", "bc", "d") {
		t.Fatal("identity does not separate its fields")
	}
}

func TestTreeDigestGolden(t *testing.T) {
	a := "sha256:" + strings.Repeat("a", 64)
	b := "sha256:" + strings.Repeat("b", 64)
	members := []workbench.TreeMember{{Path: "outputs/b", DigestURI: b}, {Path: "input/a", DigestURI: a}}
	var pre []byte
	for _, m := range []workbench.TreeMember{members[1], members[0]} { // path byte order
		pre = append(append(pre, commitBE64(len(m.Path))...), m.Path...)
		pre = append(append(pre, commitBE64(len(m.DigestURI))...), m.DigestURI...)
	}
	const golden = "sha256:fb77729c5b5a511193056aa6a83e62654f393f13c692573b1e87a94e6104f3f4" // sha256sum
	if got := workbench.TreeDigestURI(members); got != commitSHA256URI(pre) || got != golden {
		t.Fatalf("tree digest %s, want %s", got, golden)
	}
	if members[0].Path != "outputs/b" {
		t.Fatal("TreeDigestURI reordered its argument")
	}
	if got := workbench.TreeDigestURI(nil); got != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("empty tree digest %s", got)
	}
	// Byte order, not component order: "a-b" (0x2d) sorts before "a/b" (0x2f).
	x := []workbench.TreeMember{{Path: "a/b", DigestURI: a}, {Path: "a-b", DigestURI: b}}
	y := []workbench.TreeMember{x[1], x[0]}
	if workbench.TreeDigestURI(x) != workbench.TreeDigestURI(y) {
		t.Fatal("tree digest depends on input order")
	}
}

func TestRunManifestEnvelopeBytes(t *testing.T) {
	manifest, err := workbench.CanonicalManifest([]byte(`{"run":{"ok":true,"score":0.50},"note":"a<b & c>d"}`))
	if err != nil {
		t.Fatal(err)
	}
	content := "sha256:" + strings.Repeat("c", 64)
	wbPath := "/agents/a&b/wb/w-1"
	m, got, err := workbench.RunManifestEnvelope("w-1", wbPath, content, manifest, 1700000000)
	if err != nil {
		t.Fatal(err)
	}
	mdigest := commitSHA256URI([]byte(`{"note":"a<b & c>d","run":{"ok":true,"score":0.50}}`))
	identity := workbench.CommitIdentity("w-1", content, mdigest)
	want := `{"schema":"nokv.workbench.run_manifest.v1","workbench_id":"w-1","workbench_path":"/agents/a&b/wb/w-1",` +
		`"content_digest_uri":"` + content + `","manifest_digest_uri":"` + mdigest + `","commit_identity":"` + identity +
		`","committed_at_unix_seconds":1700000000,"manifest":{"note":"a<b & c>d","run":{"ok":true,"score":0.50}}}`
	if string(got) != want {
		t.Fatalf("envelope\n got %s\nwant %s", got, want)
	}
	if m.ManifestDigestURI != mdigest || m.CommitIdentity != identity || m.Schema != workbench.RunManifestSchema ||
		!bytes.Equal(m.Manifest, manifest) || m.CommittedAtUnixSeconds != 1700000000 || m.WorkbenchPath != wbPath {
		t.Fatalf("derived fields %+v", m)
	}
	var back workbench.RunManifest
	if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("decoding the envelope back: %+v, %v", back, err)
	}
	_, again, _ := workbench.RunManifestEnvelope("w-1", wbPath, content, manifest, 1700000000)
	if !bytes.Equal(again, got) {
		t.Fatal("equal inputs gave different bytes")
	}
}

func TestRunManifestEnvelopeRejects(t *testing.T) {
	content := "sha256:" + strings.Repeat("c", 64)
	for _, c := range []struct {
		name, id, path, content, manifest, field string
	}{
		{"a manifest not in canonical form", "w", "/p/w", content, `{"b":1, "a":2}`, "manifest"},
		{"a manifest that is not an object", "w", "/p/w", content, `[1]`, "manifest"},
		{"a malformed content digest", "w", "/p/w", "sha256:XYZ", `{}`, "content_digest_uri"},
		{"a bad workbench id", "-w", "/p/w", content, `{}`, "id"},
		{"an empty workbench path", "w", "", content, `{}`, "workbench_path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, b, err := workbench.RunManifestEnvelope(c.id, c.path, c.content, []byte(c.manifest), 1)
			if err == nil {
				t.Fatalf("accepted: %s", b)
			}
			commitWantInvalid(t, err, c.field)
		})
	}
}

func commitDecodeUseNumber(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

// FuzzCanonicalManifest: CanonicalManifest never panics; what it rejects is an
// InvalidArguments naming "manifest"; what it accepts is valid JSON, and its output is
// compact, a fixed point, decodes to the same value as the input, and is also the canonical
// form of any other spelling of that value (encoding/json's, which escapes HTML and orders
// keys its own way).
func FuzzCanonicalManifest(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"b":[1,{"d":null,"c":true}],"a":"x"}`, ` { "a" : [ ] } `,
		`{"n":[1.0,1e3,-0.0,1.50,123456789012345678901234567890]}`, `{"\ud83d\ude00":1,"\uff61":2}`,
		`{"s":"<>&\u2028\/\"\\\b\u0000"}`, `{"a":1,"a":2}`, `{"a":"\ud800"}`, `{"a":1}x`, `[]`, "{\"\xff\":1}",
		`{"a":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]}`, `{"é":{"e":{"E":0}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := workbench.CanonicalManifest(raw)
		if err != nil {
			commitWantInvalid(t, err, "manifest")
			return
		}
		if !json.Valid(raw) || !json.Valid(out) {
			t.Fatalf("accepted invalid JSON %q -> %q", raw, out)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, out); err != nil || !bytes.Equal(compact.Bytes(), out) {
			t.Fatalf("output not compact: %q", out)
		}
		again, err := workbench.CanonicalManifest(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
		in := commitDecodeUseNumber(t, raw)
		if got := commitDecodeUseNumber(t, out); !reflect.DeepEqual(in, got) {
			t.Fatalf("value changed: %q -> %q", raw, out)
		}
		other, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("re-encoding %q: %v", raw, err)
		}
		if viaOther, err := workbench.CanonicalManifest(other); err != nil || !bytes.Equal(viaOther, out) {
			t.Fatalf("another spelling of the same value canonicalizes differently: %q -> %q, %q -> %q (%v)", raw, out, other, viaOther, err)
		}
	})
}
