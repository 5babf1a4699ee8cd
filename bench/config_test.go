package bench

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
)

func TestErrorClassBucketsByStatusCodeAndTransport(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"a server answer carries status and code", &client.Error{HTTPStatus: 503, Code: "ObjectUnavailable"}, "HTTP 503 ObjectUnavailable"},
		{"a wrapped server answer still does", fmt.Errorf("put: %w", &client.Error{HTTPStatus: 412, Code: "Conflict"}), "HTTP 412 Conflict"},
		{"an operation past its deadline is a timeout", fmt.Errorf("get: %w", context.DeadlineExceeded), ClassTimeout},
		{"a cancelled operation is canceled", context.Canceled, ClassCanceled},
		{"a refused connection is transport", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, ClassTransport},
		{"a local file error is io", &fs.PathError{Op: "sync", Path: "/x", Err: errors.New("EIO")}, ClassIO},
		{"an unsent operation is not sent", errNotSent, ClassNotSent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ErrorClass(tc.err); got != tc.want {
				t.Errorf("ErrorClass(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

func TestConfigValidateNamesTheBrokenField(t *testing.T) {
	valid := DefaultConfig()
	valid.Scenario = ScenarioSmallPut
	if err := valid.Validate(); err != nil {
		t.Fatalf("the defaults with a scenario: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		field  string
	}{
		{"an unknown scenario", func(c *Config) { c.Scenario = "smallput" }, "scenario"},
		{"a server that is not a URL", func(c *Config) { c.Server = "127.0.0.1:7070" }, "server"},
		{"no clients", func(c *Config) { c.Concurrency = 0 }, "concurrency"},
		{"a rate and a sweep", func(c *Config) { c.Rate = 10; c.SweepRates = []float64{10} }, "sweep"},
		{"a zero sweep rate", func(c *Config) { c.SweepRates = []float64{10, 0} }, "sweep rate"},
		{"a read ratio above 1", func(c *Config) { c.ReadRatio = 1.5 }, "read ratio"},
		{"an unknown baseline", func(c *Config) { c.Baselines = []string{"redis"} }, "baseline"},
		{"a baseline named twice", func(c *Config) { c.Baselines = []string{BaselineFsync, BaselineFsync} }, "twice"},
		{"a baseline without a like-for-like operation", func(c *Config) { c.Scenario = ScenarioStat; c.Baselines = []string{BaselineFsync} }, "does not measure scenario stat"},
		{"a minio baseline without an endpoint", func(c *Config) { c.Baselines = []string{BaselineMinIO} }, "endpoint"},
		{"a minio baseline without credentials", func(c *Config) {
			c.Baselines = []string{BaselineMinIO}
			c.MinIO = MinIOConfig{Endpoint: "http://127.0.0.1:9000", Bucket: "b"}
		}, "credentials"},
		{"an etcd baseline without endpoints", func(c *Config) { c.Baselines = []string{BaselineEtcd} }, "endpoints"},
		{"an etcd baseline with a value etcd refuses", func(c *Config) {
			c.Baselines = []string{BaselineEtcd}
			c.EtcdEndpoints = []string{"127.0.0.1:2379"}
			c.SizeBytes = 2 << 20
		}, "request limit"},
		{"an s3 gateway without credentials", func(c *Config) { c.S3Gateway = S3GatewayConfig{Endpoint: "http://127.0.0.1:9100"} }, "CAIRN_BENCH_S3_ACCESS_KEY_ID"},
		{"an s3 gateway that is not a URL", func(c *Config) {
			c.S3Gateway = S3GatewayConfig{Endpoint: "127.0.0.1:9100", AccessKeyID: "A", SecretAccessKey: "S"}
		}, "endpoint"},
		{"an s3 gateway with a scenario it has no operation for", func(c *Config) {
			c.Scenario = ScenarioStat
			c.S3Gateway = S3GatewayConfig{Endpoint: "http://127.0.0.1:9100", AccessKeyID: "A", SecretAccessKey: "S"}
		}, "does not measure scenario stat"},
		{"an s3 gateway in a sweep", func(c *Config) {
			c.SweepRates = []float64{10}
			c.S3Gateway = S3GatewayConfig{Endpoint: "http://127.0.0.1:9100", AccessKeyID: "A", SecretAccessKey: "S"}
		}, "not a sweep"},
		{"a lean client for a scenario without one", func(c *Config) { c.LeanHTTP = true }, "only the stat, list and mcp scenarios"},
		{"a lean client to an https server", func(c *Config) {
			c.Scenario = ScenarioStat
			c.LeanHTTP = true
			c.Server = "https://127.0.0.1:7070"
		}, "must be an http:// URL"},
		{"a negative node count", func(c *Config) { c.Nodes = -1 }, "nodes"},
		{"a zero duration", func(c *Config) { c.Duration = 0 }, "duration"},
		{"a negative size", func(c *Config) { c.SizeBytes = -1 }, "size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.field)
			}
			if !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrUnknownScenario) {
				t.Errorf("error %v wraps neither ErrInvalidConfig nor ErrUnknownScenario", err)
			}
		})
	}
}

// The scenarios with a lean lane take Config.LeanHTTP to an http:// server.
func TestConfigValidateTakesALeanClientWhereThereIsOne(t *testing.T) {
	for _, sc := range []string{ScenarioStat, ScenarioList, ScenarioMCP} {
		c := DefaultConfig()
		c.Scenario, c.LeanHTTP = sc, true
		if err := c.Validate(); err != nil {
			t.Errorf("a lean client for %s: %v", sc, err)
		}
	}
}

func TestParseSizeReadsUnits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"1024", 1024}, {"1KiB", 1 << 10}, {"1 MiB", 1 << 20}, {"64MiB", 64 << 20}, {"64m", 64 << 20},
		{"2GiB", 2 << 30}, {"1MB", 1000000}, {"10b", 10},
	} {
		if got, err := ParseSize(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "MiB", "1.5MiB", "-1", "1 furlong", "99999999999999999999", "9999999999GiB"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
}

func TestCPUModelReadsTheFirstModelName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpuinfo")
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	if err := os.WriteFile(path, []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := cpuModel(path); got != "AMD EPYC 7B13" {
		t.Errorf("cpuModel = %q", got)
	}
	if got := cpuModel(filepath.Join(t.TempDir(), "missing")); got != "" {
		t.Errorf("cpuModel of a missing file = %q, want \"\"", got)
	}
}

func TestProgressPrintsALineEveryIntervalOrOneRewrittenLine(t *testing.T) {
	live := &Live{}
	live.ok.Add(42)
	live.failed.Add(3)
	for _, tc := range []struct {
		name string
		tty  bool
		want string
	}{
		{"to a log: plain lines", false, "small-put  "},
		{"to a terminal: the line is rewritten", true, "\r\x1b[Ksmall-put  "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			stop := startProgress(&b, tc.tty, "small-put", time.Second, live)
			stop()
			out := b.String()
			if !strings.HasPrefix(out, tc.want) || !strings.HasSuffix(out, "\n") {
				t.Errorf("progress output %q: want it to start with %q and end the line", out, tc.want)
			}
			if !strings.Contains(out, "ok 42") || !strings.Contains(out, "errors 3") {
				t.Errorf("progress output %q lacks the tally", out)
			}
		})
	}
}

// TestHarnessTalksToCairnOnlyOverHTTP keeps the package's promise (doc.go): no file of
// the harness imports Cairn's storage or server packages; only tests may.
func TestHarnessTalksToCairnOnlyOverHTTP(t *testing.T) {
	forbidden := []string{"meta", "blob", "shard", "workbench", "api/rest", "api/server", "api/mcp", "ops"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, pkg := range forbidden {
				full := "github.com/cairnstore/cairn/" + pkg
				if path == full || strings.HasPrefix(path, full+"/") {
					t.Errorf("%s imports %s: the harness must reach Cairn only over HTTP (api/client)", name, path)
				}
			}
		}
	}
}
