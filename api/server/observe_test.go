package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cairnstore/cairn/internal/metricstest"
	"github.com/cairnstore/cairn/ops"
)

// scrape reads url (a /metrics endpoint) into its metric families.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	code, _, b := send(t, http.MethodGet, url, nil, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %.200s", url, code, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return mfs
}

// sample is metricstest.Find over the families of a scrape.
func sample(mfs map[string]*dto.MetricFamily, name string, labels ...string) (v float64, found bool) {
	return metricstest.Find([]*dto.MetricFamily{mfs[name]}, name, labels...)
}

// accessLines is a slog.Handler that keeps the attributes of every "http request" record.
type accessLines struct {
	mu    sync.Mutex
	lines []map[string]string
	all   bytes.Buffer // every record, as text, to look for leaks
}

func (a *accessLines) Enabled(context.Context, slog.Level) bool { return true }
func (a *accessLines) WithAttrs([]slog.Attr) slog.Handler       { return a }
func (a *accessLines) WithGroup(string) slog.Handler            { return a }

func (a *accessLines) Handle(_ context.Context, r slog.Record) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	fields := map[string]string{}
	r.Attrs(func(at slog.Attr) bool {
		fields[at.Key] = at.Value.String()
		return true
	})
	a.all.WriteString(r.Message)
	for k, v := range fields {
		a.all.WriteString(" " + k + "=" + v)
	}
	a.all.WriteString("\n")
	if r.Message == "http request" {
		a.lines = append(a.lines, fields)
	}
	return nil
}

func (a *accessLines) snapshot() ([]map[string]string, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]string(nil), a.lines...), a.all.String()
}

