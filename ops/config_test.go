package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// env returns a getenv over a fixed map.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// writeYAML writes text to a config file in a fresh temp dir and returns its path.
func writeYAML(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cairn.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// load binds and parses args, then runs LoadConfig.
func load(t *testing.T, args []string, getenv func(string) string) (Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return LoadConfig(fs, getenv)
}

func TestDefaultConfigIsValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
}

func TestLoadConfigWithNothingSetReturnsDefaults(t *testing.T) {
	got, err := load(t, nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got != DefaultConfig() {
		t.Fatalf("got %+v, want defaults %+v", got, DefaultConfig())
	}
}

func TestLoadConfigPrecedence(t *testing.T) {
	file := writeYAML(t, "listen: 127.0.0.1:1001\ninline_max_bytes: 100\nlog_level: warn\nretention_window: 1h\n")

	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		listen string
		inline int64
		level  string
		window time.Duration
	}{
		{
			name:   "defaults apply when no layer sets a value",
			listen: DefaultListen, inline: DefaultInlineMaxBytes, level: DefaultLogLevel, window: DefaultRetentionWindow,
		},
		{
			name:   "the yaml file overrides defaults",
			args:   []string{"--config", file},
			listen: "127.0.0.1:1001", inline: 100, level: "warn", window: time.Hour,
		},
		{
			name:   "the environment overrides the yaml file",
			args:   []string{"--config", file},
			env:    map[string]string{"CAIRN_LISTEN": "127.0.0.1:2002", "CAIRN_INLINE_MAX_BYTES": "200"},
			listen: "127.0.0.1:2002", inline: 200, level: "warn", window: time.Hour,
		},
		{
			name:   "flags override the environment",
			args:   []string{"--config", file, "--listen", "127.0.0.1:3003"},
			env:    map[string]string{"CAIRN_LISTEN": "127.0.0.1:2002", "CAIRN_INLINE_MAX_BYTES": "200"},
			listen: "127.0.0.1:3003", inline: 200, level: "warn", window: time.Hour,
		},
		{
			name:   "a flag set to its default value still overrides lower layers",
			args:   []string{"--config", file, "--inline-max-bytes", "4096", "--log-level", "info"},
			env:    map[string]string{"CAIRN_INLINE_MAX_BYTES": "200"},
			listen: "127.0.0.1:1001", inline: 4096, level: "info", window: time.Hour,
		},
		{
			name:   "the config file may come from CAIRN_CONFIG",
			env:    map[string]string{"CAIRN_CONFIG": file, "CAIRN_RETENTION_WINDOW": "30m"},
			listen: "127.0.0.1:1001", inline: 100, level: "warn", window: 30 * time.Minute,
		},
		{
			name:   "an empty environment variable counts as unset",
			args:   []string{"--config", file},
			env:    map[string]string{"CAIRN_LISTEN": ""},
			listen: "127.0.0.1:1001", inline: 100, level: "warn", window: time.Hour,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := load(t, tt.args, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if got.Listen != tt.listen || got.InlineMaxBytes != tt.inline || got.LogLevel != tt.level || got.RetentionWindow != tt.window {
				t.Fatalf("got listen=%q inline=%d level=%q window=%v, want %q %d %q %v",
					got.Listen, got.InlineMaxBytes, got.LogLevel, got.RetentionWindow,
					tt.listen, tt.inline, tt.level, tt.window)
			}
		})
	}
}

func TestConfigFlagOverridesConfigEnv(t *testing.T) {
	fromFlag := writeYAML(t, "log_format: json\n")
	fromEnv := writeYAML(t, "log_format: text\nlog_level: debug\n")
	got, err := load(t, []string{"--config", fromFlag}, env(map[string]string{"CAIRN_CONFIG": fromEnv}))
	if err != nil {
		t.Fatal(err)
	}
	if got.LogFormat != "json" || got.LogLevel != DefaultLogLevel {
		t.Fatalf("got format=%q level=%q; the --config file should have been the only one read", got.LogFormat, got.LogLevel)
	}
}

