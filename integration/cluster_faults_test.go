package integration

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// The faults of the linearizability test, one round at a time, with the time each kind
// took to elect a ready leader and to acknowledge a write again (the FAULT lines of the
// test log). A round injects ten faults, one after the other, while the clients run:
//
//	kill -9 of the leader, restarted;
//	SIGSTOP of the leader until the others elected a leader and acknowledged writes, with
//	reads sent to it while it is stopped and right after SIGCONT (the history that once
//	caught a deposed leader serving its old state);
//	the leader isolated from both peers (a minority of one against a majority);
//	a follower isolated;
//	the link from the leader to a follower cut one way;
//	a bridge: the leader and one follower cannot reach each other, both reach the third;
//	the leader cut from etcd, then a follower cut from etcd;
//	kill -9 of a follower, restarted; kill -9 of the leader once more.
type faultSchedule struct {
	t        *testing.T
	lc       *linCluster
	rec      *linRecorder
	progress func(what string)
	paths    []string

	mu      sync.Mutex
	timings map[string][]faultTiming
	faults  int
}

// faultTiming is one fault's: when it began (since the recorder's start), how long until a
// ready leader other than the faulted node was seen (0: the fault needs no election), and
// until the first write that began after the fault was acknowledged (computed from the
// history at report time).
type faultTiming struct {
	at       time.Duration
	election time.Duration
}

// resumeReads is how many reads go to a paused leader after it resumes.
const resumeReads = 30

func (fs *faultSchedule) begin(kind string) time.Time {
	fs.t.Logf("fault %d: %s", fs.faults+1, kind)
	fs.faults++
	return time.Now()
}

func (fs *faultSchedule) record(kind string, began time.Time, election time.Duration) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.timings == nil {
		fs.timings = map[string][]faultTiming{}
	}
	fs.timings[kind] = append(fs.timings[kind], faultTiming{at: began.Sub(fs.rec.t0), election: election})
}

