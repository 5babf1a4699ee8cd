package rest_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestWorkbenchesListPageAndDelete(t *testing.T) {
	srv, _ := newServers(t)
	base := srv.URL + "/v1/agents/a/workbenches"
	for _, id := range []string{"w3", "w1", "w2"} {
		expect(t, do(t, "PUT", base+"/"+id+"/files/input/f.txt", strings.NewReader("hello")), 201, "")
	}
	expect(t, do(t, "PUT", srv.URL+"/v1/agents/b/workbenches/other", nil), 201, "")
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		u := base + "?limit=2"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		r := do(t, "GET", u, nil)
		expect(t, r, 200, "")
		for _, w := range r.json["workbenches"].([]any) {
			ids = append(ids, w.(map[string]any)["workbench_id"].(string))
		}
		next, _ := r.json["next_cursor"].(string)
		if next == "" {
			break
		}
		if pages > 3 {
			t.Fatal("paging does not end")
		}
		// A cursor is bound to its arguments and root.
		expect(t, do(t, "GET", base+"?limit=3&cursor="+url.QueryEscape(next), nil), 400, "InvalidArguments")
		expect(t, do(t, "GET", srv.URL+"/v1/agents/b/workbenches?limit=2&cursor="+url.QueryEscape(next), nil), 400, "InvalidArguments")
		cursor = next
	}
	if strings.Join(ids, ",") != "w1,w2,w3" {
		t.Fatalf("listed %v", ids)
	}
	r := do(t, "GET", base, nil)
	first := r.json["workbenches"].([]any)[0].(map[string]any)
	rev := fmt.Sprint(first["revision"])
	expect(t, do(t, "DELETE", base+"/w1", nil, "If-Match", `"1"`), 412, "Conflict")
	expect(t, do(t, "DELETE", base+"/w1", nil, "If-Match", `"`+rev+`"`), 200, "")
	expect(t, do(t, "DELETE", base+"/w1", nil), 404, "NotFound")
	expect(t, do(t, "GET", base+"/w1/files/input/f.txt", nil), 404, "NotFound")
	u := do(t, "GET", srv.URL+"/v1/agents/a/usage", nil)
	expect(t, u, 200, "")
	usage := u.json["usage"].(map[string]any)
	if usage["workbenches"] != 2.0 || usage["files"] != 2.0 || usage["bytes"] != 10.0 {
		t.Fatalf("usage after delete: %s", u.body)
	}
}

func TestQuotasAreSetByAnAdminAndAnswered429(t *testing.T) {
	srv, admin := newServers(t)
	expect(t, do(t, "PUT", srv.URL+"/v1/admin/quota", strings.NewReader(`{"agent":"a","max_files":1}`)), 404, "NotFound")
	r := do(t, "PUT", admin.URL+"/v1/admin/quota", strings.NewReader(`{"agent":"a","max_workbenches":1,"max_bytes":8}`))
	expect(t, r, 200, "")
	if q := r.json["quota"].(map[string]any); q["workbenches"] != 1.0 || q["files"] != nil {
		t.Fatalf("quota: %s", r.body)
	}
	expect(t, do(t, "PUT", admin.URL+"/v1/admin/quota", strings.NewReader(`{"agent":"a","max_files":-1}`)), 400, "InvalidArguments")
	base := srv.URL + "/v1/agents/a/workbenches"
	expect(t, do(t, "PUT", base+"/w/files/input/a", strings.NewReader("1234")), 201, "")
	r = do(t, "PUT", base+"/w/files/input/b", strings.NewReader("123456789"))
	expect(t, r, 429, "ResourceExhausted")
	d := r.json["details"].(map[string]any)
	if d["quota"] != "bytes" || d["limit"] != 8.0 || d["usage"] != 4.0 || d["requested"] != 9.0 || r.json["retryable"] != false {
		t.Fatalf("quota error: %s", r.body)
	}
	expect(t, do(t, "PUT", base+"/w2", nil), 429, "ResourceExhausted")
	r = do(t, "GET", admin.URL+"/v1/admin/quota?agent=a", nil)
	expect(t, r, 200, "")
	if u := r.json["usage"].(map[string]any); u["files"] != 1.0 || u["bytes"] != 4.0 || u["workbenches"] != 1.0 {
		t.Fatalf("usage: %s", r.body)
	}
	r = do(t, "POST", admin.URL+"/v1/admin/purge", strings.NewReader(`{"agent":"a"}`))
	expect(t, r, 200, "")
	if r.json["deleted_workbenches"] != 1.0 {
		t.Fatalf("purge: %s", r.body)
	}
	expect(t, do(t, "GET", base+"/w", nil), 404, "NotFound")
	r = do(t, "GET", srv.URL+"/v1/agents/a/usage", nil)
	if u := r.json["usage"].(map[string]any); u["files"] != 0.0 || u["workbenches"] != 0.0 || r.json["quota"].(map[string]any)["bytes"] != 8.0 {
		t.Fatalf("after purge: %s", r.body)
	}
}

// TestAFileQuotaHoldsUnderConcurrentWriters: 16 writers race new files into one root whose
// file quota is N through REST; exactly N writes succeed, every other is 429 naming the
// files quota, and the root ends with exactly N files.
func TestAFileQuotaHoldsUnderConcurrentWriters(t *testing.T) {
	const writers, perWriter, quota = 16, 8, 37
	srv, admin := newServers(t)
	expect(t, do(t, "PUT", admin.URL+"/v1/admin/quota", strings.NewReader(fmt.Sprintf(`{"agent":"a","max_files":%d}`, quota))), 200, "")
	expect(t, do(t, "PUT", srv.URL+"/v1/agents/a/workbenches/w", nil), 201, "")
	var (
		mu       sync.Mutex
		ok, full int
		other    []string
		wg       sync.WaitGroup
	)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				u := fmt.Sprintf("%s/v1/agents/a/workbenches/w/files/input/g%d/f%d", srv.URL, g, i)
				req, _ := http.NewRequest("PUT", u, strings.NewReader("x"))
				resp, err := http.DefaultClient.Do(req)
				mu.Lock()
				switch {
				case err != nil:
					other = append(other, err.Error())
				case resp.StatusCode == 201:
					ok++
				case resp.StatusCode == 429:
					full++
				default:
					other = append(other, resp.Status)
				}
				mu.Unlock()
				if err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	if ok != quota || full != writers*perWriter-quota || len(other) != 0 {
		t.Fatalf("%d created, %d refused, other answers %v; want %d created", ok, full, other, quota)
	}
	r := do(t, "GET", srv.URL+"/v1/agents/a/usage", nil)
	if u := r.json["usage"].(map[string]any); u["files"] != float64(quota) {
		t.Fatalf("usage: %s", r.body)
	}
	r = do(t, "GET", srv.URL+"/v1/agents/a/workbenches/w", nil)
	if r.json["file_count"] != float64(quota) {
		t.Fatalf("workbench: %s", r.body)
	}
}
