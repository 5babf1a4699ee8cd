package rest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/redact"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// An opted-in tenant's REST PUT stores (and answers the digest of) the redacted bytes;
// another tenant's PUT of the same body stores it as sent.
func TestRedactionOfAnOptedInTenantsPUT(t *testing.T) {
	r, err := redact.New(redact.Config{Secrets: map[string][]redact.Secret{
		"a": {{ID: "db", Value: "hunter2-correct-horse"}},
	}, AllSurfaces: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, Redactor: r})
	srv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready, GC: n.Workers}))
	t.Cleanup(srv.Close)

	body := "password=hunter2-correct-horse\nkey=AKIAIOSFODNN7EXAMPLE\n"
	for agent, want := range map[string]string{
		"a": "password=[REDACTED:db]\nkey=[REDACTED:aws_access_key_id]\n",
		"b": body,
	} {
		u := srv.URL + "/v1/agents/" + agent + "/workbenches/w/files/input/env.txt"
		put := do(t, "PUT", u, strings.NewReader(body), "Content-Type", "text/plain")
		expect(t, put, 201, "")
		sum := sha256.Sum256([]byte(want))
		if put.json["digest_uri"] != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Fatalf("agent %s: digest %v, want that of %q", agent, put.json["digest_uri"], want)
		}
		if got := do(t, "GET", u, nil); got.status != 200 || string(got.body) != want {
			t.Fatalf("agent %s: GET %d %q, want %q", agent, got.status, got.body, want)
		}
	}
}