func TestEveryFieldIsSettableInEveryLayer(t *testing.T) {
	want := Config{
		DataDir:               "/var/lib/cairn",
		Listen:                "127.0.0.2:9000",
		InlineMaxBytes:        0,
		MCPMaxPayloadBytes:    1 << 20,
		RetentionWindow:       48 * time.Hour,
		HistoryVersions:       5,
		HistoryAge:            2 * time.Hour,
		HistoryMaxVersions:    50,
		DedupeMaxPerRoot:      7,
		FeedRetention:         12 * time.Hour,
		FeedMaxPerRoot:        9,
		SnapshotGrace:         10 * time.Minute,
		RestoreBatch:          64,
		GCGrace:               30 * time.Minute,
		GCInterval:            5 * time.Minute,
		GCMaxBatch:            500,
		PresentationRoot:      "/ws/{agent}",
		RaftSnapshotInterval:  time.Minute,
		RaftSnapshotThreshold: 100,
		LogLevel:              "debug",
		LogFormat:             "json",
		AccessLog:             true,
		ShutdownTimeout:       3 * time.Second,
		Blob:                  "s3://cairn-blobs/prod/eu",
		S3Endpoint:            "https://minio.internal:9000",
		S3Region:              "eu-west-1",
		S3CreateBucket:        false,
		S3DirectReads:         true,
		Cluster:               true,
		NodeID:                "node-a",
		PeerListen:            "10.0.0.5:7071",
		AdvertiseClient:       "http://10.0.0.5:7070",
		AdvertisePeer:         "10.0.0.5:7071",
		PeerSource:            "10.0.0.5",
		Etcd:                  "10.0.0.1:2379,10.0.0.2:2379",
		Shards:                16,
		Replication:           5,
		PeerTLSCert:           "/etc/cairn/node.pem",
		PeerTLSKey:            "/etc/cairn/node.key",
		PeerTLSCA:             "/etc/cairn/ca.pem",

		QueryBudgetBytes:         64 << 20,
		HeapFloorBytes:           32 << 20,
		MaxSnapshotsPerWorkbench: 32,
		MaxUploadDuration:        10 * time.Minute,
		CacheMaxBytes:            1 << 30,
		CacheDir:                 "/var/cache/cairn",
		QueryQueueTimeout:        2 * time.Second,

		PrincipalRequestsPerSecond: 2.5,
		PrincipalRequestBurst:      5,
		PrincipalMaxUploads:        3,
		PrincipalMaxAdmissions:     5,

		ReadHeaderTimeout:       3 * time.Second,
		IdleTimeout:             40 * time.Second,
		WriteTimeout:            20 * time.Second,
		BodyMinBytesPerSecond:   1000,
		BodyRateWindow:          5 * time.Second,
		MaxConnections:          100,
		MaxConnectionsPerClient: 10,
		BlobTimeout:             7 * time.Second,
		AdminListen:             "127.0.0.2:9001",
		AllowedHosts:            "cairn.internal,cairn.internal:9000",

		TLSCert:           "/etc/cairn/client.pem",
		TLSKey:            "/etc/cairn/client.key",
		TLSClientCA:       "/etc/cairn/clients-ca.pem",
		Auth:              "required",
		MetricsRequireKey: true,

		RequireDistinctReviewer: true,

		RedactSecretsFile:        "/etc/cairn/secrets.yaml",
		RedactAllSurfacesTenants: "agent-a,b",
		OpenWOP: OpenWOPConfig{Enabled: false, MaxFileBytes: 2048, MaxFiles: 9, MaxVersions: 3, RunTTL: 48 * time.Hour,
			Tenant: "t1", Workspace: "w1", TestSeams: true, Readback: false, PacksFile: "/etc/cairn/packs.json"},
		Documents: DocumentsConfig{Owner: "t2/w2", RunnerURL: "http://127.0.0.1:8088/propose", RunnerTimeout: 5 * time.Second},
		S3Gateway: S3GatewayConfig{Listen: "127.0.0.2:9002", Region: "eu-central-1"},
	}
	text := map[string]string{
		"data_dir": "/var/lib/cairn", "listen": "127.0.0.2:9000", "inline_max_bytes": "0",
		"mcp_max_payload_bytes": "1048576", "retention_window": "48h", "dedupe_max_per_root": "7",
		"history_versions": "5", "history_age": "2h", "history_max_versions": "50",
		"feed_retention": "12h", "feed_max_per_root": "9",
		"snapshot_grace": "10m", "restore_batch": "64", "gc_grace": "30m", "gc_interval": "5m", "gc_max_batch": "500",
		"query_budget_bytes": "67108864", "query_queue_timeout": "2s", "heap_floor_bytes": "33554432",
		"principal_requests_per_second": "2.5", "principal_request_burst": "5", "principal_max_uploads": "3", "principal_max_admissions": "5",
		"max_snapshots_per_workbench": "32", "max_upload_duration": "10m",
		"cache_max_bytes": "1073741824", "cache_dir": "/var/cache/cairn",
		"presentation_root": "/ws/{agent}", "raft_snapshot_interval": "1m",
		"raft_snapshot_threshold": "100", "log_level": "debug", "log_format": "json", "access_log": "true",
		"shutdown_timeout": "3s", "blob": "s3://cairn-blobs/prod/eu",
		"s3_endpoint": "https://minio.internal:9000", "s3_region": "eu-west-1",
		"s3_create_bucket": "false", "s3_direct_reads": "true",
		"cluster": "true", "node_id": "node-a", "peer_listen": "10.0.0.5:7071",
		"advertise_client": "http://10.0.0.5:7070", "advertise_peer": "10.0.0.5:7071",
		"peer_source": "10.0.0.5",
		"etcd":        "10.0.0.1:2379,10.0.0.2:2379", "shards": "16", "replication": "5",
		"peer_tls_cert": "/etc/cairn/node.pem", "peer_tls_key": "/etc/cairn/node.key",
		"peer_tls_ca":         "/etc/cairn/ca.pem",
		"read_header_timeout": "3s", "idle_timeout": "40s", "write_timeout": "20s",
		"body_min_bytes_per_second": "1000", "body_rate_window": "5s", "max_connections": "100",
		"max_connections_per_client": "10", "blob_timeout": "7s", "admin_listen": "127.0.0.2:9001",
		"allowed_hosts": "cairn.internal,cairn.internal:9000",
		"tls_cert":      "/etc/cairn/client.pem", "tls_key": "/etc/cairn/client.key", "tls_client_ca": "/etc/cairn/clients-ca.pem",
		"insecure_plaintext": "false", // true contradicts tls_cert; TestInsecurePlaintextIsSettable sets it
		"auth":               "required", "metrics_require_key": "true", "require_distinct_reviewer": "true",
		"redact_secrets_file": "/etc/cairn/secrets.yaml", "redact_all_surfaces_tenants": "agent-a,b",
		"openwop": "false", "openwop_max_file_bytes": "2048", "openwop_max_files": "9", "openwop_max_versions": "3",
		"openwop_run_ttl": "48h", "openwop_tenant": "t1", "openwop_workspace": "w1", "openwop_test_seams": "true",
		"openwop_readback": "false", "openwop_packs_file": "/etc/cairn/packs.json",
		"documents_owner": "t2/w2", "documents_runner_url": "http://127.0.0.1:8088/propose", "documents_runner_timeout": "5s",
		"s3_listen": "127.0.0.2:9002", "s3_gateway_region": "eu-central-1",
	}
	if len(text) != len(settings) {
		t.Fatalf("test covers %d settings, package has %d", len(text), len(settings))
	}

	var yamlText strings.Builder
	environ := map[string]string{}
	var args []string
	for k, v := range text {
		yamlText.WriteString(k + ": \"" + v + "\"\n")
		environ["CAIRN_"+strings.ToUpper(k)] = v
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-")+"="+v)
	}

	layers := []struct {
		name   string
		args   []string
		getenv func(string) string
	}{
		{"yaml", []string{"--config", writeYAML(t, yamlText.String())}, env(nil)},
		{"environment", nil, env(environ)},
		{"flags", args, env(nil)},
	}
	for _, l := range layers {
		t.Run(l.name, func(t *testing.T) {
			got, err := load(t, l.args, l.getenv)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestValidateRules(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		field  string
	}{
		{"an empty data dir is rejected", func(c *Config) { c.DataDir = "" }, "DataDir"},
		{"a zero read-header timeout is rejected", func(c *Config) { c.ReadHeaderTimeout = 0 }, "ReadHeaderTimeout"},
		{"a zero idle timeout is rejected", func(c *Config) { c.IdleTimeout = 0 }, "IdleTimeout"},
		{"a zero write timeout is rejected", func(c *Config) { c.WriteTimeout = 0 }, "WriteTimeout"},
		{"a zero minimum body rate is rejected", func(c *Config) { c.BodyMinBytesPerSecond = 0 }, "BodyMinBytesPerSecond"},
		{"a zero body rate window is rejected", func(c *Config) { c.BodyRateWindow = 0 }, "BodyRateWindow"},
		{"a zero connection cap is rejected", func(c *Config) { c.MaxConnections = 0 }, "MaxConnections"},
		{"a per-client cap above the node cap is rejected", func(c *Config) { c.MaxConnectionsPerClient = c.MaxConnections + 1 }, "MaxConnectionsPerClient"},
		{"a zero blob timeout is rejected", func(c *Config) { c.BlobTimeout = 0 }, "BlobTimeout"},
		{"a negative principal request rate is rejected", func(c *Config) { c.PrincipalRequestsPerSecond = -1 }, "PrincipalRequestsPerSecond"},
		{"an infinite principal request rate is rejected", func(c *Config) { c.PrincipalRequestsPerSecond = math.Inf(1) }, "PrincipalRequestsPerSecond"},
		{"a negative principal burst is rejected", func(c *Config) { c.PrincipalRequestBurst = -1 }, "PrincipalRequestBurst"},
		{"a principal upload cap below -1 is rejected", func(c *Config) { c.PrincipalMaxUploads = -2 }, "PrincipalMaxUploads"},
		{"a principal admission cap below -1 is rejected", func(c *Config) { c.PrincipalMaxAdmissions = -2 }, "PrincipalMaxAdmissions"},
		{"an admin listener on the client address is rejected", func(c *Config) { c.AdminListen = c.Listen }, "AdminListen"},
		{"an S3 gateway on the client address is rejected", func(c *Config) { c.S3Gateway.Listen = c.Listen }, "S3Listen"},
		{"an S3 gateway address without a port is rejected", func(c *Config) { c.S3Gateway.Listen = "127.0.0.1" }, "S3Listen"},
		{"an S3 gateway beyond loopback without TLS is rejected", func(c *Config) { c.S3Gateway.Listen = "0.0.0.0:9100" }, "S3Listen"},
		{"an empty S3 gateway region is rejected", func(c *Config) { c.S3Gateway.Listen, c.S3Gateway.Region = "127.0.0.1:9100", "" }, "S3GatewayRegion"},
		{"an allowed host with a path is rejected", func(c *Config) { c.AllowedHosts = "a.example/x" }, "AllowedHosts"},
		{"a listen address without a port is rejected", func(c *Config) { c.Listen = "localhost" }, "Listen"},
		{"a listen address with a named port is rejected", func(c *Config) { c.Listen = "localhost:http" }, "Listen"},
		{"a listen port above 65535 is rejected", func(c *Config) { c.Listen = "127.0.0.1:70000" }, "Listen"},
		{"a negative inline threshold is rejected", func(c *Config) { c.InlineMaxBytes = -1 }, "InlineMaxBytes"},
		{"an inline threshold above 64 KiB is rejected", func(c *Config) { c.InlineMaxBytes = MaxInlineMaxBytes + 1 }, "InlineMaxBytes"},
		{"a zero MCP payload cap is rejected", func(c *Config) { c.MCPMaxPayloadBytes = 0 }, "MCPMaxPayloadBytes"},
		{"an MCP payload cap above 1 GiB is rejected", func(c *Config) { c.MCPMaxPayloadBytes = MaxMCPMaxPayloadBytes + 1 }, "MCPMaxPayloadBytes"},
		{"a zero retention window is rejected", func(c *Config) { c.RetentionWindow = 0 }, "RetentionWindow"},
		{"a history keeping no version is rejected", func(c *Config) { c.HistoryVersions = 0 }, "HistoryVersions"},
		{"a negative history age is rejected", func(c *Config) { c.HistoryAge = -time.Hour }, "HistoryAge"},
		{"a history cap below the versions kept is rejected", func(c *Config) { c.HistoryMaxVersions = 99 }, "HistoryMaxVersions"},
		{"a zero dedupe bound is rejected", func(c *Config) { c.DedupeMaxPerRoot = 0 }, "DedupeMaxPerRoot"},
		{"a zero feed retention is rejected", func(c *Config) { c.FeedRetention = 0 }, "FeedRetention"},
		{"a zero feed bound is rejected (-1 turns the feed off)", func(c *Config) { c.FeedMaxPerRoot = 0 }, "FeedMaxPerRoot"},
		{"a zero garbage-collection grace is rejected", func(c *Config) { c.GCGrace = 0 }, "GCGrace"},
		{"a negative garbage-collection interval is rejected", func(c *Config) { c.GCInterval = -time.Second }, "GCInterval"},
		{"a zero snapshot cap is rejected", func(c *Config) { c.MaxSnapshotsPerWorkbench = 0 }, "MaxSnapshotsPerWorkbench"},
		{"a negative segment cache bound is rejected", func(c *Config) { c.CacheMaxBytes = -1 }, "CacheMaxBytes"},
		{"a negative heap floor is rejected", func(c *Config) { c.HeapFloorBytes = -1 }, "HeapFloorBytes"},
		{"a segment cache directory without a bound is rejected", func(c *Config) { c.CacheDir = "cache" }, "CacheDir"},
		{"a negative upload bound is rejected", func(c *Config) { c.MaxUploadDuration = -time.Second }, "MaxUploadDuration"},
		{"an upload bound as long as the garbage-collection grace is rejected", func(c *Config) { c.MaxUploadDuration = c.GCGrace }, "MaxUploadDuration"},
		{"a query budget below 16 MiB is rejected", func(c *Config) { c.QueryBudgetBytes = MinQueryBudgetBytes - 1 }, "QueryBudgetBytes"},
		{"a zero query queue timeout is rejected", func(c *Config) { c.QueryQueueTimeout = 0 }, "QueryQueueTimeout"},
		{"a presentation root of / is rejected", func(c *Config) { c.PresentationRoot = "/" }, "PresentationRoot"},
		{"a presentation root without {agent} is rejected", func(c *Config) { c.PresentationRoot = "/agents/wb" }, "PresentationRoot"},
		{"a relative presentation root is rejected", func(c *Config) { c.PresentationRoot = "agents/{agent}" }, "PresentationRoot"},
		{"a presentation root with a trailing slash is rejected", func(c *Config) { c.PresentationRoot = "/agents/{agent}/" }, "PresentationRoot"},
		{"a presentation root with .. is rejected", func(c *Config) { c.PresentationRoot = "/agents/../{agent}" }, "PresentationRoot"},
		{"a presentation root with a backslash is rejected", func(c *Config) { c.PresentationRoot = `/agents\{agent}` }, "PresentationRoot"},
		{"a zero snapshot interval is rejected", func(c *Config) { c.RaftSnapshotInterval = 0 }, "RaftSnapshotInterval"},
		{"a zero snapshot threshold is rejected", func(c *Config) { c.RaftSnapshotThreshold = 0 }, "RaftSnapshotThreshold"},
		{"an unknown log level is rejected", func(c *Config) { c.LogLevel = "verbose" }, "LogLevel"},
		{"an unknown log format is rejected", func(c *Config) { c.LogFormat = "xml" }, "LogFormat"},
		{"a zero shutdown timeout is rejected", func(c *Config) { c.ShutdownTimeout = 0 }, "ShutdownTimeout"},
		{"a cluster on the dir blob store is rejected", func(c *Config) { validCluster(c); c.Blob = "dir"; c.S3Endpoint = "" }, "Blob"},
		{"a cluster on a dir:// blob store is rejected", func(c *Config) { validCluster(c); c.Blob = "dir:///srv/blobs"; c.S3Endpoint = "" }, "Blob"},
		{"a cluster without etcd is rejected", func(c *Config) { validCluster(c); c.Etcd = " , " }, "Etcd"},
		{"a cluster without a peer listen address is rejected", func(c *Config) { validCluster(c); c.PeerListen = "" }, "PeerListen"},
		{"a non-loopback peer listen address without TLS is rejected", func(c *Config) { validCluster(c); c.PeerListen = "0.0.0.0:7071" }, "PeerListen"},
		{"a peer listen address without a port is rejected", func(c *Config) { validCluster(c); c.PeerListen = "127.0.0.1" }, "PeerListen"},
		{"a peer TLS certificate without its key is rejected", func(c *Config) { validCluster(c); c.PeerTLSCert = "a.pem"; c.PeerTLSCA = "ca.pem" }, "PeerTLSKey"},
		{"a peer TLS CA alone is rejected", func(c *Config) { validCluster(c); c.PeerTLSCA = "ca.pem" }, "PeerTLSCert"},
		{"a node id with a slash is rejected", func(c *Config) { validCluster(c); c.NodeID = "a/b" }, "NodeID"},
		{"zero shards are rejected", func(c *Config) { validCluster(c); c.Shards = 0 }, "Shards"},
		{"too many shards are rejected", func(c *Config) { validCluster(c); c.Shards = MaxShards + 1 }, "Shards"},
		{"a zero replication factor is rejected", func(c *Config) { validCluster(c); c.Replication = 0 }, "Replication"},
		{"an advertised peer address without a port is rejected", func(c *Config) { validCluster(c); c.AdvertisePeer = "node1" }, "AdvertisePeer"},
		{"a peer source address with a port is rejected", func(c *Config) { validCluster(c); c.PeerSource = "127.0.0.1:7071" }, "PeerSource"},
		{"an unspecified peer source address is rejected", func(c *Config) { validCluster(c); c.PeerSource = "0.0.0.0" }, "PeerSource"},
		{"an advertised client address that is not a URL is rejected", func(c *Config) { validCluster(c); c.AdvertiseClient = "node1:7070" }, "AdvertiseClient"},
		{"a peer listen address on every interface needs an advertised peer address", func(c *Config) {
			validCluster(c)
			c.PeerTLSCert, c.PeerTLSKey, c.PeerTLSCA = "n.pem", "n.key", "ca.pem"
			c.PeerListen = "0.0.0.0:7071"
		}, "AdvertisePeer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate() = %v, want a *ConfigError", err)
			}
			if ce.Field != tt.field || ce.Rule == "" {
				t.Fatalf("got field %q rule %q, want field %q with a rule", ce.Field, ce.Rule, tt.field)
			}
			if flag := ce.Flag(); flag == "" || !strings.Contains(err.Error(), flag+" ") || strings.Contains(err.Error(), tt.field+" ") {
				t.Fatalf("message %q does not name the field %s by its flag (%q)", err, tt.field, flag)
			}
		})
	}
}

