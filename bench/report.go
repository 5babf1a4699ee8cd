package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ReportSchema is the version of the JSON report's layout; it changes when a field
// changes meaning or goes away. 2: several baselines per run (Report.Baselines, each
// phase with its Comparison), per-label breakdowns, backend and node count.
const ReportSchema = 2

// Report is the outcome of one Run: what was measured, where, and the numbers.
type Report struct {
	// Schema is ReportSchema.
	Schema int `json:"schema"`
	// StartedAt is when the run began (after setup), UTC.
	StartedAt time.Time `json:"started_at"`
	// Environment is where the numbers were measured.
	Environment Environment `json:"environment"`
	// Params is the configuration the run used, defaults filled in.
	Params Params `json:"params"`
	// Cairn is the single phase against Cairn; nil in a sweep.
	Cairn *Phase `json:"cairn,omitempty"`
	// S3 is the same scenario through the S3 gateway (Config.S3Gateway), run right after
	// Cairn with its load, with its ratios to Cairn and to each baseline; nil without a
	// gateway.
	S3 *Phase `json:"s3,omitempty"`
	// Baselines are the baseline phases with Cairn's load, in Params.Baselines order, each
	// with its Comparison; empty without --baseline or in a sweep.
	Baselines []*Phase `json:"baselines,omitempty"`
	// Sweep is one open-loop phase against Cairn per rate, in the order given.
	Sweep []*Phase `json:"sweep,omitempty"`
	// BaselineSweep is every baseline at every rate of the sweep (after each rate's Cairn
	// phase, in run order), each with its Comparison; empty without --baseline.
	BaselineSweep []*Phase `json:"baseline_sweep,omitempty"`
}

