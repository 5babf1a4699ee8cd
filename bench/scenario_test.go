package bench

import (
	"bytes"
	"fmt"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
)

// runScenario runs scenario name against a fresh real node with cfg's changes and fails
// the test on a setup error or any failed operation.
func runScenario(t *testing.T, name string, change func(*Config)) (*Report, Config) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Server = newNode(t)
	cfg.Agent = "bench"
	cfg.Workbench = "w-" + name
	cfg.Scenario = name
	cfg.Concurrency = 2
	cfg.Duration = 300 * time.Millisecond
	if change != nil {
		change(&cfg)
	}
	rep, err := Run(t.Context(), cfg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	phases := rep.Sweep
	if len(phases) == 0 {
		phases = []*Phase{rep.Cairn}
	}
	for _, c := range phases {
		if c == nil || c.OK == 0 || c.Errors != 0 {
			t.Fatalf("%s: phase %+v: want successful operations and no errors", name, c)
		}
	}
	return rep, cfg
}

func TestSnapshotScenarioMintsSnapshotsOfTheWorkbench(t *testing.T) {
	rep, cfg := runScenario(t, ScenarioSnapshot, func(c *Config) { c.Files = 5 })
	c := client.New(cfg.Server, nil)
	list, err := c.ListSnapshots(t.Context(), cfg.Agent, cfg.Workbench)
	if err != nil {
		t.Fatal(err)
	}
	// The run keeps its newest liveSnapshots alive and retired the older ones: snapshot
	// ids are numbered per agent root from 1, so the newest is the number minted.
	alive := 0
	for _, sn := range list.Snapshots {
		if sn.State == client.SnapshotAlive {
			alive++
		}
	}
	if want := min(rep.Cairn.OK, liveSnapshots); int64(alive) != want {
		t.Errorf("the workbench has %d live snapshots after %d mints, want %d", alive, rep.Cairn.OK, want)
	}
	last := list.Snapshots[len(list.Snapshots)-1]
	if int64(last.SnapshotID) != rep.Cairn.OK || last.State != client.SnapshotAlive {
		t.Errorf("newest snapshot %d (%s), the report says %d were minted", last.SnapshotID, last.State, rep.Cairn.OK)
	}
	// Each snapshot holds the 5 files written before the run.
	files := 0
	err = c.WalkAt(t.Context(), cfg.Agent, cfg.Workbench, treeDir, client.SnapshotID(last.SnapshotID), func(e client.Entry) error {
		if !e.IsDir() {
			files++
		}
		return nil
	})
	if err != nil || files != 5 {
		t.Errorf("snapshot %d lists %d files (%v), want 5", last.SnapshotID, files, err)
	}
}

func TestRestoreScenarioRestoresIntoFreshWorkbenches(t *testing.T) {
	rep, cfg := runScenario(t, ScenarioRestore, func(c *Config) { c.Files = 3 })
	c := client.New(cfg.Server, nil)
	for seq := range uint64(rep.Cairn.OK) {
		dest := restoreDestination(cfg.Workbench, 0, seq)
		info, err := c.Stat(t.Context(), cfg.Agent, dest, filePath(treeDir, 2))
		if err != nil {
			t.Errorf("restored workbench %s: %v", dest, err)
			continue
		}
		if info.Size != 1024 {
			t.Errorf("%s holds %d bytes, want 1024", dest, info.Size)
		}
	}
}

// TestMCPScenarioCallsEveryToolOfTheMixOverStreamableHTTP runs the mix through the
// go-sdk's client and through the lean lane (Config.LeanHTTP).
func TestMCPScenarioCallsEveryToolOfTheMixOverStreamableHTTP(t *testing.T) {
	for _, lean := range []bool{false, true} {
		t.Run(fmt.Sprintf("lean=%v", lean), func(t *testing.T) { testMCPScenario(t, lean) })
	}
}

