package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
)

// The copy of a move reads the root's records from one View of the source taken after
// the fence (docs/architecture.md, "Moving a root"): the source's leader keeps that view
// per move while the driver pulls chunks (POST /_cairn/peer/export/<shard>, or in process
// when the driver's node leads the source). A leader that did not take the view (it was
// elected since, or restarted) answers errExportViewLost, and the driver rolls the move
// back: a copy never continues from another view. Nor from another view of the same move:
// a first request whose answer was lost may have had a view taken by a leader that lost
// the shard and later leads it again, holding a view older than the one the copy went on
// from. So every request after the first names the view it continues (its version, which
// the answers carry), and a delta the base view it is taken against; a leader whose view
// of the move is another answers Lost.

// exportRequest asks the source's leader for the next chunk of a move's export, or, with
// UIDOnly, for the root's uid (before the fence: the target's import needs it first).
//
// With PreCopy the chunk comes from the move's base view instead: one View of the source
// taken, without a fence, at the pre-copy's first call (the root still takes writes).
// With Delta it is a chunk of the fenced view's differences from the base view
// (meta.MoveView.ExportDelta); a leader without the base view answers Lost. With Parts
// a record larger than a chunk comes in parts (meta.MoveView.Split), which only a target
// of cluster version meta.MovePartsVersion imports; without it the export refuses the
// record (ResourceExhausted), and so does a leader of an older release, which ignores the
// field.
type exportRequest struct {
	Agent   string            `cbor:"1,keyasint"`
	MoveID  string            `cbor:"2,keyasint"`
	From    meta.MovePosition `cbor:"3,keyasint"`
	UIDOnly bool              `cbor:"4,keyasint,omitempty"`
	PreCopy bool              `cbor:"5,keyasint,omitempty"`
	Delta   bool              `cbor:"6,keyasint,omitempty"`
	Parts   bool              `cbor:"7,keyasint,omitempty"`
	// View is the version of the view the export continues (exportReply.Version of the
	// chunks before; 0: the export's first request, which takes the view or finds the one
	// an earlier try took). Base is, for a Delta, the version of the base view the
	// pre-copy read (0: not checked, as a driver of an older release sends).
	View uint64 `cbor:"8,keyasint,omitempty"`
	Base uint64 `cbor:"9,keyasint,omitempty"`
}

// viewKey is the key of the export view req reads from.
func (req exportRequest) viewKey() string {
	if req.PreCopy {
		return baseViewKey(req.MoveID)
	}
	return req.MoveID
}

// baseViewKey is the key of move id's pre-copy view.
func baseViewKey(id string) string { return id + "\x00base" }

// exportReply is a chunk and the counters MoveImportFinish needs (MoveView.Counters), or
// the refusal.
type exportReply struct {
	RootUID    string               `cbor:"1,keyasint,omitempty"`
	Chunk      meta.MoveExportChunk `cbor:"2,keyasint"`
	Version    uint64               `cbor:"3,keyasint,omitempty"`
	NextListID uint64               `cbor:"4,keyasint,omitempty"`
	Seq        uint64               `cbor:"5,keyasint,omitempty"`
	Err        *meta.Error          `cbor:"6,keyasint,omitempty"`
	Lost       bool                 `cbor:"7,keyasint,omitempty"`
}

// errExportViewLost: the source's leader no longer has the view the copy started from.
var errExportViewLost = errors.New("host: the export view of the move is gone (the source's leader changed)")

// exportViewTTL is how long a leader keeps a move's export view after its last use.
const exportViewTTL = 10 * time.Minute

// exportViews are the export views a leader keeps, by move id.
type exportViews struct {
	mu    sync.Mutex
	views map[string]*exportView
}

type exportView struct {
	shard *shard.Shard
	view  *meta.View
	used  time.Time
	err   *meta.Error // a refusal of the view's check (never kept)
}

// serve serves req on r, this node's replica of the source, which leads it.
func (ev *exportViews) serve(ctx context.Context, r *shard.Shard, req exportRequest) (exportReply, error) {
	if req.UIDOnly {
		v, err := r.ReadView(ctx)
		if err != nil {
			return exportReply{}, err
		}
		root, ok := v.Root(req.Agent)
		if !ok {
			return exportReply{Err: &meta.Error{Code: meta.CodeNotFound,
				Message: "agent root " + strconv.Quote(req.Agent) + " is not held by its shard"}}, nil
		}
		return exportReply{RootUID: root.UID}, nil
	}
	x, lost, err := ev.view(ctx, r, req.viewKey(), req.From == (meta.MovePosition{}) && req.View == 0, func(v *meta.View) *meta.Error {
		if req.PreCopy {
			return nil // unfenced: Export refuses a root the view does not hold
		}
		if m, ok := v.Moves().Of(req.Agent); !ok || m.MoveID != req.MoveID || m.State != meta.MoveFenced {
			return &meta.Error{Code: meta.CodeInvalidState,
				Message: "agent root " + strconv.Quote(req.Agent) + " is not fenced for move " + strconv.Quote(req.MoveID)}
		}
		return nil
	})
	switch {
	case err != nil:
		return exportReply{}, err
	case lost || req.View != 0 && x.view != nil && x.view.AppliedVersion() != req.View:
		return exportReply{Lost: true}, nil
	case x.err != nil:
		return exportReply{Err: x.err}, nil
	}
	var c meta.MoveExportChunk
	moves := x.view.Moves()
	if req.Parts {
		moves = moves.Split()
	}
	if req.Delta {
		base, _, _ := ev.view(ctx, r, baseViewKey(req.MoveID), false, nil)
		if base == nil || base.view == nil || req.Base != 0 && base.view.AppliedVersion() != req.Base {
			return exportReply{Lost: true}, nil
		}
		c, err = moves.ExportDelta(req.Agent, base.view, req.From, meta.MaxMoveChunkBytes)
	} else {
		c, err = moves.Export(req.Agent, req.From, meta.MaxMoveChunkBytes)
	}
	if err != nil {
		var me *meta.Error
		if errors.As(err, &me) {
			return exportReply{Err: me}, nil
		}
		return exportReply{}, err
	}
	version, lists, seq := x.view.Moves().Counters()
	return exportReply{Chunk: c, Version: version, NextListID: lists, Seq: seq}, nil
}

