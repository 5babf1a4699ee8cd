package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/client"
)

func TestTheLeanStatLaneStatsTheScenariosFiles(t *testing.T) {
	rep, _ := runScenario(t, ScenarioStat, func(c *Config) { c.LeanHTTP = true; c.Files = 4 })
	if !rep.Params.LeanHTTP {
		t.Error("the report's parameters do not say the run used the lean client")
	}
}

// The lean lane checks every answer as Stat would: a missing file, or one whose size is
// not the scenario's, is a failed operation naming what was wrong.
func TestTheLeanStatLaneRefusesAWrongAnswer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Server, cfg.Agent, cfg.Workbench, cfg.Scenario = newNode(t), "bench", "w-lean", ScenarioStat
	cfg.LeanHTTP, cfg.SizeBytes = true, 8
	c := client.New(cfg.Server, nil)
	if _, err := c.PutFile(t.Context(), cfg.Agent, cfg.Workbench, "input/a b/f", bytes.NewReader(make([]byte, 8)), client.PutOptions{Size: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutFile(t.Context(), cfg.Agent, cfg.Workbench, "input/short", bytes.NewReader(make([]byte, 7)), client.PutOptions{Size: 7}); err != nil {
		t.Fatal(err)
	}
	l, err := newLeanStat(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if err := l.stat(t.Context(), "input/a b/f"); err != nil {
		t.Errorf("a file of the scenario's size, at a path to escape: %v", err)
	}
	for path, want := range map[string]string{
		"input/missing": "status 404",
		"input/short":   "Content-Length 7",
	} {
		if err := l.stat(t.Context(), path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("stat %s: %v, want an error saying %q", path, err, want)
		}
	}
}
