package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
)

// Follower reads (DESIGN.md §6: "reads at a fixed shard version may be served by any
// replica that has applied that version").
//
// A GET or HEAD on the client port whose query is at_snapshot=<digits> (a snapshot id)
// and that addresses a workbench stat, list or file read is served by this node's replica
// of the root's shard when that replica does not lead and its applied state holds the
// snapshot alive; everything else (live reads, writes, a snapshot name, an id this
// replica does not know or no longer holds) is routed to the leader as before.
//
// Why this is safe:
//
//   - A snapshot pins its read version: until it is retired or reaped, no replica's FSM
//     prunes the history it reads (meta: the mint adds a hold on that version, retire and
//     reap release it), and the FSM is deterministic, so
//     a replica that applied the mint holds exactly the tree the leader holds at that
//     version. What a version shows never changes, so the answer does not depend on how
//     far this replica lags.
//   - The check and the read use one view (a copy-on-write copy of the applied state):
//     applies that land during the read (a retire, a prune) do not change what it sees.
//   - Only ids, never names: a name resolves to the newest snapshot minted with it, and a
//     lagging replica could resolve it to an older one.
//   - Bodies live in the blob store, which the leader's garbage collector sweeps. It
//     deletes a blob only after it has had no reference for GCGrace of command time, and
//     every blob the view reads is referenced at the view's command time. So no blob the
//     view reads is deleted before view time + GCGrace. A replica serves only while its
//     applied command time is less than GCGrace/2 behind its wall clock, which leaves the
//     read at least GCGrace/2 to finish (the grace is longer than the longest read stream,
//     DESIGN.md §6); with no leader the applied time stops, so a cut-off replica stops
//     serving after GCGrace/2 (30 minutes by default). Assumed: clocks agree well within
//     GCGrace, every node has the same GCGrace, and sweeps use it (an admin sweep with a
//     shorter grace shortens the margin for every reader, leader reads included).
//
// What a follower read does not promise: retire and expiry are not linearizable for it.
// A lagging replica may still serve a snapshot the leader retired a moment ago (its data
// is intact, see above). An expired lease is checked against both the applied command
// time and the wall clock, so a replica without a leader does not serve past the expiry.

// ServedByHeader names the response header, set on every response a cluster node gives
// for an agent root, that carries the id of the node that executed the request (led it,
// served it from a follower replica, or answered RoutingUnavailable). A node that forwards a request
// passes the executing node's header through unchanged.
const ServedByHeader = "Cairn-Served-By"

// followerReads serves snapshot-id reads from local replicas that do not lead.
type followerReads struct {
	c        *ClusterNode
	handler  http.Handler // REST over a Service whose only core is the request's view
	served   *prometheus.CounterVec
	maxStale time.Duration // GCGrace/2: see the package comment above
}

// newFollowerReads builds the follower read path: a second Workbench service over the
// node's blob store and configuration (same cursor key), whose core reads the applied view
// a request carries and refuses writes, behind a REST handler without metrics of its own
// (cairn_http_* count only the routed requests). It registers cairn_follower_reads_total.
func (c *ClusterNode) newFollowerReads() (*followerReads, error) {
	cfg := c.svc.Config()
	svc, err := workbench.NewWithCores(viewCores{}, c.n.blobs, cfg)
	if err != nil {
		return nil, err
	}
	if err := svc.InstrumentIntegrity(c.registry); err != nil {
		return nil, err
	}
	served := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_follower_reads_total",
		Help: "REST reads at a snapshot id served by this node's replica of the shard while it did not lead."},
		[]string{"shard"})
	if err := c.registry.Register(served); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		served = are.ExistingCollector.(*prometheus.CounterVec)
	}
	return &followerReads{c: c, served: served, maxStale: cfg.GCGrace / 2,
		handler: rest.NewHandler(svc, rest.Options{Ready: func() bool { return !c.closing.Load() }, Logger: c.log})}, nil
}

// serve serves r from the local replica of shard id if it qualifies (see the comment at
// the top of this file) and reports whether it did; false means the caller routes r as
// usual and nothing was written.
func (f *followerReads) serve(w http.ResponseWriter, r *http.Request, agent string, id int) bool {
	wb, snapID, ok := pinnedRead(r)
	if !ok {
		return false
	}
	rep := f.c.replica(id)
	if rep == nil || rep.Ready() {
		return false // no replica here, or a caught-up leader: the usual path serves it
	}
	if leader, _ := rep.Leader(); leader == f.c.nodeID {
		return false // a leader that has not caught up yet: wait for it as usual
	}
	view := rep.AppliedView()
	if !f.servable(view, agent, wb, snapID, time.Now()) {
		return false
	}
	f.served.WithLabelValues(strconv.Itoa(id)).Inc()
	w.Header().Set(ServedByHeader, f.c.nodeID)
	f.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), appliedViewKey{}, view)))
	return true
}