// A node started in-process exports, after some traffic, the request series per route
// name and code on both listeners, MCP's tool calls by tool and outcome, the blob store's latency per backend, and
// its shard's Raft figures; none carries a raw path.
func TestMetricsMoveWithTrafficOnEveryLayer(t *testing.T) {
	n, base := serveNode(t, testConfig(t))
	admin := "http://" + n.AdminAddr().String()
	body := bytes.Repeat([]byte("x"), 8<<10) // above the inline threshold: reaches the blob store
	if code, b := httpDo(t.Context(), http.MethodPut, base+"/v1/agents/a/workbenches/w/files/input/x", body); code != http.StatusCreated {
		t.Fatalf("put: %d %s", code, b)
	}
	if code, b := httpDo(t.Context(), http.MethodGet, base+"/v1/agents/a/workbenches/w/files/input/x", nil); code != http.StatusOK {
		t.Fatalf("get: %d %.200s", code, b)
	}
	if code, _ := httpDo(t.Context(), http.MethodGet, base+"/v1/agents/a/workbenches/w/files/input/missing", nil); code != http.StatusNotFound {
		t.Fatalf("get of a missing file: %d", code)
	}
	mcpCode, _, _ := send(t, http.MethodPost, base+"/mcp", map[string]string{"Content-Type": "application/json"}, `{}`)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "metrics-test", Version: "1"}, nil).Connect(t.Context(),
		&sdk.StreamableClientTransport{Endpoint: base + "/v1/agents/a/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, c := range []struct {
		args    map[string]any
		isError bool
	}{
		{map[string]any{"id": "w", "section": "input", "path": "m", "text": "hello"}, false},
		{map[string]any{"id": "w", "section": "input"}, true}, // no path: InvalidArguments
	} {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "workbench_put_file", Arguments: c.args})
		if err != nil || res.IsError != c.isError {
			t.Fatalf("workbench_put_file %v: %v %+v", c.args, err, res)
		}
	}
	if code, b := httpDo(t.Context(), http.MethodPost, admin+"/v1/admin/gc", []byte(`{"dry_run":true}`)); code != http.StatusOK {
		t.Fatalf("admin gc: %d %s", code, b)
	}
	if code, _ := httpDo(t.Context(), http.MethodGet, admin+"/healthz", nil); code != http.StatusOK {
		t.Fatalf("admin healthz: %d", code)
	}
	mfs := scrape(t, admin+"/metrics")

	for _, c := range []struct {
		name   string
		labels []string
	}{
		{"cairn_http_requests_total", []string{"route=file", "method=PUT", "code=201"}},
		{"cairn_http_requests_total", []string{"route=file", "method=GET", "code=200"}},
		{"cairn_http_requests_total", []string{"route=file", "method=GET", "code=404"}},
		{"cairn_http_requests_total", []string{"route=mcp", "method=POST", "code=" + strconv.Itoa(mcpCode)}},
		{"cairn_http_requests_total", []string{"route=admin-gc", "method=POST", "code=200"}},
		{"cairn_mcp_tool_calls_total", []string{"tool=workbench_put_file", "code=ok"}},
		{"cairn_mcp_tool_calls_total", []string{"tool=workbench_put_file", "code=InvalidArguments"}},
		{"cairn_mcp_tool_duration_seconds", []string{"tool=workbench_put_file"}},
		{"cairn_http_requests_total", []string{"route=healthz", "method=GET", "code=200"}},
		{"cairn_http_request_duration_seconds", []string{"route=file", "method=PUT", "code=201"}},
		{"cairn_http_request_duration_seconds", []string{"route=file", "method=GET", "code=404"}},
		{"cairn_http_request_duration_seconds", []string{"route=admin-gc", "method=POST", "code=200"}},
		{"cairn_blob_operation_duration_seconds", []string{"op=put", "backend=dir"}},
		{"cairn_blob_operation_duration_seconds", []string{"op=get", "backend=dir"}},
		{"cairn_shard_propose_duration_seconds", []string{"shard=0"}},
		{"cairn_shard_fsm_apply_duration_seconds", []string{"shard=0"}},
		{"cairn_shard_elections_total", []string{"shard=0"}},
		{"cairn_shard_leader_changes_total", []string{"shard=0"}},
		{"cairn_shard_term", []string{"shard=0"}},
		{"cairn_shard_leader", []string{"shard=0"}},
		{"cairn_shard_log_entries", []string{"shard=0"}},
		{"cairn_shard_log_bytes", []string{"shard=0"}},
	} {
		if v, _ := sample(mfs, c.name, c.labels...); v < 1 {
			t.Errorf("%s%v = %v, want at least 1", c.name, c.labels, v)
		}
	}
	// The snapshot histograms exist before any snapshot.
	if _, found := sample(mfs, "cairn_shard_snapshot_install_duration_seconds", "shard=0"); !found {
		t.Error("no cairn_shard_snapshot_install_duration_seconds series for shard 0")
	}
	// Route labels are names, never paths.
	for _, name := range []string{"cairn_http_requests_total", "cairn_http_request_duration_seconds"} {
		for _, m := range mfs[name].GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "route" && strings.ContainsAny(lp.GetValue(), "/?") {
					t.Errorf("%s has route %q", name, lp.GetValue())
				}
			}
		}
	}
}

