package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/api/client"
)

// Scenario names, as --scenario takes them.
const (
	// ScenarioSmallPut writes a new SizeBytes (default 1 KiB) file per operation (PUT).
	ScenarioSmallPut = "small-put"
	// ScenarioSmallGet reads one of Files pre-written files per operation (GET).
	ScenarioSmallGet = "small-get"
	// ScenarioStat reads the metadata of one of Files pre-written files (HEAD).
	ScenarioStat = "stat"
	// ScenarioMixed reads (GET) with probability ReadRatio and otherwise overwrites (PUT)
	// one of Files pre-written files.
	ScenarioMixed = "mixed"
	// ScenarioAppendLog appends a SizeBytes (default 128 B) record to one of Files
	// (default 4) log files per operation (POST ?append).
	ScenarioAppendLog = "append-log"
	// ScenarioObjectPut writes a new SizeBytes (default 1 MiB) file per operation,
	// streamed.
	ScenarioObjectPut = "object-put"
	// ScenarioObjectGet reads one of Files (default 4) pre-written SizeBytes files whole.
	ScenarioObjectGet = "object-get"
	// ScenarioList lists a directory of Files (default 100) entries, every page.
	ScenarioList = "list"
	// ScenarioSnapshot mints a snapshot (a leased read point, one day's lease) of a
	// workbench holding Files (default 100) SizeBytes files per operation. Minting is
	// O(1) in the workbench's size (BENCHMARKS.md): compare runs at 10 and 10,000 files.
	// Past liveSnapshots snapshots an operation also retires the oldest one it minted, so
	// a run stays below the server's cap of snapshots per workbench.
	ScenarioSnapshot = "snapshot"
	// ScenarioRestore restores a snapshot of a workbench holding Files (default 100)
	// SizeBytes files into a new workbench per operation, and waits until it is complete
	// (O(paths) metadata, no body copied).
	ScenarioRestore = "restore"
	// ScenarioMCP is an agent's tool mix over MCP streamable HTTP, with the official
	// go-sdk client, on a workbench of Files (default 64) SizeBytes text files: per 100
	// calls, 30 read, 15 stat, 15 list, 15 put_file (new file), 10 append, 10 grep and
	// 5 search (mcpMix). The report breaks latency down by tool.
	ScenarioMCP = "mcp"
)

// Scenarios lists every scenario name, in the order the help text shows them.
var Scenarios = []string{
	ScenarioSmallPut, ScenarioSmallGet, ScenarioStat, ScenarioMixed, ScenarioAppendLog,
	ScenarioObjectPut, ScenarioObjectGet, ScenarioList, ScenarioSnapshot, ScenarioRestore, ScenarioMCP,
}

// scenarioDefaults are the body size in bytes and file count a scenario uses when the
// configuration leaves them 0.
var scenarioDefaults = map[string]struct {
	sizeBytes int64
	files     int
}{
	ScenarioSmallPut:  {1 << 10, 0},
	ScenarioSmallGet:  {1 << 10, 256},
	ScenarioStat:      {1 << 10, 256},
	ScenarioMixed:     {1 << 10, 256},
	ScenarioAppendLog: {128, 4},
	ScenarioObjectPut: {1 << 20, 0},
	ScenarioObjectGet: {1 << 20, 4},
	ScenarioList:      {1 << 10, 100},
	ScenarioSnapshot:  {1 << 10, 100},
	ScenarioRestore:   {1 << 10, 100},
	ScenarioMCP:       {1 << 10, 64},
}

// setupConcurrency is the number of files written at once while preparing a scenario.
const setupConcurrency = 16

// listPageLimit is the page size of the list scenario (the server's maximum).
const listPageLimit = 1000

// Paths the scenarios use inside the benchmark's workbench.
const (
	readDir = "input/bench/read"
	listDir = "input/bench/list"
	// treeDir holds the files of the snapshot and restore scenarios' workbench.
	treeDir = "input/bench/tree"
)

// restoreSnapshotName names the snapshot the restore scenario restores from.
const restoreSnapshotName = "bench-restore-source"

// snapshotTTLDays is the lease of the snapshots the scenarios mint: the shortest there is,
// so a benchmark's snapshots do not hold history for a week.
const snapshotTTLDays = 1

