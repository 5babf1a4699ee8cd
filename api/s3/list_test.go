package s3

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
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

// TestListingsPresentTheOwnerListBucketsPresents: ListObjectsV2 answers each object's Owner
// only with fetch-owner=true (S3's default leaves it out), ListObjects (V1) always, as S3
// does; the owner is the one ListBuckets and ListObjectVersions present, ID and
// DisplayName. A fetch-owner that is no boolean is InvalidArgument.
func TestListingsPresentTheOwnerListBucketsPresents(t *testing.T) {
	srv, client := gateway(t)
	c := client("AGENTA")
	ctx := context.Background()
	makeBucket(t, c, "own")
	put(t, c, "own", "input/a", []byte("a"))
	put(t, c, "own", "input/b", []byte("b"))
	buckets, err := c.ListBuckets(ctx, &awss3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	want := buckets.Owner
	if want == nil || aws.ToString(want.ID) == "" || aws.ToString(want.DisplayName) == "" {
		t.Fatalf("ListBuckets presents no owner: %+v", want)
	}
	same := func(o *types.Owner) bool {
		return o != nil && aws.ToString(o.ID) == aws.ToString(want.ID) && aws.ToString(o.DisplayName) == aws.ToString(want.DisplayName)
	}
	v2, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("own"), FetchOwner: aws.Bool(true)})
	if err != nil || len(v2.Contents) != 2 {
		t.Fatalf("ListObjectsV2 fetch-owner=true: %v, %d objects", err, len(v2.Contents))
	}
	for _, o := range v2.Contents {
		if !same(o.Owner) {
			t.Errorf("ListObjectsV2 fetch-owner=true: %s's owner %+v, want ListBuckets' %+v", aws.ToString(o.Key), o.Owner, want)
		}
	}
	for _, fetch := range []*bool{nil, aws.Bool(false)} {
		plain, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("own"), FetchOwner: fetch})
		if err != nil || len(plain.Contents) != 2 || plain.Contents[0].Owner != nil {
			t.Errorf("ListObjectsV2 fetch-owner=%v: %v, %+v, want no owner", fetch, err, plain)
		}
	}
	v1, err := c.ListObjects(ctx, &awss3.ListObjectsInput{Bucket: aws.String("own")})
	if err != nil || len(v1.Contents) != 2 {
		t.Fatalf("ListObjects: %v", err)
	}
	for _, o := range v1.Contents {
		if !same(o.Owner) {
			t.Errorf("ListObjects: %s's owner %+v, want ListBuckets' %+v", aws.ToString(o.Key), o.Owner, want)
		}
	}
	versions, err := c.ListObjectVersions(ctx, &awss3.ListObjectVersionsInput{Bucket: aws.String("own")})
	if err != nil || len(versions.Versions) == 0 || !same(versions.Versions[0].Owner) {
		t.Fatalf("ListObjectVersions: %v, want ListBuckets' owner on each version", err)
	}
	resp, body := signedDo(t, srv, "AGENTA", http.MethodGet, "/own?list-type=2&fetch-owner=maybe", nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<Code>InvalidArgument</Code>") {
		t.Errorf("fetch-owner=maybe: %d %s, want 400 InvalidArgument", resp.StatusCode, body)
	}
}
