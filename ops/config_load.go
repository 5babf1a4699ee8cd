package ops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// setting describes one Config field in all three layers. Its flag is the YAML key with
// dashes and its environment variable CAIRN_ + the upper-case key.
type setting struct {
	field    string // Config field name, as ConfigError.Field reports it
	key      string // YAML key
	usage    string
	register func(fs *pflag.FlagSet, flag, usage string, defaults Config)
	// parse sets the field from its text form; the error text is the broken rule.
	parse func(c *Config, raw string) error
}

func (s setting) flag() string { return strings.ReplaceAll(s.key, "_", "-") }
func (s setting) env() string  { return "CAIRN_" + strings.ToUpper(s.key) }

var settings = append([]setting{
	stringSetting("DataDir", "data_dir", "data directory (Raft logs, snapshots, local blobs)",
		func(c *Config) *string { return &c.DataDir }),
	stringSetting("Listen", "listen", "client listen address, host:port (beyond loopback: needs --tls-cert/--tls-key or --insecure-plaintext)",
		func(c *Config) *string { return &c.Listen }),
	int64Setting("InlineMaxBytes", "inline_max_bytes", "largest body or segment stored inline in metadata, bytes (0..65536; 0 = never inline)",
		func(c *Config) *int64 { return &c.InlineMaxBytes }),
	int64Setting("MCPMaxPayloadBytes", "mcp_max_payload_bytes", "largest MCP write payload, bytes",
		func(c *Config) *int64 { return &c.MCPMaxPayloadBytes }),
	durationSetting("RetentionWindow", "retention_window", "how long dedupe records and tombstones are kept, command time",
		func(c *Config) *time.Duration { return &c.RetentionWindow }),
	intSetting("HistoryVersions", "history_versions", "newest versions of each path kept readable by default (1..10000; 1 = none superseded)",
		func(c *Config) *int { return &c.HistoryVersions }),
	durationSetting("HistoryAge", "history_age", "keep every version superseded less than this long ago by default, command time (0 = none by age)",
		func(c *Config) *time.Duration { return &c.HistoryAge }),
	intSetting("HistoryMaxVersions", "history_max_versions", "most versions history retention keeps per path by default (history_versions..10000)",
		func(c *Config) *int { return &c.HistoryMaxVersions }),
	intSetting("DedupeMaxPerRoot", "dedupe_max_per_root", "most remembered request ids per agent root",
		func(c *Config) *int { return &c.DedupeMaxPerRoot }),
	durationSetting("FeedRetention", "feed_retention", "how long the change feed keeps an event, command time",
		func(c *Config) *time.Duration { return &c.FeedRetention }),
	intSetting("FeedMaxPerRoot", "feed_max_per_root", "most change-feed events kept per agent root (-1: no feed)",
		func(c *Config) *int { return &c.FeedMaxPerRoot }),
	durationSetting("SnapshotGrace", "snapshot_grace", "how long an expired snapshot can be renewed before it is reaped",
		func(c *Config) *time.Duration { return &c.SnapshotGrace }),
	intSetting("RestoreBatch", "restore_batch", "files one bounded restore command stages (1..4096)",
		func(c *Config) *int { return &c.RestoreBatch }),
	durationSetting("GCGrace", "gc_grace", "how long a blob stays unreferenced (or an orphan stored) before garbage collection deletes it",
		func(c *Config) *time.Duration { return &c.GCGrace }),
	durationSetting("GCInterval", "gc_interval", "how often the leader runs a garbage-collection sweep",
		func(c *Config) *time.Duration { return &c.GCInterval }),
	intSetting("GCMaxBatch", "gc_max_batch", "most blobs one garbage-collection sweep collects per agent root (a sweep that leaves more is followed at once by another)",
		func(c *Config) *int { return &c.GCMaxBatch }),
	intSetting("MaxSnapshotsPerWorkbench", "max_snapshots_per_workbench", "most snapshots of one workbench that hold history (alive or renewable)",
		func(c *Config) *int { return &c.MaxSnapshotsPerWorkbench }),
	int64Setting("CacheMaxBytes", "cache_max_bytes", "bound of the local segment cache, bytes (0 = no cache)",
		func(c *Config) *int64 { return &c.CacheMaxBytes }),
	stringSetting("CacheDir", "cache_dir", "directory of the local segment cache (default: <data-dir>/segment-cache)",
		func(c *Config) *string { return &c.CacheDir }),
	durationSetting("MaxUploadDuration", "max_upload_duration", "longest one body may take to upload; must be less than --gc-grace (0 = half of it)",
		func(c *Config) *time.Duration { return &c.MaxUploadDuration }),
	int64Setting("QueryBudgetBytes", "query_budget_bytes", "memory the requests whose answer grows with their input (queries, grep, diffs, file, history and proposal listings, large MCP messages, backups) running at once may hold, bytes (at least 16 MiB)",
		func(c *Config) *int64 { return &c.QueryBudgetBytes }),
	int64Setting("HeapFloorBytes", "heap_floor_bytes", "Go heap below which the node does not collect garbage: a small live heap's collector goal is raised to about this size, to spend memory instead of CPU (0 = off)",
		func(c *Config) *int64 { return &c.HeapFloorBytes }),
	durationSetting("QueryQueueTimeout", "query_queue_timeout", "how long a query waits for its share of the query budget before ResourceExhausted",
		func(c *Config) *time.Duration { return &c.QueryQueueTimeout }),
	float64Setting("PrincipalRequestsPerSecond", "principal_requests_per_second", "requests per second one principal may make to this node, sustained (0 = no limit)",
		func(c *Config) *float64 { return &c.PrincipalRequestsPerSecond }),
	intSetting("PrincipalRequestBurst", "principal_request_burst", "requests one principal may make at once (0 = ceil of --principal-requests-per-second)",
		func(c *Config) *int { return &c.PrincipalRequestBurst }),
	intSetting("PrincipalMaxUploads", "principal_max_uploads", "file body writes (PUT, append) one principal may have in flight on this node (0 = no limit, -1 = 2 beyond loopback, none on loopback)",
		func(c *Config) *int { return &c.PrincipalMaxUploads }),
	intSetting("PrincipalMaxAdmissions", "principal_max_admissions", "requests under the memory budget (queries, diffs, listings, large MCP messages) one principal may have in flight on this node (0 = no limit, -1 = 8 beyond loopback, none on loopback)",
		func(c *Config) *int { return &c.PrincipalMaxAdmissions }),
	stringSetting("PresentationRoot", "presentation_root", `path prefix shown to agents; must contain "{agent}"`,
		func(c *Config) *string { return &c.PresentationRoot }),
	durationSetting("RaftSnapshotInterval", "raft_snapshot_interval", "how often shards check whether to snapshot",
		func(c *Config) *time.Duration { return &c.RaftSnapshotInterval }),
	uint64Setting("RaftSnapshotThreshold", "raft_snapshot_threshold", "log entries since the last snapshot that trigger a new one",
		func(c *Config) *uint64 { return &c.RaftSnapshotThreshold }),
	stringSetting("LogLevel", "log_level", "minimum log level: debug, info, warn, error",
		func(c *Config) *string { return &c.LogLevel }),
	stringSetting("LogFormat", "log_format", "log format: text or json",
		func(c *Config) *string { return &c.LogFormat }),
	boolSetting("AccessLog", "access_log", "log one line per HTTP request (method, route, status, bytes, duration, remote, request id; never bodies, query values or credentials)",
		func(c *Config) *bool { return &c.AccessLog }),
	durationSetting("ShutdownTimeout", "shutdown_timeout", "graceful shutdown deadline",
		func(c *Config) *time.Duration { return &c.ShutdownTimeout }),
	stringSetting("Blob", "blob", "blob store: dir (DATA_DIR/blobs), dir://PATH, or s3://BUCKET[/PREFIX] (credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)",
		func(c *Config) *string { return &c.Blob }),
	stringSetting("S3Endpoint", "s3_endpoint", "object store URL for an s3:// blob store: http://host:port (no TLS) or https://host[:port]",
		func(c *Config) *string { return &c.S3Endpoint }),
	stringSetting("S3Region", "s3_region", "region S3 requests are signed for",
		func(c *Config) *string { return &c.S3Region }),
	boolSetting("S3CreateBucket", "s3_create_bucket", "create the s3:// bucket at start when missing (false: a missing bucket fails the start)",
		func(c *Config) *bool { return &c.S3CreateBucket }),
	boolSetting("S3DirectReads", "s3_direct_reads", "answer GET …?redirect of a one-segment uncompressed file with a 307 to a presigned object-store URL (clients must reach --s3-endpoint)",
		func(c *Config) *bool { return &c.S3DirectReads }),
	boolSetting("Cluster", "cluster", "run as a node of a replicated cluster (needs --blob s3://…, --etcd, --peer-listen)",
		func(c *Config) *bool { return &c.Cluster }),
	stringSetting("NodeID", "node_id", "cluster node id (default: the data directory's UUID)",
		func(c *Config) *string { return &c.NodeID }),
	stringSetting("PeerListen", "peer_listen", "peer (Raft and forwarding) listen address, host:port; non-loopback only with peer TLS",
		func(c *Config) *string { return &c.PeerListen }),
	stringSetting("AdvertiseClient", "advertise_client", "client URL advertised to other nodes (default: http(s)://<listen address>)",
		func(c *Config) *string { return &c.AdvertiseClient }),
	stringSetting("AdvertisePeer", "advertise_peer", "peer address advertised to other nodes, host:port (default: the peer listen address)",
		func(c *Config) *string { return &c.AdvertisePeer }),
	stringSetting("PeerSource", "peer_source", "IP address outbound peer connections originate from (default: chosen by route)",
		func(c *Config) *string { return &c.PeerSource }),
	stringSetting("Etcd", "etcd", "comma-separated etcd endpoints of the control plane",
		func(c *Config) *string { return &c.Etcd }),
	intSetting("Shards", "shards", "number of shards, used only when the cluster is first created (1..256)",
		func(c *Config) *int { return &c.Shards }),
	intSetting("Replication", "replication", "replicas per shard (1..9)",
		func(c *Config) *int { return &c.Replication }),
	stringSetting("PeerTLSCert", "peer_tls_cert", "PEM certificate of this node for peer mutual TLS",
		func(c *Config) *string { return &c.PeerTLSCert }),
	stringSetting("PeerTLSKey", "peer_tls_key", "PEM private key of this node for peer mutual TLS",
		func(c *Config) *string { return &c.PeerTLSKey }),
	stringSetting("PeerTLSCA", "peer_tls_ca", "PEM CA bundle that signs every node's peer certificate",
		func(c *Config) *string { return &c.PeerTLSCA }),
}, append(append(append(append(servingSettings, listenerSettings...), authSettings...), redactSettings...), append(append(openwopSettings, documentsSettings...), s3GatewaySettings...)...)...)

