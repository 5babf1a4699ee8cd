package workbench_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/redact"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

const (
	redactValue = "hunter2-correct-horse"
	redactAWS   = "AKIAIOSFODNN7EXAMPLE"
)

// redactedNode is a node whose Service redacts agent "a" on every surface; agent "b" has
// a registered value too but did not opt in.
func redactedNode(t *testing.T, inline int64) *workbench.Service {
	t.Helper()
	r, err := redact.New(redact.Config{Secrets: map[string][]redact.Secret{
		"a": {{ID: "db", Value: redactValue}},
		"b": {{ID: "db", Value: redactValue}},
	}, AllSurfaces: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	return workbenchtest.New(t, workbench.Config{InlineMaxBytes: inline, Redactor: r}).Service
}

func readOf(t *testing.T, svc *workbench.Service, agent, path string) ([]byte, meta.Digest) {
	t.Helper()
	f, err := svc.Reads.Open(t.Context(), agent, "w", path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.ReadAll(t.Context(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return b, f.Info.Digest
}

// Every write surface of the Service stores the redacted bytes for an opted-in tenant:
// Write (REST PUT), Append (REST append), put_file, append and edit (MCP); the digest and
// size are those of what is stored. Another tenant's bytes stay as sent.
func TestRedactionOnEverySurfaceOfAnOptedInTenant(t *testing.T) {
	for _, inline := range []int64{4096, 0} {
		t.Run(fmt.Sprintf("inline max %d", inline), func(t *testing.T) {
			svc := redactedNode(t, inline)
			ctx := t.Context()
			body := "db password " + redactValue + " and key " + redactAWS + "\n"
			redacted := "db password [REDACTED:db] and key [REDACTED:aws_access_key_id]\n"
			for agent, want := range map[string]string{"a": redacted, "b": body} {
				res, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: agent, Workbench: "w", Path: "input/put.txt",
					Body: strings.NewReader(body), SizeHint: int64(len(body)), CreateWorkbench: true})
				if err != nil {
					t.Fatal(err)
				}
				got, digest := readOf(t, svc, agent, "input/put.txt")
				if string(got) != want || res.Size != int64(len(want)) || res.Digest != meta.Digest(sha256.Sum256([]byte(want))) || digest != res.Digest {
					t.Fatalf("agent %s: stored %q (size %d), want %q", agent, got, res.Size, want)
				}
				if _, err := svc.Writes.Append(ctx, workbench.AppendRequest{Agent: agent, Workbench: "w", Path: "input/put.txt",
					Body: strings.NewReader(body)}); err != nil {
					t.Fatal(err)
				}
				if got, _ := readOf(t, svc, agent, "input/put.txt"); string(got) != want+want {
					t.Fatalf("agent %s after append: %q", agent, got)
				}
			}

			text := "token " + redactAWS
			if _, err := svc.Tools.PutFile(ctx, "a", workbench.PutFileInput{ID: "w", Section: "outputs", Path: "mcp.txt", Text: &text}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Tools.Append(ctx, "a", workbench.AppendInput{ID: "w", Section: "outputs", Path: "mcp.txt", Text: ptr(" " + redactValue)}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Tools.Edit(ctx, "a", workbench.EditInput{ID: "w", Section: "outputs", Path: "mcp.txt",
				OldString: "token", NewString: "sk-proj-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8"}); err != nil {
				t.Fatal(err)
			}
			if got, _ := readOf(t, svc, "a", "outputs/mcp.txt"); string(got) != "[REDACTED:openai_api_key] [REDACTED:aws_access_key_id] [REDACTED:db]" {
				t.Fatalf("MCP writes stored %q", got)
			}
		})
	}
}

// A body of several stream steps, a secret every StreamChunkBytes, is stored redacted
// throughout (in the object store: inline max 0).
func TestRedactionOfALargeBodyStreams(t *testing.T) {
	svc := redactedNode(t, 0)
	var b bytes.Buffer
	for b.Len() < 3*(redact.StreamWindowBytes+redact.StreamChunkBytes) {
		b.WriteString(strings.Repeat("x", redact.StreamChunkBytes-len(redactValue)/2) + " " + redactValue + " ")
	}
	if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "input/big.txt",
		Body: bytes.NewReader(b.Bytes()), SizeHint: int64(b.Len()), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	got, _ := readOf(t, svc, "a", "input/big.txt")
	want := strings.ReplaceAll(b.String(), redactValue, "[REDACTED:db]")
	if string(got) != want {
		t.Fatalf("stored %d bytes, want %d (the redacted body)", len(got), len(want))
	}
}
