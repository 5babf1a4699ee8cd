package framework

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// A Write is one file a Load's writer PUTs: PUT {base}/v1/agents/{Agent}/workbenches/
// {Workbench}/files/{Path}.
type Write struct {
	Writer, Seq int // the writer (from 0) and its how-manieth write (from 0)
	Agent       string
	Workbench   string
	Path        string // a plain path inside the workbench ("input/f1"), not escaped
	Body        string
	Key         string // its Idempotency-Key, the same on every try; "" sends none
}

// An Ack is a write a node acknowledged (2xx).
type Ack struct {
	Write
	Took time.Duration // from its first try to the acknowledgement
}

// LoadOptions shape a Load.
type LoadOptions struct {
	// Writers is how many goroutines write at once; each makes its writes one after the
	// other, so a writer's acknowledgements come in the order of its writes.
	Writers int
	// Pause is how long a writer waits before each write (0: none).
	Pause time.Duration
	// Next returns writer w's i'th write; Writer and Seq are filled in by the Load.
	Next func(w, i int) Write
	// Target returns the base URL ("http://host:port") of try attempt (from 0) of writer
	// w's i'th write, or ok false to count the try as failed without sending it (the
	// node is known to be down).
	Target func(w, i, attempt int) (base string, ok bool)
	// ContentType of every PUT; "application/octet-stream" when empty.
	ContentType string
	// Timeout bounds one request; 10 s when zero.
	Timeout time.Duration
	// Patience is how long a write is tried again (paced by retry.Until, through Target's
	// next base) before the writer gives it up; 0: one try. Stop ends the tries of a write
	// that is not Required, which then counts neither as acknowledged nor as failed.
	Patience time.Duration
	// Retry says which answers are tried again (status 0: no answer, the body then
	// names the transport error); nil: every answer but a 2xx.
	Retry func(status int, body []byte) bool
	// Required makes a write given up, or answered with what Retry refuses, the Load's
	// Err, and stops its writer; otherwise the writer records it in Failures and goes on.
	Required bool
}

// Load is writers that PUT files through a cluster's nodes in the background until
// Stop, and record every write that was acknowledged: the load the cluster tests keep
// up across kills, partitions, restarts and upgrades, after which every acknowledged
// write must read back.
type Load struct {
	o      LoadOptions
	hc     *http.Client
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	acked  atomic.Int64
	tries  atomic.Int64 // tries answered with what Retry accepts, then tried again
	mu     sync.Mutex
	acks   []Ack
	failed []string // writes given up or refused, with the last answer
	err    error    // the first failure of a Required write
}

// StartLoad starts o.Writers writers; they run until Stop, which t's cleanup calls too.
func StartLoad(t testing.TB, o LoadOptions) *Load {
	if o.ContentType == "" {
		o.ContentType = "application/octet-stream"
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Retry == nil {
		o.Retry = func(status int, _ []byte) bool { return status/100 != 2 }
	}
	l := &Load{o: o, hc: &http.Client{Timeout: o.Timeout}, stop: make(chan struct{})}
	for w := range o.Writers {
		l.wg.Add(1)
		go l.writer(w)
	}
	t.Cleanup(func() { l.Stop() })
	return l
}

// Acked is how many writes were acknowledged so far.
func (l *Load) Acked() int64 { return l.acked.Load() }

// Retried is how many tries were not acknowledged and tried again.
func (l *Load) Retried() int64 { return l.tries.Load() }

// Acks returns the writes acknowledged so far, each writer's in the order it wrote them.
func (l *Load) Acks() []Ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Ack(nil), l.acks...)
}

// Failures returns the writes given up so far (not acknowledged within Patience, or
// answered with what Retry refuses), each with its last answer.
func (l *Load) Failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.failed...)
}

// Err returns the first failure of a Required write, nil while there is none.
func (l *Load) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Stop stops the writers, waits until they returned (a write under way finishes its
// try first) and returns every acknowledged write. It may be called again.
func (l *Load) Stop() []Ack {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
	return l.Acks()
}

func (l *Load) writer(w int) {
	defer l.wg.Done()
	for i := 0; ; i++ {
		if l.o.Pause > 0 {
			select {
			case <-l.stop:
				return
			case <-time.After(l.o.Pause):
			}
		} else {
			select {
			case <-l.stop:
				return
			default:
			}
		}
		wr := l.o.Next(w, i)
		wr.Writer, wr.Seq = w, i
		if !l.write(wr) && l.o.Required {
			return
		}
	}
}

// write tries wr until it is acknowledged, refused or given up; it reports whether the
// writer may go on. The tries are paced and bounded by retry.Until (Patience).
func (l *Load) write(wr Write) bool {
	began := time.Now()
	attempt, last := 0, ""
	stopped := errors.New("stopped")
	_, err := retry.Until(l.o.Patience, func() error {
		if attempt > 0 {
			if !l.o.Required && l.isStopped() {
				return fmt.Errorf("%w: %w", retry.ErrStop, stopped) // given up by Stop
			}
			l.tries.Add(1)
		}
		base, ok := l.o.Target(wr.Writer, wr.Seq, attempt)
		status, body := 0, []byte("node down")
		if ok {
			status, body = l.put(base, wr)
		}
		attempt++
		if status/100 == 2 {
			return nil
		}
		last = fmt.Sprintf("PUT %s/%s/%s through %s (try %d): %d %.300s", wr.Agent, wr.Workbench, wr.Path, base, attempt, status, body)
		if !l.o.Retry(status, body) {
			return fmt.Errorf("%w: %s", retry.ErrStop, last)
		}
		return errors.New(last)
	})
	switch {
	case err == nil:
		l.mu.Lock()
		l.acks = append(l.acks, Ack{Write: wr, Took: time.Since(began)})
		l.mu.Unlock()
		l.acked.Add(1)
		return true
	case errors.Is(err, stopped):
		return true // neither acknowledged nor failed
	case !errors.Is(err, retry.ErrStop):
		last = fmt.Sprintf("not acknowledged within %v; last: %s", l.o.Patience, last)
	}
	l.mu.Lock()
	l.failed = append(l.failed, last)
	if l.o.Required && l.err == nil {
		l.err = fmt.Errorf("write %s: %s", wr.Path, last)
	}
	l.mu.Unlock()
	return false
}

// isStopped reports whether Stop was called.
func (l *Load) isStopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *Load) put(base string, wr Write) (int, []byte) {
	u := base + "/v1/agents/" + wr.Agent + "/workbenches/" + wr.Workbench + "/files/" + wr.Path
	req, err := http.NewRequest(http.MethodPut, u, strings.NewReader(wr.Body))
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Header.Set("Content-Type", l.o.ContentType)
	if wr.Key != "" {
		req.Header.Set("Idempotency-Key", wr.Key)
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, b
}