// settingType is how Config fields of one Go type are read from text and bound to a flag.
type settingType[T any] struct {
	// bind registers the flag: one of pflag's typed methods, such as (*pflag.FlagSet).Int.
	bind func(fs *pflag.FlagSet, name string, value T, usage string) *T
	// parse reads the text form; its error is replaced by rule.
	parse func(raw string) (T, error)
	// rule is the rule broken by text that does not parse.
	rule string
}

var (
	stringType = settingType[string]{(*pflag.FlagSet).String,
		func(raw string) (string, error) { return raw, nil }, ""}
	intType = settingType[int]{(*pflag.FlagSet).Int,
		func(raw string) (int, error) { return strconv.Atoi(strings.TrimSpace(raw)) }, "must be an integer"}
	int64Type = settingType[int64]{(*pflag.FlagSet).Int64,
		func(raw string) (int64, error) { return strconv.ParseInt(strings.TrimSpace(raw), 10, 64) }, "must be an integer"}
	uint64Type = settingType[uint64]{(*pflag.FlagSet).Uint64,
		func(raw string) (uint64, error) { return strconv.ParseUint(strings.TrimSpace(raw), 10, 64) }, "must be a non-negative integer"}
	float64Type = settingType[float64]{(*pflag.FlagSet).Float64,
		func(raw string) (float64, error) { return strconv.ParseFloat(strings.TrimSpace(raw), 64) }, "must be a number"}
	boolType = settingType[bool]{(*pflag.FlagSet).Bool,
		func(raw string) (bool, error) { return strconv.ParseBool(strings.TrimSpace(raw)) }, "must be true or false"}
	durationType = settingType[time.Duration]{(*pflag.FlagSet).Duration,
		func(raw string) (time.Duration, error) { return time.ParseDuration(strings.TrimSpace(raw)) },
		`must be a duration such as "90s", "2m" or "24h"`}
)

