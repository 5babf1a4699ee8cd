package bench

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/api/s3"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// newGatewayNode starts a real single-node Cairn serving REST and, on a listener of its
// own, the S3 gateway over the same service, and makes an S3 key for agent root agent (as
// `cairn admin key create --s3` does). It returns the REST URL and the gateway's
// configuration for the bench.
func newGatewayNode(t *testing.T, agent string) (string, S3GatewayConfig) {
	t.Helper()
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	keys, err := auth.OpenFileStore(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := auth.NewKey(auth.KeySpec{Name: "bench", Agents: []string{agent},
		Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, S3: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Create(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	restSrv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready}))
	t.Cleanup(restSrv.Close)
	gw := httptest.NewServer(s3.NewHandler(n.Service, auth.S3Keys{Store: keys}, s3.Config{}))
	t.Cleanup(gw.Close)
	return restSrv.URL, S3GatewayConfig{Endpoint: gw.URL, AccessKeyID: auth.S3AccessKeyID(key.ID), SecretAccessKey: key.S3Secret}
}

// The S3 gateway phase runs the object scenarios through the gateway with the AWS SDK
// right after the REST phase, and reports its ratios to REST and to raw MinIO.
func TestS3GatewayPhaseRunsBesideRESTAndTheMinIOBaseline(t *testing.T) {
	mcfg, _ := minioConfig(t)
	for _, scenario := range []string{ScenarioObjectPut, ScenarioObjectGet} {
		t.Run(scenario, func(t *testing.T) {
			server, gw := newGatewayNode(t, "bench")
			cfg := DefaultConfig()
			cfg.Server, cfg.Agent, cfg.Workbench, cfg.Scenario = server, "bench", "w-s3", scenario
			cfg.Concurrency, cfg.Duration, cfg.Files = 2, 400*time.Millisecond, 3
			cfg.SizeBytes = 1 << 20 // beyond smallBodyBytes: the SDK rewinds a generated body
			cfg.Baselines, cfg.MinIO, cfg.S3Gateway = []string{BaselineMinIO}, mcfg, gw
			rep, err := Run(t.Context(), cfg, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			g := rep.S3
			if g == nil || g.Name != "cairn s3 "+scenario || g.OK == 0 || g.Errors != 0 || g.Concurrency != 2 {
				t.Fatalf("s3 gateway phase %+v: want successful operations at the REST phase's concurrency", g)
			}
			if rep.Cairn == nil || rep.Cairn.OK == 0 || len(rep.Baselines) != 1 || rep.Baselines[0].OK == 0 {
				t.Fatalf("REST phase %+v, baselines %v: want both to have run", rep.Cairn, rep.Baselines)
			}
			if c := g.OverCairn; c == nil || c.ThroughputRatio <= 0 || c.P99Ratio <= 0 {
				t.Errorf("s3 / REST %+v: want positive ratios", c)
			}
			if c := g.OverBaselines[BaselineMinIO]; c == nil || c.ThroughputRatio <= 0 ||
				c.ThroughputRatio != g.AchievedRate/rep.Baselines[0].AchievedRate {
				t.Errorf("s3 / minio %+v: want the gateway's rate over the baseline's", c)
			}
			var md strings.Builder
			if err := rep.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"| cairn s3 " + scenario + " | closed |", "S3 gateway / Cairn REST: throughput", "S3 gateway / minio: throughput", "| S3 gateway | " + gw.Endpoint + " |"} {
				if !strings.Contains(md.String(), want) {
					t.Errorf("Markdown report lacks %q:\n%s", want, md.String())
				}
			}
			// What the gateway phase wrote through the gateway, it removed.
			files := 0
			err = client.New(server, nil).Walk(t.Context(), cfg.Agent, cfg.Workbench, "input/bench", func(e client.Entry) error {
				if !e.IsDir() && strings.HasPrefix(e.Path, gatewayPrefix) {
					files++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if files != 0 {
				t.Errorf("the s3 gateway phase left %d files under %s", files, gatewayPrefix)
			}
		})
	}
}

// A key of another agent root reaches no bucket of the run's: setup says whose key the
// gateway needs.
func TestS3GatewayPhaseNeedsAKeyOfTheRunsAgentRoot(t *testing.T) {
	server, gw := newGatewayNode(t, "someone-else")
	cfg := DefaultConfig()
	cfg.Server, cfg.Agent, cfg.Scenario, cfg.S3Gateway = server, "bench", ScenarioObjectPut, gw
	_, err := Run(t.Context(), cfg, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), `the S3 key's agent root must be "bench"`) {
		t.Fatalf("Run with another root's key = %v, want the gateway's setup error", err)
	}
}