func TestValidateAcceptsBoundaryValues(t *testing.T) {
	c := DefaultConfig()
	c.InlineMaxBytes = MaxInlineMaxBytes
	c.MCPMaxPayloadBytes = 1
	c.Listen = "[::1]:0"
	c.PresentationRoot = "/{agent}"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.InlineMaxBytes = 0
	c.Listen = "[::1]:65535"
	c.AdminListen = "[::1]:65534" // the default, port + 1, does not exist
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTheAdminAddressDefaultsToTheNextPort(t *testing.T) {
	for _, tc := range []struct{ listen, admin, want string }{
		{"127.0.0.1:7070", "", "127.0.0.1:7071"},
		{"127.0.0.1:0", "", "127.0.0.1:0"},
		{"[::1]:9000", "", "[::1]:9001"},
		{"127.0.0.1:7070", "127.0.0.1:9999", "127.0.0.1:9999"},
	} {
		c := DefaultConfig()
		c.Listen, c.AdminListen = tc.listen, tc.admin
		if got := c.AdminAddress(); got != tc.want {
			t.Errorf("Listen %s, AdminListen %q: admin address %s, want %s", tc.listen, tc.admin, got, tc.want)
		}
	}
	c := DefaultConfig()
	c.Listen = "127.0.0.1:65535"
	if err := c.Validate(); err == nil {
		t.Error("Listen on port 65535 without AdminListen validated")
	}
}

func TestValidateReportsEveryBrokenRule(t *testing.T) {
	c := DefaultConfig()
	c.Listen = "nope"
	c.LogFormat = "xml"
	err := c.Validate()
	for _, field := range []string{"--listen", "--log-format"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not mention %s", err, field)
		}
	}
}