// typedSetting is the setting of the Config field of type T that p points at.
func typedSetting[T any](typ settingType[T], field, key, usage string, p func(*Config) *T) setting {
	return setting{field: field, key: key, usage: usage,
		register: func(fs *pflag.FlagSet, flag, usage string, d Config) { typ.bind(fs, flag, *p(&d), usage) },
		parse: func(c *Config, raw string) error {
			v, err := typ.parse(raw)
			if err != nil {
				return errors.New(typ.rule)
			}
			*p(c) = v
			return nil
		},
	}
}

func stringSetting(field, key, usage string, p func(*Config) *string) setting {
	return typedSetting(stringType, field, key, usage, p)
}

func intSetting(field, key, usage string, p func(*Config) *int) setting {
	return typedSetting(intType, field, key, usage, p)
}

func int64Setting(field, key, usage string, p func(*Config) *int64) setting {
	return typedSetting(int64Type, field, key, usage, p)
}

func uint64Setting(field, key, usage string, p func(*Config) *uint64) setting {
	return typedSetting(uint64Type, field, key, usage, p)
}

func float64Setting(field, key, usage string, p func(*Config) *float64) setting {
	return typedSetting(float64Type, field, key, usage, p)
}

func boolSetting(field, key, usage string, p func(*Config) *bool) setting {
	return typedSetting(boolType, field, key, usage, p)
}