// scenario is one scenario bound to a server, a workbench and its parameters. Its Ops
// talk to Cairn only through api/client, but for the stat and list scenarios' lean lanes
// (Config.LeanHTTP, lean.go, lean_list.go), which address the same URLs, and the MCP
// scenario, which calls tools over MCP (mcp.go, lean_mcp.go).
type scenario struct {
	name      string
	c         *client.Client
	agent, wb string
	sizeBytes int64
	files     int
	readRatio float64
	// workers is the most operations the load has in flight at once.
	workers int
	// nonce makes this run's bodies differ from every other run's.
	nonce uint64
	// mcp makes the MCP scenario's calls (the go-sdk's sessions, or the lean lane with
	// Config.LeanHTTP); nil for the other scenarios.
	mcp mcpCaller
	// lean is the stat scenario's lean lane; nil unless Config.LeanHTTP.
	lean *leanStat
	// leanList is the list scenario's lean lane; nil unless Config.LeanHTTP.
	leanList *leanList
	// minted are the snapshot scenario's live snapshots, oldest first (minted.go).
	minted mintedSnapshots
}

// setup creates the workbench and writes the files the scenario reads.
func (s *scenario) setup(ctx context.Context) error {
	if _, err := s.c.CreateWorkbench(ctx, s.agent, s.wb); err != nil {
		return fmt.Errorf("create workbench %q for agent %q: %w", s.wb, s.agent, err)
	}
	var dir string
	switch s.name {
	case ScenarioSmallGet, ScenarioStat, ScenarioMixed, ScenarioObjectGet:
		dir = readDir
	case ScenarioList:
		dir = listDir
	case ScenarioSnapshot, ScenarioRestore:
		dir = treeDir
	case ScenarioMCP:
		return s.setupMCP(ctx)
	default:
		return nil
	}
	pathOf := func(i uint64) string { return filePath(dir, i) }
	if err := s.writeFiles(ctx, pathOf, func(i uint64) io.Reader { return payload(s.nonce, ^i, s.sizeBytes) }, "application/octet-stream"); err != nil {
		return err
	}
	if s.name == ScenarioRestore {
		if _, err := s.c.Snapshot(ctx, s.agent, s.wb, client.SnapshotRequest{Name: restoreSnapshotName, TTLDays: snapshotTTLDays}); err != nil {
			return fmt.Errorf("setup: snapshot %s: %w", s.wb, err)
		}
	}
	return nil
}

