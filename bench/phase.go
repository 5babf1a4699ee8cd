package bench

import (
	"sort"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds and precision. Latencies are recorded in microseconds; a latency
// above LatencyMax is recorded as LatencyMax (and still shows as the maximum).
const (
	// LatencyMin is the histogram's resolution.
	LatencyMin = time.Microsecond
	// LatencyMax is the largest latency the histogram tells apart.
	LatencyMax = 60 * time.Second
	// latencyDigits is the significant decimal digits of a phase's histogram (0.1%).
	latencyDigits = 3
	// seriesDigits is the precision of the per-second histograms (1%), which keeps a
	// long run's time series small.
	seriesDigits = 2
	// lateSendThreshold is how far behind its due time an open-loop send must be to
	// count in Phase.LateSends.
	lateSendThreshold = time.Millisecond
)

// Phase is the measurement of one load phase: one scenario (or the baseline) at one
// concurrency or rate.
type Phase struct {
	// Name says what was measured ("cairn small-put", "baseline fsync").
	Name string `json:"name"`
	// Baseline names the baseline this phase measured (Baselines); "" for Cairn.
	Baseline string `json:"baseline,omitempty"`
	// Comparison is Cairn's phase under the same load over this one; set on baseline
	// phases only.
	Comparison *Comparison `json:"comparison,omitempty"`
	// OverCairn is this phase over Cairn's (REST) phase under the same load, and
	// OverBaselines this phase over each baseline's, by baseline name; set on the S3
	// gateway's phase (Report.S3) only.
	OverCairn     *Comparison            `json:"over_cairn,omitempty"`
	OverBaselines map[string]*Comparison `json:"over_baselines,omitempty"`
	// Mode is "closed" or "open".
	Mode string `json:"mode"`
	// Concurrency is the closed loop's worker count (0 in the open loop).
	Concurrency int `json:"concurrency,omitempty"`
	// MaxInFlight is the open loop's bound on operations in flight (0 in the closed loop).
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// OfferedRate is the open loop's schedule in operations per second (0 in the closed
	// loop, which offers whatever the system absorbs).
	OfferedRate float64 `json:"offered_rate"`
	// DurationSeconds is the configured length of the phase in seconds.
	DurationSeconds float64 `json:"duration_s"`
	// ElapsedSeconds is the wall time from the start until the last operation returned
	// (including the open loop's drain), in seconds.
	ElapsedSeconds float64 `json:"elapsed_s"`
	// Ops is the number of operations measured: OK + Errors.
	Ops int64 `json:"ops"`
	// OK is the number of operations that succeeded.
	OK int64 `json:"ok"`
	// Errors is the number of operations that failed or, in the open loop, were never sent.
	Errors int64 `json:"errors"`
	// AchievedRate is OK / ElapsedSeconds, in operations per second.
	AchievedRate float64 `json:"achieved_rate"`
	// Latency summarises every measured operation, successful or not (an error that
	// arrives quickly is still a wait the user had).
	Latency LatencySummary `json:"latency"`
	// ErrorClasses counts errors by ErrorClass ("HTTP 503 ObjectUnavailable",
	// "transport", "timeout", "not sent", ...).
	ErrorClasses map[string]int64 `json:"error_classes"`
	// LateSends counts open-loop operations sent at least 1 ms after their due time
	// (the generator, not the system, fell behind, or all workers were busy).
	LateSends int64 `json:"late_sends"`
	// MaxSendLagMicros is the largest delay between an operation's due time and its send,
	// in microseconds.
	MaxSendLagMicros int64 `json:"max_send_lag_us"`
	// Breakdown has the operations of each label (an MCP tool, a read or a write) for an
	// Op with several kinds of operation (Labeler); nil otherwise.
	Breakdown map[string]*LabelStats `json:"breakdown,omitempty"`
	// Series has one point per second of the phase, by completion time.
	Series []SecondPoint `json:"series"`
	// Aborted is true when the run was cancelled before the phase ended.
	Aborted bool `json:"aborted,omitempty"`
	// HistogramV2 is the latency histogram (µs) in HdrHistogram's compressed V2 encoding,
	// base64, so later tools can compute any percentile or plot it.
	HistogramV2 string `json:"hdr_histogram_v2"`
	// Histogram is the latency histogram in microseconds (1 µs..60 s, 3 digits).
	Histogram *hdrhistogram.Histogram `json:"-"`
}

// LatencySummary are the percentiles of a latency histogram, in microseconds. A
// percentile is the histogram's highest value equivalent to it (at most 0.1% above the
// exact sample).
type LatencySummary struct {
	Count      int64   `json:"count"`
	MinMicros  int64   `json:"min_us"`
	MeanMicros float64 `json:"mean_us"`
	P50Micros  int64   `json:"p50_us"`
	P90Micros  int64   `json:"p90_us"`
	P99Micros  int64   `json:"p99_us"`
	P999Micros int64   `json:"p999_us"`
	MaxMicros  int64   `json:"max_us"`
}

// LabelStats are the operations of one label of a phase: counts and latency, measured as
// the phase's are (in the open loop, from each operation's due time).
type LabelStats struct {
	Ops     int64          `json:"ops"`
	OK      int64          `json:"ok"`
	Errors  int64          `json:"errors"`
	Latency LatencySummary `json:"latency"`
}

// SecondPoint is one second of a phase: the operations that completed in
// [Second, Second+1) seconds after the start. The last point may cover a partial second.
type SecondPoint struct {
	Second int `json:"second"`
	// OK is the number of successful operations, which is also the throughput in ops/s.
	OK int64 `json:"ok"`
	// Errors is the number of failed operations.
	Errors int64 `json:"errors"`
	// P50Micros and P99Micros are the latency percentiles of the second's operations,
	// successful or not, in microseconds (1% precision); 0 when none completed.
	P50Micros int64 `json:"p50_us"`
	P99Micros int64 `json:"p99_us"`
}

// Summarize returns the percentiles of h (in microseconds).
func Summarize(h *hdrhistogram.Histogram) LatencySummary {
	if h == nil || h.TotalCount() == 0 {
		return LatencySummary{}
	}
	return LatencySummary{
		Count:      h.TotalCount(),
		MinMicros:  h.Min(),
		MeanMicros: h.Mean(),
		P50Micros:  h.ValueAtQuantile(50),
		P90Micros:  h.ValueAtQuantile(90),
		P99Micros:  h.ValueAtQuantile(99),
		P999Micros: h.ValueAtQuantile(99.9),
		MaxMicros:  h.Max(),
	}
}

// newLatencyHistogram returns an empty phase histogram.
func newLatencyHistogram(digits int) *hdrhistogram.Histogram {
	return hdrhistogram.New(int64(LatencyMin/time.Microsecond), int64(LatencyMax/time.Microsecond), digits)
}

// recorder collects one phase's measurements. One mutex guards it all: recording is a
// few tens of nanoseconds, far below the cost of any operation measured.
type recorder struct {
	start time.Time
	live  *Live

	mu      sync.Mutex
	hist    *hdrhistogram.Histogram
	ok      int64
	failed  int64
	classes map[string]int64
	seconds []*secondSlot
	late    int64
	maxLag  time.Duration
	labels  map[string]*labelSlot
}

type labelSlot struct {
	ok, failed int64
	hist       *hdrhistogram.Histogram
}

type secondSlot struct {
	ok, failed int64
	hist       *hdrhistogram.Histogram
}

func newRecorder(start time.Time, live *Live) *recorder {
	return &recorder{start: start, live: live, hist: newLatencyHistogram(latencyDigits), classes: map[string]int64{}}
}

// record adds one operation labelled label ("" for none), due at due, sent at sent and
// returned at done with err.
func (r *recorder) record(label string, due, sent, done time.Time, err error) {
	lat := micros(done.Sub(due))
	lag := sent.Sub(due)
	sec := int(done.Sub(r.start) / time.Second)
	if sec < 0 {
		sec = 0
	}
	var class string
	if err != nil {
		class = ErrorClass(err)
		r.live.failed.Add(1)
	} else {
		r.live.ok.Add(1)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.hist.RecordValue(lat) // lat is clamped into range: no error
	for len(r.seconds) <= sec {
		r.seconds = append(r.seconds, &secondSlot{hist: newLatencyHistogram(seriesDigits)})
	}
	s := r.seconds[sec]
	_ = s.hist.RecordValue(lat)
	if err != nil {
		r.failed++
		s.failed++
		r.classes[class]++
	} else {
		r.ok++
		s.ok++
	}
	if label != "" {
		if r.labels == nil {
			r.labels = map[string]*labelSlot{}
		}
		ls := r.labels[label]
		if ls == nil {
			ls = &labelSlot{hist: newLatencyHistogram(latencyDigits)}
			r.labels[label] = ls
		}
		_ = ls.hist.RecordValue(lat)
		if err != nil {
			ls.failed++
		} else {
			ls.ok++
		}
	}
	if lag >= lateSendThreshold {
		r.late++
	}
	r.maxLag = max(r.maxLag, lag)
}

// phase returns the measurements of a run that stopped at stop.
func (r *recorder) phase(load Load, stop time.Time) *Phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	elapsed := stop.Sub(r.start).Seconds()
	p := &Phase{
		Mode:             load.Mode(),
		DurationSeconds:  load.Duration.Seconds(),
		ElapsedSeconds:   elapsed,
		Ops:              r.ok + r.failed,
		OK:               r.ok,
		Errors:           r.failed,
		Latency:          Summarize(r.hist),
		ErrorClasses:     r.classes,
		LateSends:        r.late,
		MaxSendLagMicros: micros(r.maxLag),
		Histogram:        r.hist,
	}
	if load.Rate > 0 {
		p.OfferedRate = load.Rate
		p.MaxInFlight = load.MaxInFlight
	} else {
		p.Concurrency = load.Concurrency
	}
	if elapsed > 0 {
		p.AchievedRate = float64(r.ok) / elapsed
	}
	if enc, err := r.hist.EncodeV2(); err == nil {
		p.HistogramV2 = string(enc)
	}
	if len(r.labels) > 0 {
		p.Breakdown = make(map[string]*LabelStats, len(r.labels))
		for label, ls := range r.labels {
			p.Breakdown[label] = &LabelStats{Ops: ls.ok + ls.failed, OK: ls.ok, Errors: ls.failed, Latency: Summarize(ls.hist)}
		}
	}
	p.Series = make([]SecondPoint, len(r.seconds))
	for i, s := range r.seconds {
		pt := SecondPoint{Second: i, OK: s.ok, Errors: s.failed}
		if s.hist.TotalCount() > 0 {
			pt.P50Micros = s.hist.ValueAtQuantile(50)
			pt.P99Micros = s.hist.ValueAtQuantile(99)
		}
		p.Series[i] = pt
	}
	return p
}

// micros converts d to whole microseconds clamped to the histogram's range.
func micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	return min(max(us, 0), int64(LatencyMax/time.Microsecond))
}

// sortedClasses returns the error classes of m, most frequent first.
func sortedClasses(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