func TestLoadConfigErrorsNameTheSource(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string // written to a file passed with --config when non-empty
		args    []string
		env     map[string]string
		source  string // substring expected in ConfigError.Source
		field   string
		message string // substring expected in the error text
	}{
		{
			name:   "an unparsable environment value names the variable",
			env:    map[string]string{"CAIRN_INLINE_MAX_BYTES": "lots"},
			source: "CAIRN_INLINE_MAX_BYTES", field: "InlineMaxBytes", message: `"lots"`,
		},
		{
			name:   "an unparsable environment duration names the variable",
			env:    map[string]string{"CAIRN_SHUTDOWN_TIMEOUT": "10"},
			source: "CAIRN_SHUTDOWN_TIMEOUT", field: "ShutdownTimeout", message: "duration",
		},
		{
			name:   "an out-of-range environment value names the variable",
			env:    map[string]string{"CAIRN_LISTEN": "localhost"},
			source: "CAIRN_LISTEN", field: "Listen", message: "host:port",
		},
		{
			name:   "an unparsable environment value fails even when a flag overrides it",
			args:   []string{"--dedupe-max-per-root", "5"},
			env:    map[string]string{"CAIRN_DEDUPE_MAX_PER_ROOT": "many"},
			source: "CAIRN_DEDUPE_MAX_PER_ROOT", field: "DedupeMaxPerRoot",
		},
		{
			name:   "an out-of-range flag value names the flag",
			args:   []string{"--inline-max-bytes", "70000"},
			source: "--inline-max-bytes", field: "InlineMaxBytes", message: "65536",
		},
		{
			name:   "an out-of-range yaml value names the file, line and key",
			yaml:   "# comment\nlog_level: loud\n",
			source: "cairn.yaml:2 (log_level)", field: "LogLevel", message: "loud",
		},
		{
			name:   "an unparsable yaml value names the file, line and key",
			yaml:   "retention_window: 86400\n",
			source: "cairn.yaml:1 (retention_window)", field: "RetentionWindow", message: "duration",
		},
		{
			name:   "an unknown yaml key is an error naming the key",
			yaml:   "listen: 127.0.0.1:1\nlisten_addr: 127.0.0.1:2\n",
			source: "cairn.yaml:2", message: `unknown key "listen_addr"`,
		},
		{
			name:   "an unknown yaml key spelled as its flag suggests the key",
			yaml:   "blob: s3://cairn\ns3-endpoint: http://h:1\n",
			source: "cairn.yaml:2", message: `unknown key "s3-endpoint" (did you mean "s3_endpoint"?)`,
		},
		{
			name:   "an unknown yaml key that differs in case suggests the key",
			yaml:   "Log_Level: debug\n",
			source: "cairn.yaml:1", message: `unknown key "Log_Level" (did you mean "log_level"?)`,
		},
		{
			name:   "a repeated yaml key is an error naming the key",
			yaml:   "listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n",
			source: "cairn.yaml:2", message: `repeated key "listen"`,
		},
		{
			name:   "a yaml list where a value belongs is an error",
			yaml:   "listen: [a, b]\n",
			source: "cairn.yaml:1 (listen)", field: "Listen", message: "single value",
		},
		{
			name:   "a yaml file that is not a mapping is an error",
			yaml:   "- listen\n",
			source: "cairn.yaml:1", message: "mapping",
		},
		{
			name:   "a value set by yaml and broken keeps the yaml source through validation",
			yaml:   "presentation_root: /\n",
			source: "cairn.yaml:1 (presentation_root)", field: "PresentationRoot",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.yaml != "" {
				args = append([]string{"--config", writeYAML(t, tt.yaml)}, args...)
			}
			_, err := load(t, args, env(tt.env))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("LoadConfig() = %v, want a *ConfigError", err)
			}
			if !strings.Contains(ce.Source, tt.source) || ce.Field != tt.field {
				t.Fatalf("got source %q field %q, want source containing %q and field %q", ce.Source, ce.Field, tt.source, tt.field)
			}
			if !strings.Contains(err.Error(), tt.source) || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("message %q should contain %q and %q", err, tt.source, tt.message)
			}
		})
	}
}

