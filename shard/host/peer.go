package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/mux"
)

// The node-to-node API, served on the peer port's fwd stream under peerAPIPrefix (never
// on the client port):
//
//	POST /_cairn/peer/propose/<shard>   body: meta.EncodeCommand; 200: CBOR meta.Result
//	POST /_cairn/peer/readindex/<shard> 200: {"version": N} (shard.ReadIndex)
//	POST /_cairn/peer/export/<shard>    body: CBOR exportRequest; 200: CBOR exportReply (a move's copy)
//	GET  /_cairn/peer/stats/<shard>     200: shard.Stats (JSON)
//	POST /_cairn/peer/admin             body: adminCall; 200: adminReply (the controller's calls)
//	GET  /_cairn/peer/ping              200: the node answers (the controller's probe of its peers)
//
// A call the peer could not serve answers a non-200 status with peerErrorHeader naming
// the outcome: "unavailable" (nothing applied: not the leader, shut down), "unknown" (the
// command may apply), "storage-full" (nothing applied), or "invalid" (the command was
// refused as malformed).
const peerAPIPrefix = "/_cairn/peer/"

const peerErrorHeader = "Cairn-Peer-Error"

// maxPeerCommandBytes bounds a forwarded command (a commit's or restore batch's tree, a
// body's inline bytes).
const maxPeerCommandBytes = 64 << 20

// forwardDialTimeout bounds opening a connection to another node (TCP connect and the
// peer's stream acknowledgement); forwardResponseTimeout bounds waiting for its response
// headers once the request is sent (longer than any command's commit timeout).
const (
	forwardDialTimeout     = time.Second
	forwardResponseTimeout = time.Minute
)

// peerClient calls other nodes' fwd streams.
type peerClient struct {
	transport *http.Transport
	client    *http.Client
	// legacy remembers, per peer address, until when it is taken for a node of an older
	// release that has no command forwarding (its fwd stream answers 404 to propose and
	// readindex): requests for a shard it leads are forwarded whole, as that release does
	// (Route), during a rolling upgrade.
	legacy sync.Map // addr → time.Time
}

// legacyMemory is how long a peer stays taken for an older release after it answered 404.
const legacyMemory = time.Minute

// isLegacy reports whether the peer at addr answered like an older release recently.
func (p *peerClient) isLegacy(addr string) bool {
	v, ok := p.legacy.Load(addr)
	if !ok {
		return false
	}
	if time.Now().After(v.(time.Time)) {
		p.legacy.Delete(addr)
		return false
	}
	return true
}

// peerAnswerError is an answer of a peer that refused a call it understood (an
// undecodable command, a failure before proposing): nothing applied, and retrying the
// same call elsewhere would meet the same answer.
type peerAnswerError struct{ text string }

func (e *peerAnswerError) Error() string { return e.text }

func newPeerClient(m *mux.Mux) *peerClient {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			// A healthy peer accepts the stream at once; one cut off by a partition never
			// answers. Give up soon, so a retry meets a fresher leader hint.
			ctx, cancel := context.WithTimeout(ctx, forwardDialTimeout)
			defer cancel()
			c, err := m.Dial(ctx, addr, mux.StreamForward)
			if err != nil {
				return nil, dialError{err}
			}
			return c, nil
		},
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		// Counted from the end of the request body: a leader that stopped answering (a
		// frozen process still accepts TCP) must not hold the caller forever.
		ResponseHeaderTimeout: forwardResponseTimeout,
	}
	return &peerClient{transport: tr, client: &http.Client{Transport: tr}}
}

// errPeerUnreached wraps a failure to reach a peer before it could act (dial, refused
// stream): the call applied nothing.
func errPeerUnreached(addr string, err error) error {
	return fmt.Errorf("%w: peer %s unreachable: %v", shard.ErrNotLeader, addr, err)
}