func testMCPScenario(t *testing.T, lean bool) {
	// The open loop schedules exactly 40 calls, sequence numbers 0 to 39, whatever the
	// machine's speed: they draw every tool of the mix (the last to come first is seq 25),
	// where a closed loop of one second makes as many calls as a loaded machine manages.
	rep, cfg := runScenario(t, ScenarioMCP, func(c *Config) {
		c.Files = 4
		c.Rate, c.MaxInFlight, c.Duration = 40, 2, time.Second
		c.LeanHTTP = lean
	})
	if rep.Params.LeanHTTP != lean {
		t.Errorf("the report's parameters say lean_http %v, want %v", rep.Params.LeanHTTP, lean)
	}
	if rep.Cairn.Ops != 40 {
		t.Fatalf("%d calls, want the 40 the schedule holds", rep.Cairn.Ops)
	}
	ph := rep.Cairn
	var total int64
	for _, m := range mcpMix {
		st := ph.Breakdown[m.tool]
		if st == nil || st.OK == 0 {
			t.Errorf("tool %s: %+v, want successful calls", m.tool, st)
			continue
		}
		total += st.Ops
	}
	if total != ph.Ops || len(ph.Breakdown) != len(mcpMix) {
		t.Errorf("breakdown %v covers %d of %d calls", ph.Breakdown, total, ph.Ops)
	}
	// The put_file and append calls wrote what the mix says they write.
	c := client.New(cfg.Server, nil)
	page, err := c.List(t.Context(), cfg.Agent, cfg.Workbench, "outputs/bench/p0", client.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(page.Entries)) != ph.Breakdown["workbench_put_file"].OK {
		t.Errorf("outputs/bench/p0 has %d files, %d put_file calls succeeded", len(page.Entries), ph.Breakdown["workbench_put_file"].OK)
	}
	var md strings.Builder
	if err := rep.WriteSummary(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "By operation, cairn mcp:") || !strings.Contains(md.String(), "| workbench_read |") {
		t.Errorf("summary lacks the by-tool table:\n%s", md.String())
	}
}

func TestMCPMixDrawsToolsInTheirProportions(t *testing.T) {
	counts := map[string]int{}
	const n = 100_000
	for seq := range uint64(n) {
		counts[mcpTool(seq)]++
	}
	for _, m := range mcpMix {
		if got, want := float64(counts[m.tool])/n, float64(m.weight)/100; got < want*0.95 || got > want*1.05 {
			t.Errorf("%s: %.3f of the calls, want %.2f ± 5%%", m.tool, got, want)
		}
	}
}

func TestTextBodyIsLinesOfWordsOfTheExactSize(t *testing.T) {
	for _, size := range []int64{1, 100, 1024, 4097} {
		b := textBody(1, 2, size)
		if int64(len(b)) != size || b[len(b)-1] != '\n' {
			t.Errorf("textBody(%d): %d bytes ending %q", size, len(b), b[len(b)-1])
		}
		if !bytes.Equal(b, textBody(1, 2, size)) || (size > 50 && bytes.Equal(b, textBody(1, 3, size))) {
			t.Errorf("textBody(%d) is not a function of (nonce, seq) alone", size)
		}
	}
	if !bytes.Contains(textBody(7, 7, 4096), []byte(mcpGrepWord)) {
		t.Errorf("4 KiB of text never says %q: grep would find nothing", mcpGrepWord)
	}
}

func TestMixedScenarioBreaksLatencyDownIntoReadsAndWrites(t *testing.T) {
	rep, _ := runScenario(t, ScenarioMixed, func(c *Config) { c.Files = 4; c.ReadRatio = 0.5 })
	ph := rep.Cairn
	r, w := ph.Breakdown["read (GET)"], ph.Breakdown["write (PUT)"]
	if r == nil || w == nil || r.Ops+w.Ops != ph.Ops || r.OK == 0 || w.OK == 0 {
		t.Errorf("breakdown %v of %d operations: want reads and writes adding up", ph.Breakdown, ph.Ops)
	}
}

func TestWritePNGDrawsASeriesAndASweep(t *testing.T) {
	series, _ := runScenario(t, ScenarioSmallPut, func(c *Config) {
		c.Baselines = []string{BaselineFsync}
		c.BaselineDir = t.TempDir()
		c.Duration = 1500 * time.Millisecond
	})
	sweep, _ := runScenario(t, ScenarioStat, func(c *Config) {
		c.Files = 4
		c.SweepRates = []float64{20, 40}
		c.Duration = 200 * time.Millisecond
	})
	for name, rep := range map[string]*Report{"series": series, "sweep": sweep} {
		var buf bytes.Buffer
		if err := rep.WritePNG(&buf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		img, err := png.Decode(&buf)
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() != int(plotWidth.Points()*plotDPI/72) || b.Dy() != int(plotHeight.Points()*plotDPI/72) {
			t.Errorf("%s: image is %v", name, b)
		}
	}
}