func TestLoadConfigMissingFileWrapsNotExist(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := load(t, []string{"--config", missing}, env(nil))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "--config") {
		t.Fatalf("got %v, want a not-exist error naming --config", err)
	}
	_, err = load(t, nil, env(map[string]string{"CAIRN_CONFIG": missing}))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "CAIRN_CONFIG") {
		t.Fatalf("got %v, want a not-exist error naming CAIRN_CONFIG", err)
	}
}

func TestLoadConfigAcceptsEmptyAndNullYAML(t *testing.T) {
	for _, text := range []string{"", "# only a comment\n", "listen: ~\n"} {
		got, err := load(t, []string{"--config", writeYAML(t, text)}, env(nil))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if got != DefaultConfig() {
			t.Fatalf("%q: got %+v, want defaults", text, got)
		}
	}
}

func TestLoadConfigRejectsMalformedYAML(t *testing.T) {
	_, err := load(t, []string{"--config", writeYAML(t, "listen: [\n")}, env(nil))
	if err == nil || !strings.Contains(err.Error(), "cairn.yaml") {
		t.Fatalf("got %v, want an error naming the file", err)
	}
}

func TestLoadConfigRejectsASecondYAMLDocument(t *testing.T) {
	_, err := load(t, []string{"--config", writeYAML(t, "log_level: info\n---\nlog_level: debug\n")}, env(nil))
	if err == nil || !strings.Contains(err.Error(), "one YAML document") {
		t.Fatalf("got %v, want an error about the second document", err)
	}
}

