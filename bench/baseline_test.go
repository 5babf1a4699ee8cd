package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/bench/etcdcluster"
	"github.com/cairnstore/cairn/blob/s3/s3test"
)

// minioConfig starts a real MinIO for the test and returns the baseline's configuration
// for it, and a client to look at what the baseline left.
func minioConfig(t *testing.T) (MinIOConfig, *minio.Client) {
	t.Helper()
	srv := s3test.Start(t)
	cfg := MinIOConfig{Endpoint: "http://" + srv.Endpoint, Bucket: "bench-baseline", AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey}
	return cfg, srv.Client(t)
}

func countObjects(t *testing.T, mc *minio.Client, bucket string) int {
	t.Helper()
	n := 0
	for o := range mc.ListObjects(t.Context(), bucket, minio.ListObjectsOptions{Prefix: minioPrefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		n++
	}
	return n
}

func TestMinIOBaselinePutsAndGetsTheScenariosBodiesAndCleansUp(t *testing.T) {
	mcfg, mc := minioConfig(t)
	for _, scenario := range []string{ScenarioObjectPut, ScenarioObjectGet} {
		t.Run(scenario, func(t *testing.T) {
			rep, _ := runScenario(t, scenario, func(c *Config) {
				c.SizeBytes = 256 << 10
				c.Files = 3
				c.Baselines = []string{BaselineMinIO}
				c.MinIO = mcfg
			})
			if len(rep.Baselines) != 1 {
				t.Fatalf("%d baseline phases, want 1", len(rep.Baselines))
			}
			b := rep.Baselines[0]
			if b.Baseline != BaselineMinIO || b.OK == 0 || b.Errors != 0 || b.Concurrency != rep.Cairn.Concurrency {
				t.Errorf("baseline phase %+v (classes %v): want successful operations at Cairn's concurrency", b, b.ErrorClasses)
			}
			if b.Comparison == nil || b.Comparison.ThroughputRatio <= 0 {
				t.Errorf("comparison %+v: want a positive ratio", b.Comparison)
			}
			if n := countObjects(t, mc, mcfg.Bucket); n != 0 {
				t.Errorf("the baseline left %d objects under %s", n, minioPrefix)
			}
		})
	}
}

func TestMinIOBaselineCountsTheStoresRefusalsByCode(t *testing.T) {
	mcfg, _ := minioConfig(t)
	mcfg.SecretKey = "wrong"
	cfg := DefaultConfig()
	cfg.Server = newNode(t)
	cfg.Scenario = ScenarioObjectPut
	cfg.Baselines = []string{BaselineMinIO}
	cfg.MinIO = mcfg
	_, err := Run(t.Context(), cfg, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "minio baseline") {
		t.Fatalf("Run with wrong credentials = %v, want the baseline's setup error", err)
	}
	if got := ErrorClass(fmt.Errorf("put: %w", minio.ErrorResponse{StatusCode: 403, Code: "SignatureDoesNotMatch"})); got != "S3 403 SignatureDoesNotMatch" {
		t.Errorf("ErrorClass of an S3 refusal = %q", got)
	}
}

func TestEtcdBaselinePutsToAThreeMemberCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cluster, err := etcdcluster.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	eps := cluster.Endpoints()
	if len(eps) != etcdcluster.Members {
		t.Fatalf("endpoints %v, want %d", eps, etcdcluster.Members)
	}
	rep, _ := runScenario(t, ScenarioSmallPut, func(c *Config) {
		c.Baselines = []string{BaselineFsync, BaselineEtcd}
		c.BaselineDir = t.TempDir()
		c.EtcdEndpoints = eps
	})
	if len(rep.Baselines) != 2 || rep.Baselines[0].Baseline != BaselineFsync || rep.Baselines[1].Baseline != BaselineEtcd {
		t.Fatalf("baseline phases %v: want fsync then etcd", rep.Baselines)
	}
	b := rep.Baselines[1]
	if b.OK == 0 || b.Errors != 0 {
		t.Errorf("etcd phase %+v (classes %v): want successful puts", b, b.ErrorClasses)
	}
	// Every member answers, and the baseline removed its keys.
	for _, ep := range eps {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		// A linearizable read: a follower's local (serializable) state may not have applied
		// the baseline's final delete yet.
		resp, err := c.Get(ctx, etcdPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		c.Close()
		if err != nil {
			t.Fatalf("member %s: %v", ep, err)
		}
		if resp.Count != 0 {
			t.Errorf("member %s holds %d baseline keys after the run", ep, resp.Count)
		}
	}
	var md strings.Builder
	if err := rep.WriteSummary(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Cairn / fsync: throughput", "Cairn / etcd: throughput", "| baseline etcd | closed |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, md.String())
		}
	}
}

func TestEtcdBaselineFailsSetupWhenTheClusterDoesNotAnswer(t *testing.T) {
	// A server that accepts connections and never speaks gRPC.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Server = newNode(t)
	cfg.Scenario = ScenarioSmallPut
	cfg.Baselines = []string{BaselineEtcd}
	cfg.EtcdEndpoints = []string{strings.TrimPrefix(srv.URL, "http://")}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := Run(ctx, cfg, RunOptions{}); err == nil || !strings.Contains(err.Error(), "etcd baseline") {
		t.Fatalf("Run against a silent etcd endpoint = %v, want the baseline's setup error", err)
	}
}

// The relay baseline runs the minio baseline's operations through ServeRelay to the same
// MinIO: every request passes (the signature holds through the relay) and the bytes come
// back whole.
func TestRelayBaselineGoesThroughTheRelayToTheSameStore(t *testing.T) {
	mcfg, mc := minioConfig(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var relayed atomic.Int64
	counted := &countingListener{Listener: ln, n: &relayed}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { done <- ServeRelay(ctx, counted, mcfg.Endpoint) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeRelay: %v", err)
		}
	})
	for _, scenario := range []string{ScenarioObjectPut, ScenarioObjectGet} {
		t.Run(scenario, func(t *testing.T) {
			before := relayed.Load()
			rep, _ := runScenario(t, scenario, func(c *Config) {
				c.SizeBytes = 256 << 10
				c.Files = 3
				c.Baselines = []string{BaselineRelay}
				c.MinIO = mcfg
				c.RelayEndpoint = "http://" + ln.Addr().String()
			})
			if len(rep.Baselines) != 1 {
				t.Fatalf("%d baseline phases, want 1", len(rep.Baselines))
			}
			b := rep.Baselines[0]
			if b.Baseline != BaselineRelay || b.OK == 0 || b.Errors != 0 {
				t.Errorf("relay phase %+v (classes %v): want successful operations", b, b.ErrorClasses)
			}
			if relayed.Load() == before {
				t.Error("no connection reached the relay")
			}
			if n := countObjects(t, mc, mcfg.Bucket); n != 0 {
				t.Errorf("the relay baseline left %d objects under %s", n, minioPrefix)
			}
		})
	}
	c := DefaultConfig()
	c.Server, c.Scenario, c.Baselines, c.MinIO = "http://127.0.0.1:1", ScenarioObjectGet, []string{BaselineRelay}, mcfg
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--baseline-relay-endpoint") {
		t.Errorf("relay baseline without an endpoint: %v, want an error naming --baseline-relay-endpoint", err)
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}
