package bench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrUnknownScenario is wrapped by Config.Validate for a scenario name not in Scenarios.
var ErrUnknownScenario = errors.New("unknown scenario")

// ErrInvalidConfig is wrapped by every other Config.Validate error.
var ErrInvalidConfig = errors.New("invalid bench configuration")

// Config is one `cairn bench` run. Fields left zero take the defaults DefaultConfig
// documents; Validate checks the result.
type Config struct {
	// Server is the base URL of the Cairn to measure. Default "http://127.0.0.1:7070".
	Server string
	// Agent is the agent root the workbench lives under. Default "default".
	Agent string
	// Workbench is the workbench the scenario works in; created if missing. Default ""
	// means a fresh one per run, "bench-<unix time>-<random>", so runs never share files.
	Workbench string
	// Scenario is one of Scenarios. Required.
	Scenario string
	// Concurrency is the closed loop's number of concurrent clients. Default 8.
	Concurrency int
	// Rate is the open loop's arrival rate in operations per second; 0 (the default)
	// runs the closed loop.
	Rate float64
	// MaxInFlight bounds the open loop's operations in flight. Default 256.
	MaxInFlight int
	// Duration is the length of each phase. Default 10s.
	Duration time.Duration
	// SizeBytes is the body size in bytes: the file written or read, the record appended.
	// 0 (the default) means the scenario's own default: 1 KiB for small-*, stat, mixed,
	// list, snapshot, restore and mcp files, 128 B for append-log records, 1 MiB for
	// object-*.
	SizeBytes int64
	// Files is the number of files the read scenarios choose from (small-get, stat,
	// mixed: 256; object-get: 4; mcp: 64), of log files append-log spreads its records
	// over (4), of entries in the listed directory (list: 100), and of files in the
	// workbench snapshot and restore work on (100). 0 means the scenario's default; the put
	// scenarios write a new file per operation and ignore it.
	Files int
	// ReadRatio is the fraction of mixed's operations that are reads (GET); the rest
	// overwrite (PUT). Default 0.9; 0..1.
	ReadRatio float64
	// Baselines names the baselines (of Baselines) to run with the same load and payloads
	// after each Cairn phase, in this order; the report gives Cairn's ratio to each. Each
	// baseline measures only the scenarios BaselineScenarios lists for it. Default none.
	Baselines []string
	// BaselineDir is where the fsync baseline's temporary directory is made; it should be
	// on the disk the server keeps its data on. Default "" = os.TempDir().
	BaselineDir string
	// MinIO is the object store the minio baseline talks to (required with it, and with
	// the relay baseline for the bucket and credentials).
	MinIO MinIOConfig
	// S3Gateway, when its Endpoint is set, runs the scenario through the measured Cairn's
	// S3 gateway too (one of GatewayScenarios; not with a sweep): a phase right after the
	// Cairn (REST) phase, with the same load and bodies of the same size, whose report
	// gives its ratios to the REST phase and to each baseline.
	S3Gateway S3GatewayConfig
	// RelayEndpoint is the URL of a relay to MinIO.Endpoint's store (`cairn bench relay`)
	// the relay baseline sends its requests to (required with it).
	RelayEndpoint string
	// EtcdEndpoints are the client addresses ("host:port") of the etcd cluster the etcd
	// baseline writes to (required with it).
	EtcdEndpoints []string
	// Backend and Nodes describe the server measured, for the report's environment: the
	// server does not say which blob backend it runs on or how many nodes it has. Default
	// "" and 0: not stated.
	Backend string
	Nodes   int
	// SweepRates, when not empty, runs the open loop once per rate (operations per
	// second, each for Duration) instead of a single phase; Rate must then be 0.
	SweepRates []float64
	// DrainTimeout is how long the open loop keeps sending operations that fell behind
	// schedule after Duration ends (see Load). Default 10s.
	DrainTimeout time.Duration
	// OpTimeout bounds each operation. Default 60s (the histogram's range).
	OpTimeout time.Duration
	// LeanHTTP sends the stat scenario's HEADs, the list scenario's GETs of every page,
	// or the mcp scenario's tool calls, over a lean HTTP/1.1 client
	// (github.com/valyala/fasthttp: no goroutines per connection, no allocation per
	// request) instead of api/client over net/http or the go-sdk's MCP client, which
	// spend about twice (stat) or more (MCP) the CPU per request. On a machine the server
	// shares with its load generator, the cores the generator does not spend measure the
	// server. Each answer is still checked: 200 and the file's size (stat); 200, JSON,
	// each page's entries and next_cursor, and the directory's number of entries over all
	// pages (list); the JSON-RPC response to the call, with status "success" (MCP). Only
	// with the stat, list and mcp scenarios and an http:// server.
	LeanHTTP bool
}

// DefaultConfig returns the defaults, with no scenario.
func DefaultConfig() Config {
	return Config{
		Server:       "http://127.0.0.1:7070",
		Agent:        "default",
		Concurrency:  8,
		MaxInFlight:  256,
		Duration:     10 * time.Second,
		ReadRatio:    0.9,
		DrainTimeout: 10 * time.Second,
		OpTimeout:    LatencyMax,
	}
}

// withScenarioDefaults fills SizeBytes and Files from the scenario's defaults.
func (c Config) withScenarioDefaults() Config {
	d := scenarioDefaults[c.Scenario]
	if c.SizeBytes == 0 {
		c.SizeBytes = d.sizeBytes
	}
	if c.Files == 0 {
		c.Files = d.files
	}
	return c
}

