package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot size in points (at 96 dpi: 1200 × 900 pixels).
const (
	plotWidth  = 9 * vg.Inch
	plotHeight = 7 * vg.Inch
	plotDPI    = 96
)

// phaseColors colour the phases of a plot in run order: Cairn first, then the S3 gateway,
// then each baseline.
var phaseColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
}

// WritePNG draws the report as a PNG image. A single-load report gets latency
// percentiles (p50 solid, p99 dashed, per second, log scale) above throughput (successful
// operations per second) over the run, one colour per phase (Cairn, the S3 gateway, then
// each baseline).
// A sweep gets latency (p50, p99) and achieved rate against the offered rate: the
// knee is where latency turns up and achieved stops following offered.
func (r *Report) WritePNG(w io.Writer) error {
	var top, bottom *plot.Plot
	var err error
	if len(r.Sweep) > 0 {
		top, bottom, err = r.sweepPlots()
	} else {
		top, bottom, err = r.seriesPlots()
	}
	if err != nil {
		return err
	}
	img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(18)}
	plots := [][]*plot.Plot{{top}, {bottom}}
	canvases := plot.Align(plots, tiles, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

func (r *Report) title() string {
	p := r.Params
	what := p.Scenario
	if p.SizeBytes > 0 {
		what += ", " + fmtBytes(p.SizeBytes)
	}
	switch {
	case len(p.SweepRates) > 0:
		return fmt.Sprintf("cairn bench %s: open-loop sweep", what)
	case p.Mode == ModeOpen:
		return fmt.Sprintf("cairn bench %s: open loop at %s ops/s", what, FormatRate(p.Rate))
	default:
		return fmt.Sprintf("cairn bench %s: closed loop, %d clients", what, p.Concurrency)
	}
}

// seriesPlots are latency and throughput per second of every phase.
func (r *Report) seriesPlots() (*plot.Plot, *plot.Plot, error) {
	lat := newLatencyPlot(r.title(), "seconds since the phase started", "latency (ms, log scale)")
	tput := newPlot("", "seconds since the phase started", "successful ops/s")
	for i, ph := range r.phases() {
		c := phaseColors[i%len(phaseColors)]
		var p50, p99, ok plotter.XYs
		for _, s := range ph.Series {
			x := float64(s.Second) + 0.5
			if s.P50Micros > 0 {
				p50 = append(p50, plotter.XY{X: x, Y: float64(s.P50Micros) / 1e3})
				p99 = append(p99, plotter.XY{X: x, Y: float64(s.P99Micros) / 1e3})
			}
			if float64(s.Second+1) <= ph.ElapsedSeconds { // a partial last second is no rate
				ok = append(ok, plotter.XY{X: x, Y: float64(s.OK)})
			}
		}
		if err := addLine(lat, ph.Name+" p50", p50, c, false); err != nil {
			return nil, nil, err
		}
		if err := addLine(lat, ph.Name+" p99", p99, c, true); err != nil {
			return nil, nil, err
		}
		if err := addLine(tput, ph.Name, ok, c, false); err != nil {
			return nil, nil, err
		}
	}
	fitLegend(lat, tput, 2*len(r.phases()), len(r.phases()))
	tput.X.Min, tput.X.Max = lat.X.Min, lat.X.Max
	return lat, tput, nil
}

// sweepPlots are latency and achieved rate against the offered rate, Cairn's and each
// baseline's.
func (r *Report) sweepPlots() (*plot.Plot, *plot.Plot, error) {
	lat := newLatencyPlot(r.title(), "offered ops/s", "latency from the due time (ms, log scale)")
	tput := newPlot("", "offered ops/s", "achieved ops/s")
	groups := []struct {
		name   string
		phases []*Phase
	}{{"cairn", r.Sweep}}
	for _, name := range r.Params.Baselines {
		var phases []*Phase
		for _, ph := range r.BaselineSweep {
			if ph.Baseline == name {
				phases = append(phases, ph)
			}
		}
		groups = append(groups, struct {
			name   string
			phases []*Phase
		}{"baseline " + name, phases})
	}
	maxRate := 0.0
	for i, g := range groups {
		c := phaseColors[i%len(phaseColors)]
		var p50, p99, achieved plotter.XYs
		for _, ph := range g.phases {
			x := ph.OfferedRate
			maxRate = math.Max(maxRate, x)
			if ph.Latency.P50Micros > 0 {
				p50 = append(p50, plotter.XY{X: x, Y: float64(ph.Latency.P50Micros) / 1e3})
				p99 = append(p99, plotter.XY{X: x, Y: float64(ph.Latency.P99Micros) / 1e3})
			}
			achieved = append(achieved, plotter.XY{X: x, Y: ph.AchievedRate})
		}
		for _, l := range []struct {
			name   string
			xys    plotter.XYs
			dashes []vg.Length
		}{{" p50", p50, nil}, {" p99", p99, []vg.Length{vg.Points(6), vg.Points(3)}}} {
			if err := addPoints(lat, g.name+l.name, l.xys, c, l.dashes); err != nil {
				return nil, nil, err
			}
		}
		if err := addPoints(tput, g.name, achieved, c, nil); err != nil {
			return nil, nil, err
		}
	}
	ideal, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: maxRate, Y: maxRate}})
	if err != nil {
		return nil, nil, err
	}
	ideal.Color = color.Gray{Y: 0x99}
	ideal.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
	tput.Add(ideal)
	tput.Legend.Add("achieved = offered", ideal)
	fitLegend(lat, tput, 2*len(groups), len(groups)+1)
	lat.X.Min, tput.X.Min = 0, 0
	return lat, tput, nil
}

// newLatencyPlot is a plot with a logarithmic latency axis in milliseconds.
func newLatencyPlot(title, x, y string) *plot.Plot {
	p := newPlot(title, x, y)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = latencyTicks{}
	return p
}

// legendEntryFraction is the share of a panel's height one legend entry takes (9 pt text
// in a panel about 190 pt high), legendFontSize its text size.
const (
	legendEntryFraction = 0.058
	legendFontSize      = 9
)

// fitLegend extends the y axes above the data so that the legends (drawn top left, inside
// the data area) do not cover it: on the log latency axis by as many decades as the
// legend's share of the height needs, on the linear throughput axis, which starts at 0,
// by the same share.
// latEntries and tputEntries are the number of entries of their legends.
func fitLegend(lat, tput *plot.Plot, latEntries, tputEntries int) {
	share := func(n int) float64 { return math.Min(0.6, float64(n)*legendEntryFraction+0.04) }
	if f := share(latEntries); lat.Y.Min > 0 && lat.Y.Max > lat.Y.Min {
		decades := math.Max(1, math.Log10(lat.Y.Max/lat.Y.Min))
		lat.Y.Max *= math.Pow(10, decades*f/(1-f))
	}
	tput.Y.Min = 0
	tput.Y.Max /= 1 - share(tputEntries)
}

// latencyTicks marks a logarithmic axis at 1, 2 and 5 times each power of ten, labelled,
// with unlabelled minor ticks at the other integers times it.
type latencyTicks struct{}

func (latencyTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	if !(lo > 0) || !(hi > lo) {
		return ticks
	}
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(legendFontSize)
	p.Add(plotter.NewGrid())
	return p
}

// addLine adds a line of xys to p, dashed or not; no points add nothing.
func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashed bool) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// addPoints adds a line with point markers of xys to p; no points add nothing.
func addPoints(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashes []vg.Length) error {
	if len(xys) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	l.Color, s.Color = c, c
	l.Width = vg.Points(1.5)
	l.Dashes = dashes
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}