// do sends one peer API request and returns the response (status 200) or the error the
// peer named.
func (p *peerClient) do(ctx context.Context, method, addr, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+peerAPIPrefix+path, rd)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		var de dialError
		if errors.As(err, &de) {
			return nil, errPeerUnreached(addr, err)
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	text := fmt.Sprintf("peer %s: %s: %s", addr, resp.Status, strings.TrimSpace(string(msg)))
	switch resp.Header.Get(peerErrorHeader) {
	case "unavailable":
		return nil, fmt.Errorf("%w: %s", shard.ErrNotLeader, text)
	case "unknown":
		return nil, fmt.Errorf("%w: %s", shard.ErrTimeout, text)
	case "storage-full":
		return nil, fmt.Errorf("%w: %s", shard.ErrStorageFull, text)
	case "invalid", "internal":
		return nil, &peerAnswerError{text: text}
	}
	if resp.StatusCode == http.StatusNotFound && (strings.HasPrefix(path, "propose/") || strings.HasPrefix(path, "readindex/")) {
		// An older release: it never saw the command. Route forwards whole requests to it.
		p.legacy.Store(addr, time.Now().Add(legacyMemory))
		return nil, fmt.Errorf("%w: %s (a node of an older release: its requests are forwarded whole)", shard.ErrNotLeader, text)
	}
	return nil, errors.New(text)
}

// dialError marks a failure to open the connection to a peer: the request never left.
type dialError struct{ err error }

func (e dialError) Error() string { return e.err.Error() }
func (e dialError) Unwrap() error { return e.err }

// propose forwards a command to the leader at addr. Once the request may have been sent,
// a failure without an answer is an unknown outcome (shard.ErrTimeout).
func (p *peerClient) propose(ctx context.Context, addr string, id int, hd meta.Header, b meta.Body) (meta.Result, error) {
	data, err := meta.EncodeCommand(hd, b)
	if err != nil {
		return meta.Result{}, err
	}
	resp, err := p.do(ctx, http.MethodPost, addr, "propose/"+strconv.Itoa(id), data)
	if err != nil {
		var pe *peerAnswerError
		if errors.Is(err, shard.ErrNotLeader) || errors.Is(err, shard.ErrStorageFull) || errors.Is(err, shard.ErrTimeout) || errors.As(err, &pe) {
			return meta.Result{}, err
		}
		// Sent, perhaps applied, and no answer: the outcome is unknown.
		return meta.Result{}, fmt.Errorf("%w: forwarded to %s: %v", shard.ErrTimeout, addr, err)
	}
	defer resp.Body.Close()
	var res meta.Result
	if err := cbor.NewDecoder(io.LimitReader(resp.Body, maxPeerCommandBytes)).Decode(&res); err != nil {
		return meta.Result{}, fmt.Errorf("%w: answer of %s: %v", shard.ErrTimeout, addr, err)
	}
	return res, nil
}