// --access-log writes one line per request of both listeners with the route name, status,
// bytes, duration, remote address and request id, and nothing that may hold a secret.
func TestAccessLogLinesCarryTheRequestAndNoSecrets(t *testing.T) {
	logged := &accessLines{}
	cfg := testConfig(t)
	cfg.AccessLog = true
	n, base := serveNodeLogged(t, cfg, ops.Credentials{}, slog.New(logged))
	admin := "http://" + n.AdminAddr().String()
	const secretQuery, secretAuth, secretBody = "qsecret-4711", "authsecret-0815", "bodysecret-1234"
	code, header, b := send(t, http.MethodPut, base+"/v1/agents/agentname/workbenches/wbname/files/input/x?token="+secretQuery,
		map[string]string{"Authorization": "Bearer " + secretAuth, "X-Request-Id": "client-id-1"}, secretBody)
	if code/100 != 2 && code != http.StatusBadRequest {
		t.Fatalf("put: %d %s", code, b)
	}
	if got := header.Get("X-Request-Id"); got != "client-id-1" {
		t.Fatalf("X-Request-Id answered %q, want the client's", got)
	}
	_, header, _ = send(t, http.MethodGet, admin+"/healthz", map[string]string{"X-Request-Id": "not valid\tid"}, "")
	generated := header.Get("X-Request-Id")
	if len(generated) != 32 {
		t.Fatalf("a generated request id %q, want 32 hex digits", generated)
	}

	lines, all := logged.snapshot()
	if len(lines) != 2 {
		t.Fatalf("%d access lines for 2 requests: %v", len(lines), lines)
	}
	put, health := lines[0], lines[1]
	for _, c := range []struct{ got, want string }{
		{put["method"], "PUT"}, {put["route"], "file"}, {put["status"], strconv.Itoa(code)}, {put["request_id"], "client-id-1"},
		{put["bytes"], strconv.Itoa(len(b))},
		{health["method"], "GET"}, {health["route"], "healthz"}, {health["status"], "200"}, {health["request_id"], generated},
	} {
		if c.got != c.want {
			t.Errorf("access lines %v: got %q, want %q", lines, c.got, c.want)
		}
	}
	for _, l := range lines {
		if l["duration"] == "" || !strings.HasPrefix(l["remote"], "127.0.0.1:") {
			t.Errorf("access line without duration or remote address: %v", l)
		}
	}
	// No record holds a secret; the access lines hold no name either (the audit line
	// names the agent and workbench it acted on: that is what it is for).
	for _, secret := range []string{secretQuery, secretAuth, secretBody} {
		if strings.Contains(all, secret) {
			t.Errorf("the log holds %q:\n%s", secret, all)
		}
	}
	for _, l := range lines {
		for _, name := range []string{"agentname", "wbname"} {
			for k, v := range l {
				if strings.Contains(v, name) {
					t.Errorf("access line field %s holds %q: %v", k, name, l)
				}
			}
		}
	}
}

// The access log is off by default: no line, no request id header.
func TestAccessLogIsOffByDefault(t *testing.T) {
	logged := &accessLines{}
	_, base := serveNodeLogged(t, testConfig(t), ops.Credentials{}, slog.New(logged))
	_, header, _ := send(t, http.MethodGet, base+"/healthz", nil, "")
	if lines, _ := logged.snapshot(); len(lines) != 0 || header.Get("X-Request-Id") != "" {
		t.Fatalf("access lines %v, X-Request-Id %q with the access log off", lines, header.Get("X-Request-Id"))
	}
}

// The OpenWOP facade's requests are observed like REST's: an access line under the route
// family (never the path, which names the tenant's files) and the request counters.
func TestTheOpenWOPFacadeIsInTheAccessLogAndTheMetrics(t *testing.T) {
	logged := &accessLines{}
	cfg := testConfig(t)
	cfg.AccessLog = true
	_, base := serveNodeLogged(t, cfg, ops.Credentials{}, slog.New(logged))
	code, _, b := send(t, http.MethodPut, base+"/v1/host/workspace/files/secretname.md", map[string]string{"X-Request-Id": "ow-1"}, `{"content":"x"}`)
	if code != http.StatusOK {
		t.Fatalf("facade put: %d %s", code, b)
	}
	if code, _, b = send(t, http.MethodGet, base+"/proposals", map[string]string{"X-Request-Id": "ow-2"}, ""); code != http.StatusOK {
		t.Fatalf("proposals: %d %s", code, b)
	}
	lines, _ := logged.snapshot()
	if len(lines) != 2 || lines[0]["route"] != "openwop_files" || lines[0]["request_id"] != "ow-1" ||
		lines[1]["route"] != "openwop_proposals" || lines[1]["status"] != "200" {
		t.Fatalf("access lines %v", lines)
	}
	for _, l := range lines {
		for k, v := range l {
			if strings.Contains(v, "secretname") {
				t.Errorf("access line field %s names the file: %v", k, l)
			}
		}
	}
	_, _, metrics := send(t, http.MethodGet, base+"/metrics", nil, "")
	if !strings.Contains(string(metrics), `route="openwop_files"`) {
		t.Fatalf("no openwop_files request counter in /metrics")
	}
}