// Environment fingerprints the machine and build a report was measured with.
type Environment struct {
	// GitCommit is `git rev-parse HEAD` in the working directory, "" outside a checkout;
	// GitDirty is true when tracked files had uncommitted changes.
	GitCommit string `json:"git_commit,omitempty"`
	GitDirty  bool   `json:"git_dirty,omitempty"`
	// CPUModel is the first "model name" of /proc/cpuinfo ("" where there is none).
	CPUModel string `json:"cpu_model,omitempty"`
	// Cores is the number of logical CPUs the load generator may use.
	Cores     int    `json:"cores"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	GoVersion string `json:"go_version"`
	Hostname  string `json:"hostname,omitempty"`
	// ServerURL is the Cairn measured.
	ServerURL string `json:"server_url"`
	// Backend and Nodes are the measured Cairn's blob backend and node count as the run
	// was told them (Config.Backend, Config.Nodes); "" and 0 when not stated.
	Backend string `json:"backend,omitempty"`
	Nodes   int    `json:"nodes,omitempty"`
}

// Params is the run's configuration as the report records it, with units in the names.
type Params struct {
	Scenario    string    `json:"scenario"`
	Mode        string    `json:"mode"`
	Agent       string    `json:"agent"`
	Workbench   string    `json:"workbench"`
	Concurrency int       `json:"concurrency,omitempty"`
	Rate        float64   `json:"rate,omitempty"`
	MaxInFlight int       `json:"max_in_flight,omitempty"`
	SweepRates  []float64 `json:"sweep_rates,omitempty"`
	DurationS   float64   `json:"duration_s"`
	SizeBytes   int64     `json:"size_bytes"`
	Files       int       `json:"files,omitempty"`
	ReadRatio   float64   `json:"read_ratio,omitempty"`
	Baselines   []string  `json:"baselines,omitempty"`
	S3Gateway   string    `json:"s3_gateway,omitempty"`
	DrainS      float64   `json:"drain_timeout_s,omitempty"`
	OpTimeoutS  float64   `json:"op_timeout_s"`
	LeanHTTP    bool      `json:"lean_http,omitempty"`
}

// Comparison is Cairn over a baseline under the same load: a throughput ratio of 0.5
// means Cairn completed half as many operations per second; a p99 ratio of 3 means its
// p99 latency was three times the baseline's. A ratio is 0 when the baseline's value is 0.
type Comparison struct {
	ThroughputRatio float64 `json:"throughput_ratio"`
	P50Ratio        float64 `json:"p50_ratio"`
	P99Ratio        float64 `json:"p99_ratio"`
}

// Compare returns cairn's throughput and p50/p99 latency over base's.
func Compare(cairn, base *Phase) *Comparison {
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	return &Comparison{
		ThroughputRatio: ratio(cairn.AchievedRate, base.AchievedRate),
		P50Ratio:        ratio(float64(cairn.Latency.P50Micros), float64(base.Latency.P50Micros)),
		P99Ratio:        ratio(float64(cairn.Latency.P99Micros), float64(base.Latency.P99Micros)),
	}
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// gitTimeout bounds each git command of the fingerprint.
const gitTimeout = 5 * time.Second

// Fingerprint describes this machine and build; server is the URL measured. Any part
// it cannot find (no git, no /proc) is left empty.
func Fingerprint(ctx context.Context, server string) Environment {
	env := Environment{
		Cores:     runtime.NumCPU(),
		GOOS:      runtime.GOOS,
		GOARCH:    runtime.GOARCH,
		GoVersion: runtime.Version(),
		ServerURL: server,
		CPUModel:  cpuModel("/proc/cpuinfo"),
	}
	env.Hostname, _ = os.Hostname()
	git := func(args ...string) (string, error) {
		gctx, cancel := context.WithTimeout(ctx, gitTimeout)
		defer cancel()
		out, err := exec.CommandContext(gctx, "git", args...).Output()
		return strings.TrimSpace(string(out)), err
	}
	if commit, err := git("rev-parse", "HEAD"); err == nil {
		env.GitCommit = commit
		if status, err := git("status", "--porcelain", "--untracked-files=no"); err == nil {
			env.GitDirty = status != ""
		}
	}
	return env
}

// cpuModel returns the first "model name" in the cpuinfo file at path.
func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// WriteMarkdown writes the whole report as Markdown: environment, parameters, results
// (with the comparison to the baseline, errors by class, late sends), and each phase's
// per-second series.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# cairn bench: %s\n\n", r.Params.Scenario)
	b.WriteString("## Environment\n\n| | |\n|---|---|\n")
	e := r.Environment
	commit := e.GitCommit
	if commit == "" {
		commit = "unknown"
	} else if e.GitDirty {
		commit += " (uncommitted changes)"
	}
	row(&b, "started", r.StartedAt.Format(time.RFC3339))
	row(&b, "git commit", commit)
	row(&b, "CPU", fmt.Sprintf("%s, %d logical cores", orUnknown(e.CPUModel), e.Cores))
	row(&b, "Go", fmt.Sprintf("%s %s/%s", e.GoVersion, e.GOOS, e.GOARCH))
	row(&b, "host", orUnknown(e.Hostname))
	row(&b, "server", e.ServerURL)
	if e.Backend != "" || e.Nodes > 0 {
		nodes := "not stated"
		if e.Nodes > 0 {
			nodes = strconv.Itoa(e.Nodes)
		}
		row(&b, "backend / nodes", orUnknown(e.Backend)+" / "+nodes)
	}
	b.WriteString("\n## Parameters\n\n| | |\n|---|---|\n")
	p := r.Params
	row(&b, "scenario", p.Scenario)
	row(&b, "mode", p.Mode)
	switch {
	case len(p.SweepRates) > 0:
		row(&b, "sweep", joinRates(p.SweepRates)+" ops/s, max in flight "+strconv.Itoa(p.MaxInFlight))
	case p.Mode == ModeOpen:
		row(&b, "rate", fmt.Sprintf("%s ops/s, max in flight %d", FormatRate(p.Rate), p.MaxInFlight))
	default:
		row(&b, "concurrency", strconv.Itoa(p.Concurrency))
	}
	row(&b, "duration", fmt.Sprintf("%gs per phase", p.DurationS))
	row(&b, "body size", fmtBytes(p.SizeBytes))
	if p.Files > 0 {
		row(&b, "files", strconv.Itoa(p.Files))
	}
	if p.Scenario == ScenarioMixed {
		row(&b, "read ratio", fmt.Sprintf("%g", p.ReadRatio))
	}
	row(&b, "agent / workbench", p.Agent+" / "+p.Workbench)
	if len(p.Baselines) > 0 {
		row(&b, "baselines", strings.Join(p.Baselines, ", "))
	}
	if p.S3Gateway != "" {
		row(&b, "S3 gateway", p.S3Gateway)
	}
	b.WriteString("\n")
	b.WriteString(r.summary())
	for _, ph := range r.phases() {
		fmt.Fprintf(&b, "\n### Per second: %s\n\n| second | ok/s | errors | p50 | p99 |\n|---:|---:|---:|---:|---:|\n", ph.Name)
		for _, s := range ph.Series {
			sec := strconv.Itoa(s.Second)
			if float64(s.Second+1) > ph.ElapsedSeconds {
				sec += " (partial)"
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %s |\n", sec, s.OK, s.Errors, FormatMicros(s.P50Micros), FormatMicros(s.P99Micros))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSummary writes the results tables of the report as Markdown (what `cairn bench`
// prints when it ends).
func (r *Report) WriteSummary(w io.Writer) error {
	_, err := io.WriteString(w, r.summary())
	return err
}

func (r *Report) summary() string {
	var b strings.Builder
	b.WriteString("## Results\n\n")
	if len(r.Sweep) > 0 {
		b.WriteString("Latency vs throughput (open loop; latency from each operation's due time):\n\n")
		r.sweepTable(&b, r.Sweep)
		for _, name := range r.Params.Baselines {
			var phases []*Phase
			for _, ph := range r.BaselineSweep {
				if ph.Baseline == name {
					phases = append(phases, ph)
				}
			}
			if len(phases) > 0 {
				fmt.Fprintf(&b, "\nBaseline %s at the same rates:\n\n", name)
				r.sweepTable(&b, phases)
			}
		}
	} else {
		b.WriteString("| phase | mode | offered ops/s | achieved ops/s | p50 | p90 | p99 | p99.9 | max | ops | errors |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, ph := range r.phases() {
			offered := "— (closed, " + strconv.Itoa(ph.Concurrency) + " clients)"
			if ph.Mode == ModeOpen {
				offered = FormatRate(ph.OfferedRate)
			}
			l := ph.Latency
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d |\n", ph.Name, ph.Mode, offered,
				r.fmtAchieved(ph), FormatMicros(l.P50Micros), FormatMicros(l.P90Micros), FormatMicros(l.P99Micros),
				FormatMicros(l.P999Micros), FormatMicros(l.MaxMicros), ph.Ops, ph.Errors)
		}
		for _, ph := range r.Baselines {
			if c := ph.Comparison; c != nil {
				fmt.Fprintf(&b, "\nCairn / %s: throughput %.2f×, p50 %.2f×, p99 %.2f×\n", ph.Baseline, c.ThroughputRatio, c.P50Ratio, c.P99Ratio)
			}
		}
		if s3 := r.S3; s3 != nil && s3.OverCairn != nil {
			c := s3.OverCairn
			fmt.Fprintf(&b, "\nS3 gateway / Cairn REST: throughput %.2f×, p50 %.2f×, p99 %.2f×\n", c.ThroughputRatio, c.P50Ratio, c.P99Ratio)
			for _, name := range r.Params.Baselines {
				if c := s3.OverBaselines[name]; c != nil {
					fmt.Fprintf(&b, "\nS3 gateway / %s: throughput %.2f×, p50 %.2f×, p99 %.2f×\n", name, c.ThroughputRatio, c.P50Ratio, c.P99Ratio)
				}
			}
		}
	}
	for _, ph := range r.phases() {
		if len(ph.Breakdown) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nBy operation, %s:\n\n| operation | ops | share | errors | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|---:|---:|---:|\n", ph.Name)
		labels := make([]string, 0, len(ph.Breakdown))
		for l := range ph.Breakdown {
			labels = append(labels, l)
		}
		sort.Slice(labels, func(i, j int) bool {
			a, c := ph.Breakdown[labels[i]], ph.Breakdown[labels[j]]
			if a.Ops != c.Ops {
				return a.Ops > c.Ops
			}
			return labels[i] < labels[j]
		})
		for _, l := range labels {
			st := ph.Breakdown[l]
			share := 0.0
			if ph.Ops > 0 {
				share = 100 * float64(st.Ops) / float64(ph.Ops)
			}
			fmt.Fprintf(&b, "| %s | %d | %.0f%% | %d | %s | %s | %s | %s |\n", l, st.Ops, share, st.Errors,
				FormatMicros(st.Latency.P50Micros), FormatMicros(st.Latency.P90Micros), FormatMicros(st.Latency.P99Micros), FormatMicros(st.Latency.MaxMicros))
		}
	}
	var notes []string
	for _, ph := range r.phases() {
		if len(ph.ErrorClasses) > 0 {
			var classes []string
			for _, c := range sortedClasses(ph.ErrorClasses) {
				classes = append(classes, fmt.Sprintf("%s × %d", c, ph.ErrorClasses[c]))
			}
			notes = append(notes, fmt.Sprintf("%s: errors: %s.", ph.Name, strings.Join(classes, ", ")))
		}
		if ph.Mode == ModeOpen && ph.LateSends > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d operations sent ≥ 1 ms late (max lag %s); their latency counts from the due time.",
				ph.Name, ph.LateSends, FormatMicros(ph.MaxSendLagMicros)))
		}
		if ph.Aborted {
			notes = append(notes, fmt.Sprintf("%s: interrupted before the end; the numbers cover the part that ran.", ph.Name))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}

func (r *Report) sweepTable(b *strings.Builder, phases []*Phase) {
	ratios := len(phases) > 0 && phases[0].Comparison != nil
	b.WriteString("| offered ops/s | achieved ops/s | p50 | p99 | p99.9 | max | errors |")
	if ratios {
		b.WriteString(" Cairn/this throughput | Cairn/this p99 |")
	}
	b.WriteString("\n|---:|---:|---:|---:|---:|---:|---:|")
	if ratios {
		b.WriteString("---:|---:|")
	}
	b.WriteString("\n")
	for _, ph := range phases {
		l := ph.Latency
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %d |", FormatRate(ph.OfferedRate), r.fmtAchieved(ph),
			FormatMicros(l.P50Micros), FormatMicros(l.P99Micros), FormatMicros(l.P999Micros), FormatMicros(l.MaxMicros), ph.Errors)
		if c := ph.Comparison; ratios && c != nil {
			fmt.Fprintf(b, " %.2f× | %.2f× |", c.ThroughputRatio, c.P99Ratio)
		}
		b.WriteString("\n")
	}
}

// fmtAchieved formats a phase's achieved rate, with its bandwidth when bodies are large
// enough for bandwidth to be the point (object-* scenarios).
func (r *Report) fmtAchieved(ph *Phase) string {
	s := FormatRate(ph.AchievedRate)
	if r.Params.SizeBytes >= smallBodyBytes {
		s += fmt.Sprintf(" (%.1f MiB/s)", ph.AchievedRate*float64(r.Params.SizeBytes)/(1<<20))
	}
	return s
}

// phases returns every phase of the report in run order.
func (r *Report) phases() []*Phase {
	var out []*Phase
	if r.Cairn != nil {
		out = append(out, r.Cairn)
	}
	if r.S3 != nil {
		out = append(out, r.S3)
	}
	out = append(out, r.Baselines...)
	out = append(out, r.Sweep...)
	return append(out, r.BaselineSweep...)
}

func row(b *strings.Builder, k, v string) { fmt.Fprintf(b, "| %s | %s |\n", k, v) }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// FormatMicros formats a latency in microseconds with a unit a reader takes in at a
// glance: "850 µs", "12.40 ms", "1.25 s".
func FormatMicros(us int64) string {
	switch {
	case us < 1000:
		return fmt.Sprintf("%d µs", us)
	case us < 1000*1000:
		return fmt.Sprintf("%.2f ms", float64(us)/1e3)
	default:
		return fmt.Sprintf("%.2f s", float64(us)/1e6)
	}
}

// FormatRate formats a rate (operations or bytes per second) with one decimal below 100
// and none from 100 on.
func FormatRate(r float64) string {
	if r >= 100 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

func joinRates(rs []float64) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = strconv.FormatFloat(r, 'g', -1, 64)
	}
	return strings.Join(s, ", ")
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d B", n)
	}
}
