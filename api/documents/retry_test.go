package documents_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/api/documents"
)

// downStore is the node's store, unreachable while down is set.
type downStore struct {
	documents.Store
	down atomic.Bool
}

func (d *downStore) ReadFile(ctx context.Context, agent, ws, path string, maxBytes int64) ([]byte, uint64, error) {
	if d.down.Load() {
		return nil, 0, documents.ErrUnavailable
	}
	return d.Store.ReadFile(ctx, agent, ws, path, maxBytes)
}

func (d *downStore) ReadDir(ctx context.Context, agent, ws, dir, after string, maxFiles int, maxBytes int64) ([]documents.StoredFile, bool, error) {
	if d.down.Load() {
		return nil, false, documents.ErrUnavailable
	}
	return d.Store.ReadDir(ctx, agent, ws, dir, after, maxFiles, maxBytes)
}

// A 503 or 429 says what to send again: a read as it was (it has no requestId), a write
// with the same requestId, a decision with the same submissionId.
func TestARetryableAnswerSaysWhatToRetry(t *testing.T) {
	ds := &downStore{}
	var limited atomic.Bool
	e := newEnvOn(t, func(o *documents.Options) {
		o.Admit = func(ctx context.Context) (context.Context, func(), error) {
			if limited.Load() {
				return nil, nil, documents.ErrRateLimited
			}
			return ctx, func() {}, nil
		}
	}, func(s documents.Store) documents.Store { ds.Store = s; return ds })
	d, _ := aDocument(t, e)
	doc := "/api/workbench/documents/" + d.docID
	decision := "/api/workbench/proposals/" + strings.Repeat("c", 64) + "/decisions"
	edit := map[string]any{"baseVersionId": d.versionID, "title": "T", "body": "two\n", "requestId": "e"}
	for _, tc := range []struct {
		method, path string
		body         any
		says, never  string
	}{
		{"GET", doc, nil, "; retry the read after Retry-After", "requestId"},
		{"GET", doc + "/versions", nil, "; retry the read after Retry-After", "requestId"},
		{"GET", "/api/workbench/documents", nil, "; retry the read after Retry-After", "requestId"},
		{"POST", doc + "/versions", edit, "with the same requestId and body", "submissionId"},
		{"POST", decision, map[string]any{"disposition": "reject", "submissionId": "s"}, "with the same submissionId and body", "requestId"},
	} {
		for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
			ds.down.Store(status == http.StatusServiceUnavailable)
			limited.Store(status == http.StatusTooManyRequests)
			a := e.do("local", tc.method, tc.path, tc.body)
			ds.down.Store(false)
			limited.Store(false)
			if m := a.str("message"); a.status != status || !strings.HasSuffix(m, tc.says) || strings.Contains(m, tc.never) || strings.Count(m, "retry") != 1 {
				t.Fatalf("%s %s answering %d: %d %s, want a message ending %q", tc.method, tc.path, status, a.status, a.body, tc.says)
			}
		}
	}
}
