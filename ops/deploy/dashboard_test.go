package deploy

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metricsql"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/server"
	"github.com/cairnstore/cairn/ops"
)

// exportedMetrics starts an embedded node in-process, writes and reads a little (one
// inline body, one in the object store), scrapes its /metrics and returns the metric
// families by name.
func exportedMetrics(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	cfg := ops.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.AdminListen = "127.0.0.1:0"
	n, err := server.Open(t.Context(), cfg, ops.Credentials{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := n.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	addrs := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() { served <- n.Serve(ctx, func(a net.Addr) { addrs <- a }) }()
	t.Cleanup(func() { stop(); <-served })
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	base := "http://" + addr.String()

	c := client.New(base, nil)
	if _, err := c.CreateWorkbench(t.Context(), "demo", "w1"); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"input/small.txt": "hello", "input/large.txt": strings.Repeat("cairn ", 2000)} {
		if _, err := c.PutFile(t.Context(), "demo", "w1", name, strings.NewReader(body), client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		rc, _, err := c.GetFile(t.Context(), "demo", "w1", name, client.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
	}

	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	return families
}

// exported reports whether a series name a query selects is one the node exports: a
// family's name, or a histogram's or summary's _bucket, _sum or _count series.
func exported(families map[string]*dto.MetricFamily, name string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if f, ok := families[base]; ok {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				return true
			case dto.MetricType_SUMMARY:
				return suffix != "_bucket"
			}
		}
	}
	return false
}

// grafanaVariable matches Grafana's template variables: $name, ${name}, ${name:fmt}.
var grafanaVariable = regexp.MustCompile(`\$\{[^}]+\}|\$[A-Za-z_][A-Za-z0-9_]*`)

// labelValues matches Grafana's label_values(SELECTOR, LABEL) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\((.+),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$`)

// metricNames parses a dashboard query (Grafana's variables replaced by values that
// parse) and returns the metric names it selects.
func metricNames(query string) ([]string, error) {
	if m := labelValues.FindStringSubmatch(query); m != nil {
		query = m[1]
	}
	query = grafanaVariable.ReplaceAllStringFunc(query, func(v string) string {
		if strings.Contains(v, "interval") || strings.Contains(v, "range") {
			return "5m"
		}
		return "x"
	})
	expr, err := metricsql.Parse(query)
	if err != nil {
		return nil, err
	}
	var names []string
	metricsql.VisitAll(expr, func(e metricsql.Expr) {
		me, ok := e.(*metricsql.MetricExpr)
		if !ok {
			return
		}
		for _, group := range me.LabelFilterss {
			for _, f := range group {
				if f.Label == "__name__" && !f.IsRegexp && !f.IsNegative {
					names = append(names, f.Value)
				}
			}
		}
	})
	return names, nil
}

// dashboardQueries returns every query of the dashboard (panel targets, nested rows,
// template variables), each with where it is.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("grafana", "cairn-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	out := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				out["panel "+p.Title+" "+tg.RefID] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
		}
		out["variable "+v.Name] = q.Query
	}
	return out
}

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func TestDashboardQueriesNameOnlyExportedMetrics(t *testing.T) {
	queries := dashboardQueries(t)
	if len(queries) < 10 {
		t.Fatalf("%d queries in the dashboard", len(queries))
	}
	families := exportedMetrics(t)
	used := map[string]bool{}
	for where, q := range queries {
		names, err := metricNames(q)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", where, q, err)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s: %q selects no metric by name", where, q)
		}
		for _, name := range names {
			used[name] = true
			if !exported(families, name) {
				t.Errorf("%s: %s is not exported by a running node", where, name)
			}
		}
	}
	var list []string
	for name := range used {
		list = append(list, name)
	}
	sort.Strings(list)
	t.Logf("%d queries over %d metrics: %s", len(queries), len(list), strings.Join(list, " "))
}

func TestMetricNamesOfAQuery(t *testing.T) {
	// The extraction the dashboard test relies on, and the exported check, can fail.
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{`sum by (route) (rate(cairn_http_requests_total{instance=~"$instance"}[$__rate_interval]))`, []string{"cairn_http_requests_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(cairn_http_request_duration_seconds_bucket[5m])))`, []string{"cairn_http_request_duration_seconds_bucket"}},
		{`cairn_shard_commit_index - cairn_shard_applied_version`, []string{"cairn_shard_commit_index", "cairn_shard_applied_version"}},
		{`label_values(cairn_shard_ready, instance)`, []string{"cairn_shard_ready"}},
	} {
		got, err := metricNames(tt.query)
		if err != nil || strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("metricNames(%q) = %v, %v; want %v", tt.query, got, err, tt.want)
		}
	}
	if _, err := metricNames(`rate(cairn_http_requests_total[5m]`); err == nil {
		t.Error("an unbalanced query parsed")
	}
	h := dto.MetricType_HISTOGRAM
	c := dto.MetricType_COUNTER
	fams := map[string]*dto.MetricFamily{"lat": {Type: &h}, "reqs_total": {Type: &c}}
	for name, want := range map[string]bool{"lat_bucket": true, "lat_count": true, "lat": true, "reqs_total": true, "reqs_total_count": false, "nope": false} {
		if exported(fams, name) != want {
			t.Errorf("exported(%q) = %v, want %v", name, !want, want)
		}
	}
}