// serveEmpty serves a read of a root that was never placed from an empty state: the
// same answers as any shard would give for a root it has never seen (no workbench, an
// empty list), without placing the root.
func (f *followerReads) serveEmpty(w http.ResponseWriter, r *http.Request) {
	empty := meta.New(meta.Options{}).View()
	f.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), appliedViewKey{}, empty)))
}

// servable reports whether view holds snapshot snapID of workbench wb of agent alive and
// is recent enough (maxStale) to read blobs through, at wall time now.
func (f *followerReads) servable(view *meta.View, agent, wb string, snapID uint64, now time.Time) bool {
	applied := time.UnixMilli(view.NowMs())
	if now.Sub(applied) >= f.maxStale {
		return false
	}
	if _, err := view.Workspace(agent, wb); err != nil {
		return false
	}
	snap, err := view.Snapshot(agent, wb, snapID, "")
	if err != nil {
		return false
	}
	return snap.StateAt(max(view.NowMs(), now.UnixMilli())) == meta.SnapshotAlive
}

// pinnedRead reports whether r is a REST read that may be served from a follower: a GET
// or HEAD of /v1/agents/{agent}/workbenches/{id} (stat), .../list or .../files/{path...}
// whose query has exactly one at_snapshot, a snapshot id ≥ 1 in decimal digits. It returns
// the workbench id and the snapshot id. Malformed requests return false: the leader
// answers them with the contract's error.
func pinnedRead(r *http.Request) (wb string, snapID uint64, ok bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return "", 0, false
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/v1/agents/")
	if !ok {
		return "", 0, false
	}
	segs := strings.Split(rest, "/")
	if len(segs) < 3 || segs[1] != "workbenches" {
		return "", 0, false
	}
	switch {
	case len(segs) == 3:
	case len(segs) == 4 && segs[3] == "list":
	case len(segs) >= 5 && segs[3] == "files":
	default:
		return "", 0, false
	}
	wb, err := url.PathUnescape(segs[2])
	if err != nil || wb == "" {
		return "", 0, false
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "", 0, false
	}
	vs := q["at_snapshot"]
	if len(vs) != 1 || vs[0] == "" || strings.Trim(vs[0], "0123456789") != "" {
		return "", 0, false
	}
	snapID, err = strconv.ParseUint(vs[0], 10, 64)
	if err != nil || snapID == 0 {
		return "", 0, false
	}
	return wb, snapID, true
}

// appliedViewKey carries, in a follower read's context, the applied view it was admitted
// on.
type appliedViewKey struct{}

// viewCores serves every root from the applied view in the request's context.
type viewCores struct{}

func (viewCores) For(string) (workbench.Core, error) { return viewCore{}, nil }

// viewCore is a read-only core: ReadView returns the view the request was admitted on,
// Propose refuses (only GET and HEAD reach it).
type viewCore struct{}

func (viewCore) ReadView(ctx context.Context) (*meta.View, error) {
	if v, ok := ctx.Value(appliedViewKey{}).(*meta.View); ok {
		return v, nil
	}
	return nil, shard.ErrNotLeader
}

func (viewCore) Propose(context.Context, meta.Header, meta.Body) (meta.Result, error) {
	return meta.Result{}, shard.ErrNotLeader
}

// servedByFallback names this node in ServedByHeader of a forwarded request's response
// only when the response does not already name a node: the answer this node wrote itself
// because the leader could not be reached.
type servedByFallback struct {
	http.ResponseWriter
	node string
}

func (s *servedByFallback) WriteHeader(code int) {
	if code >= 200 && s.Header().Get(ServedByHeader) == "" {
		s.Header().Set(ServedByHeader, s.node)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *servedByFallback) Write(p []byte) (int, error) {
	if s.Header().Get(ServedByHeader) == "" {
		s.Header().Set(ServedByHeader, s.node)
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController (the reverse proxy's flushes) reach the connection.
func (s *servedByFallback) Unwrap() http.ResponseWriter { return s.ResponseWriter }