func TestLoadConfigWithNilFlagSetUsesEnvironment(t *testing.T) {
	got, err := LoadConfig(nil, env(map[string]string{"CAIRN_LOG_FORMAT": "json"}))
	if err != nil || got.LogFormat != "json" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestBindFlagsRegistersEveryFlag(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	BindFlags(fs)
	for _, name := range []string{
		"data-dir", "listen", "inline-max-bytes", "mcp-max-payload-bytes", "retention-window",
		"dedupe-max-per-root", "presentation-root", "raft-snapshot-interval",
		"raft-snapshot-threshold", "log-level", "log-format", "shutdown-timeout", "blob",
		"s3-endpoint", "s3-region", "s3-create-bucket", "config",
	} {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flag --%s not registered", name)
			continue
		}
		if name != "config" && !strings.Contains(f.Usage, "CAIRN_") {
			t.Errorf("flag --%s usage %q does not name its environment variable", name, f.Usage)
		}
	}
}

func TestNewLoggerHonoursLevelAndFormat(t *testing.T) {
	c := DefaultConfig()
	c.LogFormat = "json"
	c.LogLevel = "warn"
	var buf bytes.Buffer
	log := NewLogger(c, &buf)
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines %q, want only the warning", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	if rec["msg"] != "shown" || rec["level"] != "WARN" {
		t.Fatalf("got %v", rec)
	}

	buf.Reset()
	c = DefaultConfig()
	NewLogger(c, &buf).Debug("hidden")
	NewLogger(c, &buf).Info("shown")
	if got := buf.String(); !strings.Contains(got, "msg=shown") || strings.Contains(got, "hidden") {
		t.Fatalf("text logger wrote %q", got)
	}
}