func durationSetting(field, key, usage string, p func(*Config) *time.Duration) setting {
	return typedSetting(durationType, field, key, usage, p)
}

// BindFlags registers on fs one flag per Config field (defaults from DefaultConfig, the
// environment variable named in the help text) plus --config, the YAML file path. Call
// it once per flag set: pflag panics on a duplicate flag name.
func BindFlags(fs *pflag.FlagSet) {
	d := DefaultConfig()
	for _, s := range settings {
		s.register(fs, s.flag(), fmt.Sprintf("%s (env %s)", s.usage, s.env()), d)
	}
	fs.String(ConfigFlag, "", fmt.Sprintf("YAML configuration file (env %s)", ConfigEnv))
}

// LoadConfig fills a Config with precedence flags > environment (CAIRN_*) > YAML file >
// defaults, then validates it.
//
// fs must have been prepared by BindFlags and parsed; only flags the user actually set
// (fs.Changed) override, and a nil fs means no flags. getenv looks up environment
// variables (nil means os.Getenv); an empty variable counts as unset. The YAML file comes
// from --config, else CAIRN_CONFIG; none means no file. Its top level must be a mapping of
// the documented keys (unknown or repeated keys are errors naming the key; a null value
// counts as unset).
//
// Errors: a missing or unreadable file (wrapping the os error), malformed YAML, or one
// *ConfigError per bad value whose Source names the flag, variable or file line that
// supplied it (e.g. "CAIRN_LISTEN: --listen must be host:port (got "x")"). Text that does
// not parse fails even when a higher layer overrides it; range rules apply to the final
// value.
func LoadConfig(fs *pflag.FlagSet, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := DefaultConfig()
	source := make(map[string]string, len(settings)) // field → where its value came from

	path, pathSource := "", ""
	if v, ok := changedFlag(fs, ConfigFlag); ok {
		path, pathSource = v, "--"+ConfigFlag
	} else if v := getenv(ConfigEnv); v != "" {
		path, pathSource = v, ConfigEnv
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("%s: %w", pathSource, err)
		}
		if err := applyYAML(&cfg, source, path, data); err != nil {
			return Config{}, err
		}
	}

	var errs []*ConfigError
	for _, s := range settings {
		raw := getenv(s.env())
		if raw == "" {
			continue
		}
		if err := s.parse(&cfg, raw); err != nil {
			errs = append(errs, &ConfigError{Source: s.env(), Field: s.field, Rule: err.Error(), Value: raw})
			continue
		}
		source[s.field] = s.env()
	}
	for _, s := range settings {
		raw, ok := changedFlag(fs, s.flag())
		if !ok {
			continue
		}
		if err := s.parse(&cfg, raw); err != nil {
			errs = append(errs, &ConfigError{Source: "--" + s.flag(), Field: s.field, Rule: err.Error(), Value: raw})
			continue
		}
		source[s.field] = "--" + s.flag()
	}
	if len(errs) > 0 {
		return Config{}, joinConfigErrors(errs)
	}

	errs = cfg.validate()
	for _, e := range errs {
		e.Source = source[e.Field]
	}
	if len(errs) > 0 {
		return Config{}, joinConfigErrors(errs)
	}
	return cfg, nil
}

