package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// feedID orders the frame ids of a change-feed stream ("V.I" and "V.I.1").
type feedID [3]uint64

func parseFeedID(id string) (feedID, error) {
	var out feedID
	parts := strings.Split(id, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return out, fmt.Errorf("frame id %q", id)
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return out, fmt.Errorf("frame id %q: %v", id, err)
		}
		out[i] = n
	}
	if len(parts) == 3 {
		out[2]++ // after the event's own frame (which has no third part)
	}
	return out, nil
}

func (a feedID) less(b feedID) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// feedReader follows agent's feed across nodes: its first stream lasts until its node
// goes away; every later one it drops after dropEvery frames (or when its node goes
// away), and it resumes on the next live node after the last frame it received
// (Last-Event-ID). It records every frame in order.
type feedReader struct {
	servers   []*framework.Process
	alive     func(*framework.Process) bool
	agent     string
	dropEvery int

	mu       sync.Mutex
	frames   []client.FeedEvent
	resumes  int
	problems []string
	// firstBroke is the error that ended the first stream (nil while it runs).
	firstBroke error
}

func (r *feedReader) run(ctx context.Context, first int) {
	node, last := first, ""
	for ctx.Err() == nil {
		// Open the feed on the next live node after the last frame, retrying (bounded) while
		// the cluster elects or a node is down.
		var (
			st     *client.EventStream
			cancel context.CancelFunc = func() {}
		)
		_, err := retry.Until(feedOpenBound, func() error {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %v", retry.ErrStop, ctx.Err())
			}
			s := r.servers[node%len(r.servers)]
			node++
			if !r.alive(s) {
				return fmt.Errorf("%s is down", s.URL)
			}
			var sctx context.Context
			sctx, cancel = context.WithCancel(ctx)
			var err error
			if st, err = framework.REST(s.URL, "").Events(sctx, r.agent, client.EventsOptions{After: last}); err != nil {
				cancel()
				var ce *client.Error
				if errors.As(err, &ce) && !ce.Retryable {
					return fmt.Errorf("%w: open the feed on %s after %q: %v", retry.ErrStop, s.URL, last, err)
				}
				return err
			}
			return nil
		})
		if err != nil {
			if ctx.Err() == nil {
				r.problem("open the feed after %q: %v", last, err)
			}
			return
		}
		firstStream := node == first+1
		for n := 0; firstStream || n < r.dropEvery; n++ {
			ev, err := st.Next()
			if err != nil {
				if firstStream {
					r.mu.Lock()
					r.firstBroke = err
					r.mu.Unlock()
				}
				break // the node went away (or shut down): resume elsewhere
			}
			r.record(ev)
			last = ev.ID
		}
		st.Close()
		cancel()
		r.mu.Lock()
		r.resumes++
		r.mu.Unlock()
	}
}

// feedOpenBound bounds the retries of one reopening of the feed.
const feedOpenBound = 60 * time.Second

func (r *feedReader) record(ev client.FeedEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, err := parseFeedID(ev.ID)
	if err != nil {
		r.problems = append(r.problems, err.Error())
	}
	if n := len(r.frames); n > 0 {
		if prev, _ := parseFeedID(r.frames[n-1].ID); !prev.less(cur) {
			r.problems = append(r.problems, fmt.Sprintf("frame %s after %s: repeated or out of order", ev.ID, r.frames[n-1].ID))
		}
	}
	r.frames = append(r.frames, ev)
}

func (r *feedReader) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// putPaths returns the paths of the file.put frames received so far.
func (r *feedReader) putPaths() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]bool{}
	for _, f := range r.frames {
		if f.Event != "file.put" {
			continue
		}
		var d struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(f.Data, &d) == nil {
			out[d.Path] = true
		}
	}
	return out
}

