package s3

import (
	"net/http"
	"strings"
	"testing"
)

// TestAListTypeOtherThanTwoIsInvalidArgument: a bucket listing is ListObjectsV2 with
// list-type=2 and ListObjects (V1) without list-type; any other list-type (3, 1, empty,
// named twice) is 400 InvalidArgument naming list-type, never served as a V1 listing.
func TestAListTypeOtherThanTwoIsInvalidArgument(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	makeBucket(t, c, "lt")
	put(t, c, "lt", "input/a", []byte("a"))

	resp, body := signedDo(t, srv, "AGENTA", http.MethodGet, "/lt?list-type=2", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<KeyCount>1</KeyCount>") {
		t.Errorf("list-type=2: %d %s, want a V2 listing (KeyCount 1)", resp.StatusCode, body)
	}
	resp, body = signedDo(t, srv, "AGENTA", http.MethodGet, "/lt", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<Key>input/a</Key>") || strings.Contains(string(body), "<KeyCount>") {
		t.Errorf("no list-type: %d %s, want a V1 listing", resp.StatusCode, body)
	}
	for _, q := range []string{"list-type=3", "list-type=1", "list-type=", "list-type=02", "list-type=2&list-type=3", "list-type=2&list-type=2"} {
		resp, body := signedDo(t, srv, "AGENTA", http.MethodGet, "/lt?"+q, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<Code>InvalidArgument</Code>") || !strings.Contains(string(body), "list-type") {
			t.Errorf("%s: %d %s, want 400 InvalidArgument naming list-type", q, resp.StatusCode, body)
		}
	}
}

// TestAV1ListingEncodesItsMarker: with encoding-type=url, ListObjects (V1) answers its
// Marker URL-encoded like Prefix, NextMarker and the keys, as S3 does: botocore decodes
// every one of them, so a marker echoed as given reads back changed ("a%26" as "a&").
func TestAV1ListingEncodesItsMarker(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	makeBucket(t, c, "mk")
	put(t, c, "mk", "input/x%26y", []byte("a"))
	put(t, c, "mk", "input/z", []byte("z"))
	resp, body := signedDo(t, srv, "AGENTA", http.MethodGet, "/mk?encoding-type=url&marker=input%2Fx%2526&prefix=input%2Fx%25", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a V1 listing after a marker: %d %s", resp.StatusCode, body)
	}
	for _, want := range []string{"<Marker>input/x%2526</Marker>", "<Prefix>input/x%25</Prefix>"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the V1 listing %s has no %s", body, want)
		}
	}
}
