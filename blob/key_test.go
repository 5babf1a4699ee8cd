package blob_test

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/cairnstore/cairn/blob"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// abcHex is SHA-256("abc") from FIPS 180-2, appendix B.1.
const abcHex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

func TestDigestFormats(t *testing.T) {
	d := blob.DigestOf([]byte("abc"))
	if d.String() != abcHex {
		t.Errorf("String = %s, want %s", d, abcHex)
	}
	if d.URI() != "sha256:"+abcHex {
		t.Errorf("URI = %s, want sha256:%s", d.URI(), abcHex)
	}
	if k := (blob.Key{Root: "r1", Digest: d}); k.String() != "r1/"+abcHex {
		t.Errorf("Key.String = %s", k)
	}
}

func TestParseDigest(t *testing.T) {
	want := blob.DigestOf([]byte("abc"))
	valid := []struct{ name, in string }{
		{"bare lower-case hex", abcHex},
		{"hex with the sha256 prefix", "sha256:" + abcHex},
		{"upper-case hex", strings.ToUpper(abcHex)},
		{"upper-case hex with the sha256 prefix", "sha256:" + strings.ToUpper(abcHex)},
	}
	for _, tc := range valid {
		t.Run("accepts "+tc.name, func(t *testing.T) {
			got, err := blob.ParseDigest(tc.in)
			if err != nil || got != want {
				t.Errorf("ParseDigest(%q) = %s, %v; want %s", tc.in, got, err, want)
			}
		})
	}
	invalid := []struct{ name, in string }{
		{"the empty string", ""},
		{"the prefix alone", "sha256:"},
		{"63 hex digits", abcHex[:63]},
		{"65 hex digits", abcHex + "0"},
		{"a non-hex digit", "g" + abcHex[1:]},
		{"an upper-case prefix", "SHA256:" + abcHex},
		{"another algorithm's prefix", "sha512:" + abcHex},
		{"a doubled prefix", "sha256:sha256:" + abcHex},
		{"a leading space", " " + abcHex},
		{"a trailing newline", abcHex + "\n"},
		{"a 64-character non-ASCII string", strings.Repeat("é", 32)},
	}
	for _, tc := range invalid {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			d, err := blob.ParseDigest(tc.in)
			if !errors.Is(err, blob.ErrInvalidKey) {
				t.Fatalf("ParseDigest(%q) = %s, %v; want an error wrapping ErrInvalidKey", tc.in, d, err)
			}
			var ke *blob.KeyError
			if !errors.As(err, &ke) || ke.Field != "digest" || ke.Rule == "" {
				t.Errorf("error %v is not a *KeyError naming field digest and its rule", err)
			}
			if d != (blob.Digest{}) {
				t.Errorf("a failed ParseDigest returned a non-zero digest")
			}
		})
	}
}

func TestKeyErrorCutsLongValues(t *testing.T) {
	err := blob.ValidateRoot(strings.Repeat("x", 10_000))
	var ke *blob.KeyError
	if !errors.As(err, &ke) {
		t.Fatalf("ValidateRoot of 10,000 bytes: %v, want a *KeyError", err)
	}
	if len(ke.Value) > 100 || len(err.Error()) > 300 {
		t.Errorf("KeyError carries %d bytes of value, message of %d bytes", len(ke.Value), len(err.Error()))
	}
}

func TestValidateRoot(t *testing.T) {
	cases := []struct {
		root string
		ok   bool
	}{
		{"r1", true},
		{"0", true},
		{"abcdefghijklmnopqrstuvwxyz0123456789", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"R1", false},
		{"r-1", false},
		{"r.1", false},
		{"r/1", false},
		{"..", false},
		{"r1\n", false},
	}
	for _, tc := range cases {
		err := blob.ValidateRoot(tc.root)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateRoot(%q) = %v, want ok=%v", tc.root, err, tc.ok)
		}
		if err != nil && !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("ValidateRoot(%q) = %v, want an error wrapping ErrInvalidKey", tc.root, err)
		}
		if got := (blob.Key{Root: tc.root}).Validate(); (got == nil) != tc.ok {
			t.Errorf("Key{Root: %q}.Validate() = %v, want ok=%v", tc.root, got, tc.ok)
		}
	}
}

func FuzzParseDigest(f *testing.F) {
	f.Add(abcHex)
	f.Add("sha256:" + abcHex)
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := blob.ParseDigest(s)
		if err != nil {
			var ke *blob.KeyError
			if !errors.Is(err, blob.ErrInvalidKey) || !errors.As(err, &ke) || ke.Field != "digest" {
				t.Fatalf("ParseDigest(%q) failed with %v, not a *KeyError for digest", s, err)
			}
			if d != (blob.Digest{}) {
				t.Fatalf("ParseDigest(%q) failed but returned %s", s, d)
			}
			return
		}
		if !strings.EqualFold(strings.TrimPrefix(s, "sha256:"), d.String()) {
			t.Fatalf("ParseDigest(%q) = %s, which does not print back as the input", s, d)
		}
		for _, form := range []string{d.String(), d.URI()} {
			if again, err := blob.ParseDigest(form); err != nil || again != d {
				t.Fatalf("ParseDigest(%q) = %s, %v; want %s", form, again, err, d)
			}
		}
	})
}