// TestChangeFeedExactlyOnceAcrossLeaderKill9 is issue 15's acceptance test of the change
// feed: a client that drops its stream and resumes with Last-Event-ID (often on another
// node, and once because the node it read from, the shard's leader, was killed with
// SIGKILL) sees every event exactly once, in order: every acknowledged write is in what it
// saw, and what it saw is exactly the feed as a fresh reader reads it afterwards.
func TestChangeFeedExactlyOnceAcrossLeaderKill9(t *testing.T) {
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 3, Shards: 1})
	servers := pc.Nodes
	const agent, wb = "feed", "w"
	if code, b := clusterDo(http.MethodPut, servers[0].URL+"/v1/agents/"+agent+"/workbenches/"+wb, nil, 60*time.Second); code/100 != 2 {
		t.Fatalf("create workbench: %d %s", code, b)
	}
	leader := shardLeader(t, servers, 0, 3)
	first := 0
	for i, s := range servers {
		if s == leader {
			first = i // the reader starts on the node that will be killed
		}
	}

	var killed atomic.Pointer[framework.Process] // read by the goroutines; Running is the test's
	alive := func(s *framework.Process) bool { return killed.Load() != s }
	ctx, stopReader := context.WithCancel(context.Background())
	reader := &feedReader{servers: servers, alive: alive, agent: agent, dropEvery: 25}
	readerDone := make(chan struct{})
	go func() { defer close(readerDone); reader.run(ctx, first) }()
	defer func() { stopReader(); <-readerDone }()

	// Writers through every node, each write with an Idempotency-Key retried on another
	// node until acknowledged (as a client that retries must). A write that stays
	// unacknowledged for 20 s is left out: the test checks acknowledged writes only.
	load := framework.StartLoad(t, framework.LoadOptions{
		Writers: 3,
		Pause:   30 * time.Millisecond,
		Next: func(w, i int) framework.Write {
			name := fmt.Sprintf("input/w%d-%04d", w, i)
			return framework.Write{Agent: agent, Workbench: wb, Path: name, Body: name, Key: "feed-" + name}
		},
		Target: func(w, i, attempt int) (string, bool) {
			target := servers[(w+i+attempt)%3]
			return target.URL, alive(target)
		},
		ContentType: "text/plain",
		Patience:    20 * time.Second,
	})
	retry.Within(t, 60*time.Second, "writes acknowledged and followed before the kill", func() error {
		if n := load.Acked(); n < 60 || len(reader.putPaths()) < 30 {
			return fmt.Errorf("%d acknowledged, %d followed", n, len(reader.putPaths()))
		}
		return nil
	})
	killed.Store(leader)
	leader.Kill()
	beforeKill := load.Acked()
	retry.Within(t, 60*time.Second, "writes acknowledged after the kill", func() error {
		if n := load.Acked(); n < beforeKill+60 {
			return fmt.Errorf("%d acknowledged since the kill", n-beforeKill)
		}
		return nil
	})
	acked := load.Stop()

	// Every acknowledged write reaches the reader.
	retry.Within(t, 60*time.Second, "the reader saw every acknowledged write", func() error {
		got := reader.putPaths()
		for _, a := range acked {
			if !got[a.Path] {
				return fmt.Errorf("%s (of %d acknowledged) not followed yet", a.Path, len(acked))
			}
		}
		return nil
	})
	stopReader()
	<-readerDone
	reader.mu.Lock()
	defer reader.mu.Unlock()
	if reader.firstBroke == nil || errors.Is(reader.firstBroke, context.Canceled) {
		t.Fatalf("the reader's stream on the killed leader did not break at the kill: %v", reader.firstBroke)
	}
	if len(reader.problems) > 0 {
		t.Fatalf("the reader: %s", strings.Join(reader.problems, "; "))
	}

	// A fresh reader on a survivor reads the same frames, exactly: nothing skipped,
	// nothing repeated across the resumes and the kill.
	var survivor *framework.Process
	for _, s := range servers {
		if alive(s) {
			survivor = s
		}
	}
	var fresh []client.FeedEvent
	fctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := framework.REST(survivor.URL, "").FollowEvents(fctx, agent, client.EventsOptions{NoFollow: true}, func(ev client.FeedEvent) error {
		fresh = append(fresh, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	followed := reader.frames
	if len(fresh) < len(followed) {
		t.Fatalf("a fresh read has %d frames, the follower %d", len(fresh), len(followed))
	}
	for i, f := range followed {
		if f.ID != fresh[i].ID || f.Event != fresh[i].Event || string(f.Data) != string(fresh[i].Data) {
			t.Fatalf("frame %d: followed %s %s %s, fresh %s %s %s", i, f.ID, f.Event, f.Data, fresh[i].ID, fresh[i].Event, fresh[i].Data)
		}
	}
	t.Logf("%d frames followed over %d streams (the first, on the leader, ended by the kill: %v), %d writes acknowledged (%d after the kill)", len(followed), reader.resumes, reader.firstBroke, len(acked), int64(len(acked))-beforeKill)
}

// `cairn events` prints the feed one JSON line per event and, with --after, resumes after
// the id of a printed line.
func TestCLIEventsPrintsAndResumes(t *testing.T) {
	t.Parallel()
	srv := framework.StartProcess(t, cairnBin, t.TempDir())
	for _, p := range []string{"input/a", "input/b", "outputs/c"} {
		if code, b := clusterDo(http.MethodPut, fileURL(srv.URL, "cli", "wb", p), []byte(p), 30*time.Second); code/100 != 2 {
			t.Fatalf("put %s: %d %s", p, code, b)
		}
	}
	lines := func(args ...string) []map[string]any {
		t.Helper()
		r := mustCLI(t, cliOptions{}, append([]string{"events", "--agent", "cli", "--server=" + srv.URL}, args...)...)
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q: %v\n%s", l, err, r)
			}
			out = append(out, m)
		}
		return out
	}
	all := lines()
	var kinds []string
	for _, l := range all {
		kinds = append(kinds, l["event"].(string))
	}
	if strings.Join(kinds, " ") != "workbench.create file.put file.put file.put" {
		t.Fatalf("events: %v", all)
	}
	if d := all[1]["data"].(map[string]any); d["path"] != "input/a" || d["workbench"] != "wb" {
		t.Fatalf("first put: %v", d)
	}
	rest := lines("--after", all[1]["id"].(string), "--prefix", "input", "--openwop")
	if len(rest) != 3 || rest[0]["event"] != "workspace.updated" || rest[1]["id"] != all[2]["id"] {
		t.Fatalf("after %v with --prefix input --openwop: %v", all[1]["id"], rest)
	}
	if r := runCLI(t, cliOptions{}, "events", "--agent", "nobody", "--server="+srv.URL); r.code == 0 || !strings.Contains(r.stderr, "NotFound") {
		t.Fatalf("a missing root: %s", r)
	}
}