// Validate reports the first field that breaks its rule, wrapping ErrUnknownScenario or
// ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case !slices.Contains(Scenarios, c.Scenario):
		return fmt.Errorf("scenario %q: %w (one of %s)", c.Scenario, ErrUnknownScenario, strings.Join(Scenarios, ", "))
	case !strings.HasPrefix(c.Server, "http://") && !strings.HasPrefix(c.Server, "https://"):
		return bad("server %q: must be an http:// or https:// URL", c.Server)
	case c.Agent == "":
		return bad("agent: must not be empty")
	case c.Concurrency < 1:
		return bad("concurrency %d: must be ≥ 1", c.Concurrency)
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return bad("rate %v: must be ≥ 0 operations/s (0 = closed loop)", c.Rate)
	case c.Rate > 0 && len(c.SweepRates) > 0:
		return bad("rate and sweep: give one or the other (a sweep sets the rate of each phase)")
	case c.MaxInFlight < 1:
		return bad("max in flight %d: must be ≥ 1", c.MaxInFlight)
	case c.Duration <= 0:
		return bad("duration %v: must be > 0", c.Duration)
	case c.SizeBytes < 0:
		return bad("size %d bytes: must be ≥ 0 (0 = the scenario's default)", c.SizeBytes)
	case c.Files < 0:
		return bad("files %d: must be ≥ 0 (0 = the scenario's default)", c.Files)
	case c.ReadRatio < 0 || c.ReadRatio > 1 || math.IsNaN(c.ReadRatio):
		return bad("read ratio %v: must be within 0..1", c.ReadRatio)
	case c.Nodes < 0:
		return bad("nodes %d: must be ≥ 0 (0 = not stated)", c.Nodes)
	case c.DrainTimeout < 0:
		return bad("drain timeout %v: must be ≥ 0", c.DrainTimeout)
	case c.OpTimeout <= 0:
		return bad("op timeout %v: must be > 0", c.OpTimeout)
	case c.LeanHTTP && c.Scenario != ScenarioStat && c.Scenario != ScenarioList && c.Scenario != ScenarioMCP:
		return bad("lean HTTP: only the %s, %s and %s scenarios have a lean client (not %s)", ScenarioStat, ScenarioList, ScenarioMCP, c.Scenario)
	case c.LeanHTTP && !strings.HasPrefix(c.Server, "http://"):
		return bad("lean HTTP: server %q must be an http:// URL", c.Server)
	}
	for i, b := range c.Baselines {
		switch {
		case !slices.Contains(Baselines, b):
			return bad("baseline %q: must be one of %s", b, strings.Join(Baselines, ", "))
		case slices.Contains(c.Baselines[:i], b):
			return bad("baseline %q: named twice", b)
		case !slices.Contains(BaselineScenarios[b], c.Scenario):
			return bad("baseline %q does not measure scenario %s (it measures %s)", b, c.Scenario, strings.Join(BaselineScenarios[b], ", "))
		}
		switch b {
		case BaselineMinIO:
			if err := c.MinIO.validate(); err != nil {
				return bad("minio baseline: %v", err)
			}
		case BaselineRelay:
			relayed := c.MinIO
			relayed.Endpoint = c.RelayEndpoint
			if err := relayed.validate(); err != nil {
				return bad("relay baseline: %v (the relay's URL is --baseline-relay-endpoint; start one with cairn bench relay)", err)
			}
		case BaselineEtcd:
			if len(c.EtcdEndpoints) == 0 {
				return bad("etcd baseline: give the etcd cluster's client endpoints")
			}
			if size := c.withScenarioDefaults().SizeBytes; size > etcdMaxValueBytes {
				return bad("etcd baseline: a %d-byte value exceeds etcd's request limit (at most %d bytes)", size, etcdMaxValueBytes)
			}
		}
	}
	if c.S3Gateway.Endpoint != "" {
		switch {
		case !slices.Contains(GatewayScenarios, c.Scenario):
			return bad("s3 gateway does not measure scenario %s (it measures %s)", c.Scenario, strings.Join(GatewayScenarios, ", "))
		case len(c.SweepRates) > 0:
			return bad("s3 gateway: runs one phase, not a sweep")
		}
		if err := c.S3Gateway.validate(); err != nil {
			return bad("s3 gateway: %v", err)
		}
	}
	for _, r := range c.SweepRates {
		if !(r > 0) || math.IsInf(r, 0) {
			return bad("sweep rate %v: every rate must be > 0 operations/s", r)
		}
	}
	return nil
}

// ParseSize parses a byte size: a whole number with an optional unit B, KiB, MiB, GiB
// (powers of 1024) or KB, MB, GB (powers of 1000), case-insensitive, optionally
// separated by a space ("1024", "1KiB", "64 MiB").
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || i == 0 {
		return 0, fmt.Errorf("size %q: want a whole number of bytes with an optional unit (KiB, MiB, GiB, KB, MB, GB)", s)
	}
	units := map[string]int64{
		"": 1, "b": 1,
		"k": 1 << 10, "kib": 1 << 10, "kb": 1000,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1000 * 1000,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1000 * 1000 * 1000,
	}
	mult, ok := units[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (KiB, MiB, GiB, KB, MB, GB)", s, strings.TrimSpace(t[i:]))
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n * mult, nil
}
