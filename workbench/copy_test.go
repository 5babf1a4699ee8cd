package workbench_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"testing"

	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

func readFile(t *testing.T, svc *workbench.Service, id, path string) []byte {
	t.Helper()
	f, err := svc.Reads.Open(context.Background(), "a", id, path)
	if err != nil {
		t.Fatalf("open %s/%s: %v", id, path, err)
	}
	r, err := f.Reader(context.Background(), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCopyMovesNoBytesAndOutlivesItsSource(t *testing.T) {
	hs, puts := blobtest.CountingPuts(t)
	n := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 64}, hs)
	ctx := context.Background()
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: segments in the object store
	src, err := n.Service.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "src", Path: "outputs/model.bin",
		Body: bytes.NewReader(body), CreateWorkbench: true, ContentType: "application/x-model"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Service.Lifecycle.CreateWorkbench(ctx, "a", "dst", ""); err != nil {
		t.Fatal(err)
	}
	before := puts.Load()
	if before == 0 {
		t.Fatal("the source's body never reached the object store: the test would prove nothing")
	}
	for _, to := range []struct{ id, path string }{{"src", "outputs/copy.bin"}, {"dst", "input/model.bin"}} {
		res, err := n.Service.Writes.Copy(ctx, workbench.CopyRequest{Agent: "a", SrcWorkbench: "src", SrcPath: "outputs/model.bin",
			IfSrcGeneration: src.Generation, Workbench: to.id, Path: to.path})
		if err != nil {
			t.Fatalf("copy to %s/%s: %v", to.id, to.path, err)
		}
		if res.Digest != src.Digest || res.Size != src.Size || res.ContentType != "application/x-model" {
			t.Fatalf("copy to %s/%s: %+v, want the source's digest, size and type", to.id, to.path, res)
		}
	}
	if after := puts.Load(); after != before {
		t.Fatalf("copies wrote %d blobs to the object store, want none", after-before)
	}
	if _, err := n.Service.Writes.Delete(ctx, "a", "src", "outputs/model.bin", 0, ""); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, n.Service, "dst", "input/model.bin"); !bytes.Equal(got, body) {
		t.Fatalf("the copy after its source's delete: %d bytes, want %d", len(got), len(body))
	}
}

func TestCopyKeepsItsConditions(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 64})
	ctx := context.Background()
	put := func(path, body string) workbench.FileResult { return writeFile(t, n.Service, path, body) }
	src := put("input/a", "first")
	put("input/a", "second")
	put("input/taken", "x")
	var e *workbench.Error
	for name, tc := range map[string]struct {
		req  workbench.CopyRequest
		want string
	}{
		"a stale source generation":   {workbench.CopyRequest{IfSrcGeneration: src.Generation, Path: "input/b"}, workbench.CodeConflict},
		"create-only on a taken path": {workbench.CopyRequest{Path: "input/taken", Cond: meta.CondCreateOnly}, workbench.CodeAlreadyExists},
	} {
		req := tc.req
		req.Agent, req.SrcWorkbench, req.SrcPath, req.Workbench = "a", "w", "input/a", "w"
		_, err := n.Service.Writes.Copy(ctx, req)
		if !errors.As(err, &e) || e.Code != tc.want || e.Retryable {
			t.Errorf("%s: %v, want a final %s", name, err, tc.want)
		}
	}
	for name, req := range map[string]workbench.CopyRequest{
		"a missing source":           {SrcWorkbench: "w", SrcPath: "input/none", Workbench: "w"},
		"a missing target workbench": {SrcWorkbench: "w", SrcPath: "input/a", Workbench: "nope"},
		"a directory as source":      {SrcWorkbench: "w", SrcPath: "input", Workbench: "w"},
	} {
		req.Agent, req.Path = "a", "input/c"
		if _, err := n.Service.Writes.Copy(ctx, req); !errors.As(err, &e) || (e.Code != workbench.CodeNotFound && e.Code != workbench.CodeNotArtifact) {
			t.Errorf("%s: %v, want NotFound or NotArtifact", name, err)
		}
	}
	if got := readFile(t, n.Service, "w", "input/taken"); string(got) != "x" {
		t.Fatalf("a refused copy changed its target: %q", got)
	}
}

// TestFieldsAFileKeepsThroughWritesAndCopies: fields a body yields (AfterBody, called
// with the body's digest) join the request's, the request's winning a clash, and are
// checked like them; AfterBody's error refuses the write; a copy keeps the source's
// fields unless it replaces them.
func TestFieldsAFileKeepsThroughWritesAndCopies(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{})
	ctx := context.Background()
	str := func(s string) meta.FieldValue { return meta.FieldValue{Kind: meta.FieldString, Str: s} }
	var gotDigest meta.Digest
	res, err := n.Service.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "f", Path: "outputs/x", CreateWorkbench: true,
		Body: bytes.NewReader([]byte("body")), Fields: map[string]meta.FieldValue{"stage": str("given"), "owner": str("me")},
		AfterBody: func(d meta.Digest) (map[string]meta.FieldValue, error) {
			gotDigest = d
			return map[string]meta.FieldValue{"stage": str("from the body"), "sum": str("s")}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if gotDigest != res.Digest {
		t.Fatalf("AfterBody saw digest %x, the write stored %x", gotDigest, res.Digest)
	}
	fieldsOf := func(path string) map[string]meta.FieldValue {
		t.Helper()
		f, err := n.Service.Reads.Open(ctx, "a", "f", path)
		if err != nil {
			t.Fatal(err)
		}
		return f.Info.Fields
	}
	want := map[string]meta.FieldValue{"stage": str("given"), "owner": str("me"), "sum": str("s")}
	if got := fieldsOf("outputs/x"); !maps.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	if _, err := n.Service.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "f", Path: "outputs/bad",
		Body: bytes.NewReader([]byte("body")), AfterBody: func(meta.Digest) (map[string]meta.FieldValue, error) {
			return map[string]meta.FieldValue{"Not A Name": str("x")}, nil
		}}); codeOf(err) != workbench.CodeInvalidArguments {
		t.Fatalf("a body's invalid field: %v, want InvalidArguments", err)
	}
	refused := errors.New("the caller's check of the digest failed")
	if _, err := n.Service.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "f", Path: "outputs/bad",
		Body: bytes.NewReader([]byte("body")), AfterBody: func(meta.Digest) (map[string]meta.FieldValue, error) {
			return nil, refused
		}}); err != refused {
		t.Fatalf("AfterBody's error: Write answered %v, want it unchanged", err)
	}
	if _, err := n.Service.Reads.Open(ctx, "a", "f", "outputs/bad"); codeOf(err) != workbench.CodeNotFound {
		t.Fatalf("a write refused after its body stored something: %v", err)
	}
	if _, err := n.Service.Writes.Copy(ctx, workbench.CopyRequest{Agent: "a", SrcWorkbench: "f", SrcPath: "outputs/x",
		Workbench: "f", Path: "outputs/kept"}); err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf("outputs/kept"); !maps.Equal(got, want) {
		t.Fatalf("a copy's fields %v, want the source's %v", got, want)
	}
	replaced := map[string]meta.FieldValue{"stage": str("copied")}
	if _, err := n.Service.Writes.Copy(ctx, workbench.CopyRequest{Agent: "a", SrcWorkbench: "f", SrcPath: "outputs/x",
		Workbench: "f", Path: "outputs/replaced", ReplaceFields: true, Fields: replaced}); err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf("outputs/replaced"); !maps.Equal(got, replaced) {
		t.Fatalf("a copy replacing fields has %v, want %v", got, replaced)
	}
}