// changedFlag returns the text of flag name if the user set it.
func changedFlag(fs *pflag.FlagSet, name string) (string, bool) {
	if fs == nil {
		return "", false
	}
	f := fs.Lookup(name)
	if f == nil || !f.Changed {
		return "", false
	}
	return f.Value.String(), true
}

// yamlKeyOf returns the spelling of a configuration key that key may have meant: lower
// case, with '_' for '-' (the flag's spelling of the key, or a capitalised one).
func yamlKeyOf(key string) string {
	return strings.ReplaceAll(strings.ToLower(key), "-", "_")
}

// applyYAML applies the YAML document data (read from path) to cfg, recording the source
// of every field it sets.
func applyYAML(cfg *Config, source map[string]string, path string, data []byte) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file: nothing set
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return &ConfigError{Source: path, Rule: "must hold one YAML document (a second one would be ignored)"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return &ConfigError{Source: path, Rule: "must hold one YAML document"}
	}
	top := doc.Content[0]
	if top.Kind == yaml.ScalarNode && top.ShortTag() == "!!null" {
		return nil // a document holding only comments or "~"
	}
	if top.Kind != yaml.MappingNode {
		return &ConfigError{Source: fmt.Sprintf("%s:%d", path, top.Line), Rule: "top level must be a mapping of configuration keys"}
	}
	byKey := make(map[string]setting, len(settings))
	for _, s := range settings {
		byKey[s.key] = s
	}
	seen := make(map[string]bool)
	var errs []*ConfigError
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		where := fmt.Sprintf("%s:%d", path, k.Line)
		s, ok := byKey[k.Value]
		if k.Kind != yaml.ScalarNode || !ok {
			rule := fmt.Sprintf("unknown key %q", k.Value)
			if near, ok := byKey[yamlKeyOf(k.Value)]; ok && k.Kind == yaml.ScalarNode {
				rule += fmt.Sprintf(" (did you mean %q?)", near.key)
			}
			errs = append(errs, &ConfigError{Source: where, Rule: rule})
			continue
		}
		where = fmt.Sprintf("%s (%s)", where, s.key)
		if seen[s.key] {
			errs = append(errs, &ConfigError{Source: where, Rule: fmt.Sprintf("repeated key %q", s.key)})
			continue
		}
		seen[s.key] = true
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			continue
		}
		if v.Kind != yaml.ScalarNode {
			errs = append(errs, &ConfigError{Source: where, Field: s.field, Rule: "must be a single value, not a list or mapping"})
			continue
		}
		if err := s.parse(cfg, v.Value); err != nil {
			errs = append(errs, &ConfigError{Source: where, Field: s.field, Rule: err.Error(), Value: v.Value})
			continue
		}
		source[s.field] = where
	}
	return joinConfigErrors(errs)
}

func joinConfigErrors(errs []*ConfigError) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}