// view returns the export view kept under key on r, marking it used. Without one, it takes
// a linearizable view of r when create is set and check (nil: none) accepts it — a view
// check refuses is answered (the result's err) and not kept — and answers lost otherwise:
// a copy never continues from another view.
func (ev *exportViews) view(ctx context.Context, r *shard.Shard, key string, create bool, check func(*meta.View) *meta.Error) (*exportView, bool, error) {
	ev.mu.Lock()
	if ev.views == nil {
		ev.views = map[string]*exportView{}
	}
	now := time.Now()
	for id, x := range ev.views {
		if now.Sub(x.used) > exportViewTTL {
			delete(ev.views, id)
		}
	}
	x := ev.views[key]
	if x != nil && x.shard != r {
		delete(ev.views, key) // the replica was reopened: its view is another
		x = nil
	}
	ev.mu.Unlock()
	if x == nil {
		if !create {
			return nil, true, nil
		}
		v, err := r.ReadView(ctx) // linearizable: it follows the fence the driver saw applied
		if err != nil {
			return nil, false, err
		}
		if check != nil {
			if refused := check(v); refused != nil {
				return &exportView{err: refused}, false, nil
			}
		}
		x = &exportView{shard: r, view: v}
		ev.mu.Lock()
		if y := ev.views[key]; y != nil && y.shard == r {
			x = y // a concurrent first call won: one view per key
		} else {
			ev.views[key] = x
		}
		ev.mu.Unlock()
	}
	ev.mu.Lock()
	x.used = now
	ev.mu.Unlock()
	return x, false, nil
}

// export runs req on the source shard's leader: here when this node leads it, else over
// the peer port. A refusal comes back as the reply's Err; errExportViewLost when the
// leader has no view of the move to continue from.
func (mv *Mover) export(ctx context.Context, source int, req exportRequest) (exportReply, error) {
	var rep exportReply
	err := mv.leaders.onLeader(ctx, source, func(r *shard.Shard) (err error) {
		rep, err = mv.exports.serve(ctx, r, req)
		return err
	}, func(addr string) (err error) {
		rep, err = mv.peers.export(ctx, addr, source, req)
		return err
	})
	if err == nil && rep.Lost {
		return rep, errExportViewLost
	}
	return rep, err
}

// maxExportReplyBytes bounds a peer's export answer: a chunk and a few counters.
const maxExportReplyBytes = meta.MaxMoveChunkBytes + 1<<20

// export asks the leader at addr for a chunk (exportRequest). Reads change nothing: any
// failure to get an answer may be retried (shard.ErrNotLeader).
func (p *peerClient) export(ctx context.Context, addr string, id int, req exportRequest) (exportReply, error) {
	body, err := cbor.Marshal(req)
	if err != nil {
		return exportReply{}, err
	}
	resp, err := p.do(ctx, http.MethodPost, addr, "export/"+strconv.Itoa(id), body)
	if err != nil {
		var pe *peerAnswerError
		if errors.Is(err, shard.ErrNotLeader) || errors.As(err, &pe) {
			return exportReply{}, err
		}
		return exportReply{}, fmt.Errorf("%w: export from %s: %v", shard.ErrNotLeader, addr, err)
	}
	defer resp.Body.Close()
	var rep exportReply
	if err := cbor.NewDecoder(io.LimitReader(resp.Body, maxExportReplyBytes)).Decode(&rep); err != nil {
		return exportReply{}, fmt.Errorf("%w: export answer of %s: %v", shard.ErrNotLeader, addr, err)
	}
	return rep, nil
}

// serveHTTP serves POST /_cairn/peer/export/<shard> on rep, the shard's leader.
func (ev *exportViews) serveHTTP(w http.ResponseWriter, r *http.Request, rep *shard.Shard) {
	var req exportRequest
	if err := cbor.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
		w.Header().Set(peerErrorHeader, "invalid")
		http.Error(w, "export request unreadable", http.StatusBadRequest)
		return
	}
	out, err := ev.serve(r.Context(), rep, req)
	if err != nil {
		writePeerError(w, err)
		return
	}
	data, err := cbor.Marshal(out)
	if err != nil {
		writePeerError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(data)
}
