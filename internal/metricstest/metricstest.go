package metricstest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Find returns the sum over the series of the metric name in families whose labels
// include every "label=value" pair of labels (see the package doc for a series' value);
// found is false when no series matches. A nil family is skipped.
func Find(families []*dto.MetricFamily, name string, labels ...string) (v float64, found bool) {
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := make(map[string]string, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for _, l := range labels {
				k, want, _ := strings.Cut(l, "=")
				if have[k] != want {
					continue series
				}
			}
			found = true
			switch {
			case m.GetHistogram() != nil:
				v += float64(m.GetHistogram().GetSampleCount())
			case m.GetSummary() != nil:
				v += float64(m.GetSummary().GetSampleCount())
			case m.GetCounter() != nil:
				v += m.GetCounter().GetValue()
			default:
				v += m.GetGauge().GetValue()
			}
		}
	}
	return v, found
}

// Sample is Find over what g gathers; a Gather error fails tb.
func Sample(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) (v float64, found bool) {
	tb.Helper()
	families, err := g.Gather()
	if err != nil {
		tb.Fatalf("metricstest: gather: %v", err)
	}
	return Find(families, name, labels...)
}

// Value is Sample's value: 0 when no series matches.
func Value(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	tb.Helper()
	v, _ := Sample(tb, g, name, labels...)
	return v
}