// writeFiles writes the Files files pathOf(i) with the bodies body(i), setupConcurrency at
// a time.
func (s *scenario) writeFiles(ctx context.Context, pathOf func(i uint64) string, body func(i uint64) io.Reader, contentType string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(setupConcurrency)
	for i := range s.files {
		g.Go(func() error {
			path := pathOf(uint64(i))
			_, err := s.c.PutFile(gctx, s.agent, s.wb, path, body(uint64(i)), client.PutOptions{ContentType: contentType, Size: s.sizeBytes})
			if err != nil {
				return fmt.Errorf("setup: write %s: %w", path, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// op returns the scenario's Op for one phase. phase keeps the paths the write scenarios
// create apart from the other phases' of the same run.
func (s *scenario) op(phase int) (Op, error) {
	prefix := "input/bench/p" + strconv.Itoa(phase)
	nonce := s.nonce + uint64(phase+1)*0x9e3779b97f4a7c15
	put := func(ctx context.Context, path string, seq uint64) error {
		var body io.Reader
		if s.sizeBytes <= smallBodyBytes {
			body = bytes.NewReader(payloadBytes(nonce, seq, s.sizeBytes))
		} else {
			body = payload(nonce, seq, s.sizeBytes)
		}
		_, err := s.c.PutFile(ctx, s.agent, s.wb, path, body, client.PutOptions{ContentType: "application/octet-stream", Size: s.sizeBytes})
		return err
	}
	get := func(ctx context.Context, path string) error {
		body, _, err := s.c.GetFile(ctx, s.agent, s.wb, path, client.GetOptions{})
		if err != nil {
			return err
		}
		return readWhole(body, path, s.sizeBytes)
	}
	readKey := func(seq uint64) string { return filePath(readDir, mix(seq)%uint64(s.files)) }

	switch s.name {
	case ScenarioSmallPut, ScenarioObjectPut:
		return OpFunc(func(ctx context.Context, seq uint64) error {
			return put(ctx, filePath(prefix, seq), seq)
		}), nil
	case ScenarioSmallGet, ScenarioObjectGet:
		return OpFunc(func(ctx context.Context, seq uint64) error {
			return get(ctx, readKey(seq))
		}), nil
	case ScenarioStat:
		if s.lean != nil {
			return OpFunc(func(ctx context.Context, seq uint64) error {
				return s.lean.stat(ctx, readKey(seq))
			}), nil
		}
		return OpFunc(func(ctx context.Context, seq uint64) error {
			_, err := s.c.Stat(ctx, s.agent, s.wb, readKey(seq))
			return err
		}), nil
	case ScenarioMixed:
		isRead := func(seq uint64) bool { return unitFloat(mix(mix(seq))) < s.readRatio }
		label := func(seq uint64) string {
			if isRead(seq) {
				return "read (GET)"
			}
			return "write (PUT)"
		}
		return labeledOp{label: label, op: OpFunc(func(ctx context.Context, seq uint64) error {
			path := filePath(readDir, mix(seq)%uint64(s.files))
			if isRead(seq) {
				// A read of a file a concurrent write replaces sees either body; both
				// have the configured size.
				return get(ctx, path)
			}
			return put(ctx, path, seq)
		})}, nil
	case ScenarioAppendLog:
		return OpFunc(func(ctx context.Context, seq uint64) error {
			path := fmt.Sprintf("logs/bench/p%d/log-%d.log", phase, seq%uint64(s.files))
			_, err := s.c.Append(ctx, s.agent, s.wb, path, bytes.NewReader(logRecord(seq, s.sizeBytes)),
				client.AppendOptions{ContentType: "text/plain", Size: s.sizeBytes})
			return err
		}), nil
	case ScenarioSnapshot:
		return OpFunc(func(ctx context.Context, _ uint64) error {
			snap, err := s.c.Snapshot(ctx, s.agent, s.wb, client.SnapshotRequest{TTLDays: snapshotTTLDays})
			if err != nil {
				return err
			}
			// A workbench holds at most --max-snapshots-per-workbench live snapshots
			// (256 by default): keep the newest liveSnapshots, retiring the oldest.
			if old, ok := s.minted.push(snap.SnapshotID); ok {
				if _, err := s.c.RetireSnapshot(ctx, s.agent, s.wb, client.SnapshotID(old), "bench"); err != nil {
					return fmt.Errorf("retire snapshot %d: %w", old, err)
				}
			}
			return nil
		}), nil
	case ScenarioRestore:
		return OpFunc(func(ctx context.Context, seq uint64) error {
			dest := restoreDestination(s.wb, phase, seq)
			res, err := s.c.Restore(ctx, s.agent, s.wb, client.RestoreRequest{Destination: dest, AtSnapshot: client.SnapshotName(restoreSnapshotName)})
			if err != nil {
				return err
			}
			if res.State != "complete" || res.RestoredFiles < int64(s.files) {
				return fmt.Errorf("restore into %s: state %q with %d files, want complete with %d: %w", dest, res.State, res.RestoredFiles, s.files, io.ErrUnexpectedEOF)
			}
			return nil
		}), nil
	case ScenarioMCP:
		return s.mcpOp(phase), nil
	case ScenarioList:
		if s.leanList != nil {
			return OpFunc(func(ctx context.Context, _ uint64) error { return s.leanList.list(ctx) }), nil
		}
		return OpFunc(func(ctx context.Context, _ uint64) error {
			var cursor string
			entries := 0
			for {
				page, err := s.c.List(ctx, s.agent, s.wb, listDir, client.ListOptions{Cursor: cursor, Limit: listPageLimit})
				if err != nil {
					return err
				}
				entries += len(page.Entries)
				if page.NextCursor == "" {
					break
				}
				cursor = page.NextCursor
			}
			if entries != s.files {
				return fmt.Errorf("list %s: %d entries, want %d: %w", listDir, entries, s.files, io.ErrUnexpectedEOF)
			}
			return nil
		}), nil
	}
	return nil, fmt.Errorf("scenario %q: %w", s.name, ErrUnknownScenario)
}

// restoreDestination names the workbench restore operation seq of phase creates.
func restoreDestination(wb string, phase int, seq uint64) string {
	return fmt.Sprintf("%s-r%d-%d", wb, phase, seq)
}

// smallBodyBytes is the largest body generated in memory (and sent with a known length
// from a byte slice); larger bodies are generated as they stream.
const smallBodyBytes = 64 << 10

// filePath is the path of file i under dir.
func filePath(dir string, i uint64) string {
	return fmt.Sprintf("%s/%09d", dir, i)
}

// logRecord is a size-byte text line naming seq, like an agent's log line.
func logRecord(seq uint64, size int64) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'x'
	}
	head := fmt.Appendf(nil, "seq=%d ", seq)
	copy(b, head)
	if size > 0 {
		b[size-1] = '\n'
	}
	return b
}
