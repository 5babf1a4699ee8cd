package metricstest_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/internal/metricstest"
)

func TestValueSumsTheSeriesWhoseLabelsMatch(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	runs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "runs_total", Help: "h"}, []string{"shard", "result"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "duration_seconds", Help: "h"}, []string{"shard"})
	level := prometheus.NewGauge(prometheus.GaugeOpts{Name: "level", Help: "h"})
	reg.MustRegister(runs, dur, level)
	runs.WithLabelValues("0", "ok").Add(3)
	runs.WithLabelValues("0", "error").Add(1)
	runs.WithLabelValues("1", "ok").Add(5)
	dur.WithLabelValues("0").Observe(0.1)
	dur.WithLabelValues("0").Observe(0.2)
	level.Set(7)
	for _, tc := range []struct {
		name      string
		metric    string
		labels    []string
		want      float64
		wantFound bool
	}{
		{"every label given picks one series", "runs_total", []string{"shard=0", "result=ok"}, 3, true},
		{"a partial label set sums the series it leaves open", "runs_total", []string{"shard=0"}, 4, true},
		{"no labels sums every series", "runs_total", nil, 9, true},
		{"a histogram reads as its sample count", "duration_seconds", []string{"shard=0"}, 2, true},
		{"a gauge reads as its value", "level", nil, 7, true},
		{"a label value no series has is not found", "runs_total", []string{"shard=2"}, 0, false},
		{"a metric not registered is not found", "absent_total", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, found := metricstest.Sample(t, reg, tc.metric, tc.labels...)
			if v != tc.want || found != tc.wantFound {
				t.Fatalf("Sample = %v, %v; want %v, %v", v, found, tc.want, tc.wantFound)
			}
			if got := metricstest.Value(t, reg, tc.metric, tc.labels...); got != tc.want {
				t.Fatalf("Value = %v, want %v", got, tc.want)
			}
		})
	}
}