// validCluster turns c into a valid cluster configuration.
func validCluster(c *Config) {
	c.Cluster = true
	c.Blob = "s3://cairn"
	c.S3Endpoint = "http://127.0.0.1:9000"
	c.Etcd = "127.0.0.1:2379"
	c.PeerListen = "127.0.0.1:7071"
}

func TestValidClusterConfigs(t *testing.T) {
	c := DefaultConfig()
	validCluster(&c)
	if err := c.Validate(); err != nil {
		t.Fatalf("loopback cluster: %v", err)
	}
	c.PeerListen = "0.0.0.0:7071"
	c.PeerTLSCert, c.PeerTLSKey, c.PeerTLSCA = "n.pem", "n.key", "ca.pem"
	c.AdvertisePeer = "node1.internal:7071"
	c.AdvertiseClient = "http://node1.internal:7070"
	c.NodeID = "node-1"
	if err := c.Validate(); err != nil {
		t.Fatalf("TLS cluster on every interface: %v", err)
	}
	if got := c.EtcdEndpoints(); len(got) != 1 || got[0] != "127.0.0.1:2379" {
		t.Fatalf("EtcdEndpoints = %q", got)
	}
	c.Etcd = " a:1, ,b:2 "
	if got := c.EtcdEndpoints(); len(got) != 2 || got[0] != "a:1" || got[1] != "b:2" {
		t.Fatalf("EtcdEndpoints = %q", got)
	}
}

