package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"time"

	"github.com/cairnstore/cairn/api/client"
)

// RunOptions say where Run shows its progress and how it reaches the server.
type RunOptions struct {
	// Progress receives setup messages and the running tally of each phase; nil shows
	// nothing.
	Progress io.Writer
	// Terminal says Progress is a terminal: the tally is one line rewritten in place
	// rather than a line every 5 s.
	Terminal bool
	// HTTPClient, if set, carries every request but the lean lanes' (Config.LeanHTTP),
	// which have their own HTTP/1.1 client; nil means a client Run builds with one
	// idle keep-alive connection per worker (net/http's default keeps 2, which would make
	// a concurrent run measure connection setup).
	HTTPClient *http.Client
}

// gatewayNonce sets the S3 gateway phase's nonce apart from the REST phase's and the
// baselines' (which flip bits 56 and up by their index).
const gatewayNonce = 0x5a3e_11d0_c0ff_ee00

// dialTimeout bounds connecting to the server.
const dialTimeout = 10 * time.Second

// Run measures the Cairn at cfg.Server with cfg.Scenario: it prepares the workbench
// (the files the read scenarios read, the snapshot restore restores, the MCP sessions) and
// the baselines, then runs one phase with cfg's load, or one open-loop phase per rate of
// cfg.SweepRates, each followed by every baseline of cfg.Baselines under the same load. It
// talks to Cairn only over HTTP.
//
// Errors: a Config.Validate error; a setup failure (server or baseline unreachable,
// workbench refused); the context's error when cancelled, returned together with the
// report of the phases that ran (the interrupted one marked Aborted). Operation failures
// are not errors of Run: the report counts them by class.
func Run(ctx context.Context, cfg Config, opts RunOptions) (rep *Report, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withScenarioDefaults()
	if cfg.Workbench == "" {
		cfg.Workbench = fmt.Sprintf("bench-%d-%04x", time.Now().Unix(), rand.Uint32()&0xffff)
	}
	load := Load{
		Concurrency:  cfg.Concurrency,
		Rate:         cfg.Rate,
		MaxInFlight:  cfg.MaxInFlight,
		Duration:     cfg.Duration,
		DrainTimeout: cfg.DrainTimeout,
		OpTimeout:    cfg.OpTimeout,
	}
	hc := opts.HTTPClient
	if hc == nil {
		tr := newTransport(workers(cfg))
		defer tr.CloseIdleConnections()
		hc = &http.Client{Transport: tr}
	}
	sc := &scenario{
		name:      cfg.Scenario,
		c:         client.New(cfg.Server, hc),
		agent:     cfg.Agent,
		wb:        cfg.Workbench,
		sizeBytes: cfg.SizeBytes,
		files:     cfg.Files,
		readRatio: cfg.ReadRatio,
		workers:   workers(cfg),
		nonce:     rand.Uint64(),
	}
	if cfg.LeanHTTP && cfg.Scenario == ScenarioStat {
		if sc.lean, err = newLeanStat(cfg, sc.workers); err != nil {
			return nil, err
		}
		defer sc.lean.close()
	}
	if cfg.LeanHTTP && cfg.Scenario == ScenarioList {
		if sc.leanList, err = newLeanList(cfg, sc.workers, listPageLimit); err != nil {
			return nil, err
		}
		defer sc.leanList.close()
	}
	if cfg.Scenario == ScenarioMCP {
		sessions := newMCPSessions(cfg.Server, cfg.Agent, hc)
		sc.mcp = sessions
		if cfg.LeanHTTP {
			if sc.mcp, err = newLeanMCP(cfg, sc.workers, sessions); err != nil {
				return nil, err
			}
		}
		defer func() {
			if cerr := sc.mcp.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("close MCP sessions: %w", cerr)
			}
		}()
	}
	say(opts.Progress, "cairn bench: %s against %s, workbench %s/%s: setting up", cfg.Scenario, cfg.Server, cfg.Agent, cfg.Workbench)
	if err := sc.setup(ctx); err != nil {
		return nil, err
	}
	baselines := make([]baseline, len(cfg.Baselines))
	defer func() {
		for i, b := range baselines {
			if b == nil {
				continue
			}
			if cerr := b.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("baseline %s: %w", cfg.Baselines[i], cerr)
			}
		}
	}()
	for i, name := range cfg.Baselines {
		say(opts.Progress, "cairn bench: baseline %s: setting up", name)
		b, err := openBaseline(ctx, name, cfg, sc.nonce^uint64(i+1)<<56)
		if err != nil {
			return nil, err
		}
		baselines[i] = b
	}

	var gateway *objectPhases
	if cfg.S3Gateway.Endpoint != "" {
		say(opts.Progress, "cairn bench: s3 gateway %s: setting up", cfg.S3Gateway.Endpoint)
		if gateway, err = openS3Gateway(ctx, cfg, sc.nonce^gatewayNonce); err != nil {
			return nil, err
		}
		defer func() {
			if cerr := gateway.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
	}

	rep = &Report{
		Schema:      ReportSchema,
		Environment: Fingerprint(ctx, cfg.Server),
		Params:      paramsOf(cfg, load),
		StartedAt:   time.Now().UTC(),
	}
	rep.Environment.Backend, rep.Environment.Nodes = cfg.Backend, cfg.Nodes
	phase := func(name string, op Op, l Load) (*Phase, error) {
		live := &Live{}
		label := name + " " + loadLabel(l)
		stop := startProgress(opts.Progress, opts.Terminal, label, l.Duration, live)
		ph, err := RunLoad(ctx, op, l, SystemClock{}, live)
		stop()
		if ph != nil {
			ph.Name = name
		}
		return ph, err
	}
	// runPhases runs Cairn's phase i with l, then the S3 gateway's (into s3), then each
	// baseline's; it appends them to cairn and base.
	runPhases := func(i int, l Load, cairn, base *[]*Phase, s3 **Phase) error {
		op, err := sc.op(i)
		if err != nil {
			return err
		}
		cph, err := phase("cairn "+cfg.Scenario+rateSuffix(cfg, l), op, l)
		if cph != nil {
			*cairn = append(*cairn, cph)
		}
		if err != nil {
			return err
		}
		var gph *Phase
		if gateway != nil {
			op, cleanup, err := gateway.phase(ctx, i)
			if err != nil {
				return err
			}
			gph, err = phase("cairn s3 "+cfg.Scenario, op, l)
			if gph != nil {
				gph.OverCairn = Compare(gph, cph)
				*s3 = gph
			}
			if cerr := cleanup(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		for j, b := range baselines {
			op, cleanup, err := b.phase(ctx, i)
			if err != nil {
				return err
			}
			ph, err := phase("baseline "+cfg.Baselines[j]+rateSuffix(cfg, l), op, l)
			if ph != nil {
				ph.Baseline = cfg.Baselines[j]
				ph.Comparison = Compare(cph, ph)
				*base = append(*base, ph)
				if gph != nil {
					if gph.OverBaselines == nil {
						gph.OverBaselines = map[string]*Comparison{}
					}
					gph.OverBaselines[cfg.Baselines[j]] = Compare(gph, ph)
				}
			}
			if cerr := cleanup(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		return nil
	}

	if len(cfg.SweepRates) > 0 {
		for i, rate := range cfg.SweepRates {
			l := load
			l.Rate = rate
			if err := runPhases(i, l, &rep.Sweep, &rep.BaselineSweep, nil); err != nil {
				return rep, err
			}
		}
		return rep, nil
	}
	var cairn []*Phase
	err = runPhases(0, load, &cairn, &rep.Baselines, &rep.S3)
	if len(cairn) > 0 {
		rep.Cairn = cairn[0]
	}
	return rep, err
}

// workers is the number of operations cfg's load may have in flight at once.
func workers(cfg Config) int {
	if cfg.Rate > 0 || len(cfg.SweepRates) > 0 {
		return cfg.MaxInFlight
	}
	return cfg.Concurrency
}

// newTransport returns a keep-alive transport for workers concurrent requests to one
// server, ignoring proxy settings (a benchmark measures the server, not a proxy).
func newTransport(workers int) *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: workers,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

func paramsOf(cfg Config, load Load) Params {
	p := Params{
		Scenario:   cfg.Scenario,
		Mode:       load.Mode(),
		Agent:      cfg.Agent,
		Workbench:  cfg.Workbench,
		DurationS:  cfg.Duration.Seconds(),
		SizeBytes:  cfg.SizeBytes,
		Files:      cfg.Files,
		Baselines:  cfg.Baselines,
		OpTimeoutS: cfg.OpTimeout.Seconds(),
		S3Gateway:  cfg.S3Gateway.Endpoint,
		LeanHTTP:   cfg.LeanHTTP,
	}
	if cfg.Scenario == ScenarioMixed {
		p.ReadRatio = cfg.ReadRatio
	}
	if len(cfg.SweepRates) > 0 {
		p.Mode = ModeOpen
		p.SweepRates = cfg.SweepRates
	}
	if p.Mode == ModeOpen {
		p.Rate = cfg.Rate
		p.MaxInFlight = cfg.MaxInFlight
		p.DrainS = cfg.DrainTimeout.Seconds()
	} else {
		p.Concurrency = cfg.Concurrency
	}
	return p
}

// rateSuffix names a sweep phase by its rate.
func rateSuffix(cfg Config, l Load) string {
	if len(cfg.SweepRates) == 0 {
		return ""
	}
	return " @ " + FormatRate(l.Rate) + "/s"
}

// loadLabel is the progress display's short form of l.
func loadLabel(l Load) string {
	if l.Rate > 0 {
		return fmt.Sprintf("(open %s/s, ≤%d in flight)", FormatRate(l.Rate), l.MaxInFlight)
	}
	return fmt.Sprintf("(closed, %d clients)", l.Concurrency)
}

func say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