// newLeader waits until a node other than old (and not skipped) is the shard's ready
// leader and returns how long after began that was seen.
func (fs *faultSchedule) newLeader(old int, began time.Time) time.Duration {
	fs.t.Helper()
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	retry.Within(fs.t, 60*time.Second, fmt.Sprintf("a ready leader other than n%d", old), func() error {
		for i := range fs.lc.servers {
			if i == old || !fs.lc.servers[i].Running() {
				continue
			}
			resp, err := hc.Get(fs.lc.url(i) + "/metrics")
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), `cairn_shard_ready{shard="0"} 1`) {
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	return time.Since(began)
}

func (fs *faultSchedule) round() {
	lc, t := fs.lc, fs.t

	l := lc.leader(t)
	began := fs.begin(fmt.Sprintf("kill -9 of leader n%d", l))
	lc.servers[l].Kill()
	el := fs.newLeader(l, began)
	fs.progress("with the leader killed")
	fs.record("kill-leader", began, el)
	lc.restart(l)
	fs.progress("after the restart")

	fs.pauseLeader()

	l = lc.leader(t)
	began = fs.begin(fmt.Sprintf("leader n%d isolated (minority of one)", l))
	lc.net.Isolate(l)
	el = fs.newLeader(l, began)
	fs.progress("with the leader isolated")
	fs.record("isolate-leader", began, el)
	lc.net.Heal()
	fs.progress("after healing")

	l = lc.leader(t)
	f := (l + 1) % 3
	began = fs.begin(fmt.Sprintf("follower n%d isolated", f))
	lc.net.Isolate(f)
	fs.progress("with a follower isolated")
	fs.record("isolate-follower", began, 0)
	lc.net.Heal()

	l = lc.leader(t)
	f = (l + 1) % 3
	began = fs.begin(fmt.Sprintf("link n%d → n%d cut one way", l, f))
	lc.net.Cut(l, f)
	fs.progress("with one link cut")
	fs.record("cut-one-way", began, 0)
	lc.net.Heal()

	l = lc.leader(t)
	c := (l + 2) % 3
	began = fs.begin(fmt.Sprintf("bridge: n%d and n%d cut from each other, both reach n%d", l, c, (l+1)%3))
	lc.net.Cut(l, c)
	lc.net.Cut(c, l)
	fs.progress("across a bridge")
	fs.record("bridge", began, 0)
	lc.net.Heal()
	fs.progress("after the bridge healed")

	l = lc.leader(t)
	began = fs.begin(fmt.Sprintf("leader n%d cut from etcd", l))
	lc.etcd[l].Block()
	fs.progress("with the leader cut from etcd")
	fs.record("etcd-cut-leader", began, 0)
	lc.etcd[l].Unblock()
	f = (l + 1) % 3
	began = fs.begin(fmt.Sprintf("follower n%d cut from etcd", f))
	lc.etcd[f].Block()
	fs.progress("with a follower cut from etcd")
	fs.record("etcd-cut-follower", began, 0)
	lc.etcd[f].Unblock()

	l = lc.leader(t)
	f = (l + 1) % 3
	began = fs.begin(fmt.Sprintf("kill -9 of follower n%d", f))
	lc.servers[f].Kill()
	fs.progress("with a follower killed")
	fs.record("kill-follower", began, 0)
	lc.restart(f)
	l = lc.leader(t)
	began = fs.begin(fmt.Sprintf("kill -9 of leader n%d", l))
	lc.servers[l].Kill()
	el = fs.newLeader(l, began)
	fs.progress("with the leader killed again")
	fs.record("kill-leader", began, el)
	lc.restart(l)
	fs.progress("at the end of the round")
}

// pauseLeader stops the leader with SIGSTOP while readers send it gets, until the others
// elected a leader and acknowledged writes without it (the moment the old leader's state
// went stale), and goes on reading through it after SIGCONT until readers have sent it
// resumeReads more reads.
func (fs *faultSchedule) pauseLeader() {
	lc, t := fs.lc, fs.t
	l := lc.leader(t)
	began := fs.begin(fmt.Sprintf("SIGSTOP of leader n%d", l))
	lc.servers[l].Pause()
	stopReads := make(chan struct{})
	var sent atomic.Int64 // reads sent to the paused node
	var readers sync.WaitGroup
	for k := range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-stopReads:
					return
				default:
				}
				// Each read goes to the paused node first: queued while it is stopped,
				// answered by it once it runs again.
				sent.Add(1)
				fs.rec.do(t, 100+k, l, linInput{Kind: linGet, Path: fs.paths[(k+i)%len(fs.paths)]})
			}
		}()
	}
	el := fs.newLeader(l, began)
	fs.progress("with the leader paused")
	lc.servers[l].Resume()
	resumed := time.Now()
	from := sent.Load()
	retry.Within(t, 60*time.Second, "reads sent to the resumed node", func() error {
		if n := sent.Load() - from; n < resumeReads {
			return fmt.Errorf("%d sent since the resume", n)
		}
		return nil
	})
	close(stopReads)
	readers.Wait()
	fs.record("pause-leader", began, el)
	t.Logf("n%d resumed after %v; %d reads went to it after the resume, for %v", l, resumed.Sub(began).Round(time.Millisecond),
		sent.Load()-from, time.Since(resumed).Round(time.Millisecond))
	fs.progress("after the resume")
}

// report logs, per kind of fault, the election and recovery times: FAULT lines.
func (fs *faultSchedule) report() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	writes := fs.rec.writeReturns()
	kinds := make([]string, 0, len(fs.timings))
	for k := range fs.timings {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		var elections, recoveries []time.Duration
		for _, ft := range fs.timings[k] {
			if ft.election > 0 {
				elections = append(elections, ft.election)
			}
			if r, ok := firstAfter(writes, ft.at); ok {
				recoveries = append(recoveries, r)
			}
		}
		fs.t.Logf("FAULT %-18s n=%d election median %v max %v; first acknowledged write after the fault median %v max %v",
			k, len(fs.timings[k]), median(elections), maxOf(elections), median(recoveries), maxOf(recoveries))
	}
	fs.t.Logf("FAULT total %d faults", fs.faults)
}

// firstAfter returns how long after `at` the first write that began at or after it was
// acknowledged.
func firstAfter(writes [][2]time.Duration, at time.Duration) (time.Duration, bool) {
	best, ok := time.Duration(0), false
	for _, w := range writes {
		if w[0] >= at && (!ok || w[1]-at < best) {
			best, ok = w[1]-at, true
		}
	}
	return best, ok
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

func maxOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds).Round(time.Millisecond)
}