// readIndex asks the leader at addr for its read index (shard.ReadIndex).
func (p *peerClient) readIndex(ctx context.Context, addr string, id int) (uint64, error) {
	resp, err := p.do(ctx, http.MethodPost, addr, "readindex/"+strconv.Itoa(id), nil)
	if err != nil {
		if errors.Is(err, shard.ErrNotLeader) {
			return 0, err
		}
		// A read applies nothing: any failure may be retried elsewhere.
		return 0, fmt.Errorf("%w: read index of %s: %v", shard.ErrNotLeader, addr, err)
	}
	defer resp.Body.Close()
	var out struct {
		Version uint64 `json:"version"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&out); err != nil {
		return 0, fmt.Errorf("%w: read index of %s: %v", shard.ErrNotLeader, addr, err)
	}
	return out.Version, nil
}

// stats reads the Raft figures of the replica of shard id at addr.
func (p *peerClient) stats(ctx context.Context, addr string, id int) (shard.Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := p.do(ctx, http.MethodGet, addr, "stats/"+strconv.Itoa(id), nil)
	if err != nil {
		return shard.Stats{}, err
	}
	defer resp.Body.Close()
	var st shard.Stats
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&st)
	return st, err
}

// ping reports whether the node at addr answers on its peer port within ctx: any answer
// counts (a node of an older release answers 404).
func (p *peerClient) ping(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+peerAPIPrefix+"ping", nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// admin sends a controller call to the node at addr.
func (p *peerClient) admin(ctx context.Context, addr string, call adminCall) (control.ShardStatus, error) {
	body, _ := json.Marshal(call)
	resp, err := p.do(ctx, http.MethodPost, addr, "admin", body)
	if err != nil {
		return control.ShardStatus{}, err
	}
	defer resp.Body.Close()
	var rep adminReply
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&rep); err != nil {
		return control.ShardStatus{}, fmt.Errorf("peer %s: %w", addr, err)
	}
	if rep.Error != "" {
		if rep.NotLeader {
			return rep.Status, fmt.Errorf("%w: peer %s: %s", shard.ErrNotLeader, addr, rep.Error)
		}
		return rep.Status, fmt.Errorf("peer %s: %s", addr, rep.Error)
	}
	return rep.Status, nil
}

// servePeerAPI serves the node-to-node API (see the comment at the top of this file).
func (h *Host) servePeerAPI(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, peerAPIPrefix)
	op, arg, _ := strings.Cut(rest, "/")
	switch {
	case r.Method == http.MethodPost && op == "propose":
		h.servePropose(w, r, arg)
	case r.Method == http.MethodPost && op == "readindex":
		h.serveReadIndex(w, r, arg)
	case r.Method == http.MethodPost && op == "export":
		if rep := h.leaderReplica(w, arg); rep != nil {
			h.exports.serveHTTP(w, r, rep)
		}
	case r.Method == http.MethodGet && op == "ping":
		w.WriteHeader(http.StatusOK) // a controller's reachability probe (clusterAdmin.ReachesAny)
	case r.Method == http.MethodGet && op == "stats":
		id, err := strconv.Atoi(arg)
		rep := h.Replica(id)
		if err != nil || rep == nil {
			http.Error(w, "no replica", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep.Stats())
	case r.Method == http.MethodPost && op == "admin":
		var call adminCall
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&call); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		st, err := h.adminLocal(r.Context(), call)
		rep := adminReply{Status: st}
		if err != nil {
			rep.Error = err.Error()
			rep.NotLeader = errors.Is(err, shard.ErrNotLeader)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	default:
		http.NotFound(w, r)
	}
}

// leaderReplica returns the local replica of shard arg if it is the ready leader, else
// answers "unavailable" and returns nil.
func (h *Host) leaderReplica(w http.ResponseWriter, arg string) *shard.Shard {
	id, err := strconv.Atoi(arg)
	r := h.Replica(id)
	if err != nil || r == nil || !r.Ready() {
		writePeerError(w, shard.ErrNotLeader)
		return nil
	}
	return r
}

func (h *Host) servePropose(w http.ResponseWriter, r *http.Request, arg string) {
	rep := h.leaderReplica(w, arg)
	if rep == nil {
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxPeerCommandBytes+1))
	if err != nil || len(data) > maxPeerCommandBytes {
		w.Header().Set(peerErrorHeader, "invalid")
		http.Error(w, "command unreadable or too large", http.StatusBadRequest)
		return
	}
	hd, b, err := meta.DecodeCommand(data)
	if err != nil {
		w.Header().Set(peerErrorHeader, "invalid")
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res, err := rep.Propose(r.Context(), hd, b)
	if err != nil {
		writePeerError(w, err)
		return
	}
	out, err := cbor.Marshal(res)
	if err != nil {
		writePeerError(w, fmt.Errorf("%w: encode result: %v", shard.ErrTimeout, err))
		return
	}
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(out)
}

func (h *Host) serveReadIndex(w http.ResponseWriter, r *http.Request, arg string) {
	rep := h.leaderReplica(w, arg)
	if rep == nil {
		return
	}
	index, err := rep.ReadIndex(r.Context())
	if err != nil {
		writePeerError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]uint64{"version": index})
}

// writePeerError answers a peer call that failed with err, naming its outcome.
func writePeerError(w http.ResponseWriter, err error) {
	kind := "internal"
	switch {
	case errors.Is(err, shard.ErrStorageFull):
		kind = "storage-full"
	case errors.Is(err, shard.ErrTimeout):
		kind = "unknown"
	case errors.Is(err, shard.ErrNotLeader), errors.Is(err, shard.ErrClosed):
		kind = "unavailable"
	}
	w.Header().Set(peerErrorHeader, kind)
	http.Error(w, err.Error(), http.StatusServiceUnavailable)
}