func TestConfigErrorsNameTheSettingByItsFlag(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  ConfigError
		want string
	}{
		{"a rule broken by a default or a Go value names the flag", ConfigError{Field: "Etcd", Rule: "must list at least one etcd endpoint in cluster mode"},
			"--etcd must list at least one etcd endpoint in cluster mode"},
		{"a flag source is not repeated", ConfigError{Source: "--shards", Field: "Shards", Rule: "must be between 1 and 256", Value: "0"},
			`--shards must be between 1 and 256 (got "0")`},
		{"an environment source is kept", ConfigError{Source: "CAIRN_LISTEN", Field: "Listen", Rule: "must be host:port", Value: "x"},
			`CAIRN_LISTEN: --listen must be host:port (got "x")`},
		{"a YAML source is kept", ConfigError{Source: "cairn.yaml:2 (log_level)", Field: "LogLevel", Rule: "must be one of debug, info, warn, error"},
			"cairn.yaml:2 (log_level): --log-level must be one of debug, info, warn, error"},
		{"a field without a flag keeps its name", ConfigError{Field: "Mystery", Rule: "must be set"}, "Mystery must be set"},
		{"an error about no field", ConfigError{Source: "cairn.yaml:3", Rule: `unknown key "x"`}, `cairn.yaml:3: unknown key "x"`},
		{"an error about nothing known", ConfigError{Rule: "broken"}, "config: broken"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
	// Every setting's error names its flag, and no rule names another field by its Go name.
	c := DefaultConfig()
	c.Cluster = true
	c.MaxUploadDuration = -1
	c.PeerTLSCert = "x.pem"
	c.MaxConnectionsPerClient = c.MaxConnections + 1
	err := c.Validate()
	for _, goName := range []string{"Etcd", "PeerListen", "GCGrace", "PeerTLSKey", "MaxConnections", "Blob "} {
		if strings.Contains(err.Error(), goName) {
			t.Errorf("the errors name the Go field %q:\n%v", goName, err)
		}
	}
}

func TestOpenWOPSettingsAreValidated(t *testing.T) {
	tests := []validationCase{
		{"the defaults pass", func(*Config) {}, ""},
		{"a zero maxFileBytes is refused", func(c *Config) { c.OpenWOP.MaxFileBytes = 0 }, "OpenWOPMaxFileBytes"},
		{"a huge maxFileBytes is refused", func(c *Config) { c.OpenWOP.MaxFileBytes = MaxOpenWOPMaxFileBytes + 1 }, "OpenWOPMaxFileBytes"},
		{"zero maxFiles is refused", func(c *Config) { c.OpenWOP.MaxFiles = 0 }, "OpenWOPMaxFiles"},
		{"zero maxVersions is refused", func(c *Config) { c.OpenWOP.MaxVersions = 0 }, "OpenWOPMaxVersions"},
		{"a run TTL of part of a day is refused", func(c *Config) { c.OpenWOP.RunTTL = 36 * time.Hour }, "OpenWOPRunTTL"},
		{"a run TTL under a day is refused", func(c *Config) { c.OpenWOP.RunTTL = time.Hour }, "OpenWOPRunTTL"},
		{"a bad tenant is refused", func(c *Config) { c.OpenWOP.Tenant = "../x" }, "OpenWOPTenant"},
		{"an empty workspace is refused", func(c *Config) { c.OpenWOP.Workspace = "" }, "OpenWOPWorkspace"},
		{"test seams on loopback pass", func(c *Config) { c.OpenWOP.TestSeams = true }, ""},
		{"test seams beyond loopback are refused", func(c *Config) {
			c.OpenWOP.TestSeams, c.Listen, c.InsecurePlaintext = true, "0.0.0.0:7070", true
		}, "OpenWOPTestSeams"},
	}
	checkValidation(t, tests)
}

// validationCase edits the defaults and names the field Validate must refuse ("": none).
type validationCase struct {
	name  string
	edit  func(*Config)
	field string
}

func checkValidation(t *testing.T, tests []validationCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			var ce *ConfigError
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.field != "" && (!errors.As(err, &ce) || ce.Field != tt.field):
				t.Fatalf("Validate = %v, want an error about %s", err, tt.field)
			}
		})
	}
}

func TestDocumentsSettingsAreValidated(t *testing.T) {
	checkValidation(t, []validationCase{
		{"the defaults pass", func(*Config) {}, ""},
		{"an owner without a workspace is refused", func(c *Config) { c.Documents.Owner = "tenant" }, "DocumentsOwner"},
		{"an owner with a bad tenant is refused", func(c *Config) { c.Documents.Owner = "../x/w" }, "DocumentsOwner"},
		{"a runner URL that is not http is refused", func(c *Config) { c.Documents.RunnerURL = "file:///etc/passwd" }, "DocumentsRunnerURL"},
		{"an http runner URL passes", func(c *Config) { c.Documents.RunnerURL = "https://runner.internal/propose" }, ""},
		{"a zero runner timeout is refused", func(c *Config) { c.Documents.RunnerTimeout = 0 }, "DocumentsRunnerTimeout"},
	})
}

// TestPrincipalCapsAreOnByDefaultBeyondLoopback (issue 25 finding 11: one read key's 80
// parallel listings took a node to 2.3 GB): by default a node whose client listener binds
// loopback caps no principal, and one that binds beyond it caps each principal's uploads
// and shares of the memory budget; an explicit value, 0 included, is kept either way.
func TestPrincipalCapsAreOnByDefaultBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		name, listen            string
		uploads, admissions     int
		wantUploads, wantAdmits int
	}{
		{"loopback, defaults", "127.0.0.1:7070", AutoPrincipalLimit, AutoPrincipalLimit, 0, 0},
		{"every interface, defaults", "0.0.0.0:7070", AutoPrincipalLimit, AutoPrincipalLimit, DefaultPrincipalMaxUploads, DefaultPrincipalMaxAdmissions},
		{"an interface, defaults", "10.0.0.5:7070", AutoPrincipalLimit, AutoPrincipalLimit, DefaultPrincipalMaxUploads, DefaultPrincipalMaxAdmissions},
		{"every interface, explicitly unlimited", ":7070", 0, 0, 0, 0},
		{"loopback, explicit caps", "127.0.0.1:7070", 3, 5, 3, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			if c.PrincipalMaxUploads != AutoPrincipalLimit || c.PrincipalMaxAdmissions != AutoPrincipalLimit {
				t.Fatalf("defaults %d, %d, want AutoPrincipalLimit", c.PrincipalMaxUploads, c.PrincipalMaxAdmissions)
			}
			c.Listen, c.PrincipalMaxUploads, c.PrincipalMaxAdmissions = tc.listen, tc.uploads, tc.admissions
			if got := c.EffectivePrincipalMaxUploads(); got != tc.wantUploads {
				t.Errorf("uploads cap %d, want %d", got, tc.wantUploads)
			}
			if got := c.EffectivePrincipalMaxAdmissions(); got != tc.wantAdmits {
				t.Errorf("admissions cap %d, want %d", got, tc.wantAdmits)
			}
		})
	}
}
