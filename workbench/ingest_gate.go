package workbench

import (
	"context"
	"errors"
	"io"
	"time"
)

// The ingest budget (ingest_budget.go) is held by bodies whose bytes flow, not by
// connections (issue 25, finding 12: four uploads that sent 8 KiB and then one byte every
// 10 s held all four of a node's slots, so every tenant's write above the inline limit
// waited for them).
//
// A body read from the network goes through a gatedBody. A pump goroutine reads the body
// in pieces of ingestPieceBytes (two pieces per body, reused); the ingest reads the
// pieces. The body takes its weight of the budget once its first piece is there, keeps it
// while pieces keep coming, and gives it back when none has come for ingestStallGrace: a
// stalled body waits for its client's next bytes without it and queues for it again when
// they arrive. So the budget is held by cutting, hashing and uploading, and however many
// bodies trickle, a writer whose bytes are there waits at most for the bodies that are
// being processed.
//
// What a stalled body keeps meanwhile is the memory it already holds (the part of the
// segment it has received, sized by its Content-Length, and at most UploadConcurrency
// segments still uploading); the number of such bodies is bounded by the node's
// connection caps, and a body slower than the minimum body rate is cut at the end of its
// window (docs/architecture.md, the write path).
const (
	// ingestPieceBytes is the size of one piece the pump reads (each body has two).
	ingestPieceBytes = 32 << 10
	// ingestStallGrace is how long a body holding its weight waits for its next piece
	// before giving the weight back. Bytes of a flowing transfer arrive far more often; a
	// body that trickles holds its weight at most this long per piece it sends.
	ingestStallGrace = 20 * time.Millisecond
)

// piece is one read of the pump: buf[:n] and the read's error.
type piece struct {
	buf []byte
	n   int
	err error
}

// gatedBody is an io.Reader over a network body that holds its weight of the ingest budget
// only while the body's bytes flow (see above). Its owner calls close once it stops
// reading.
type gatedBody struct {
	ctx    context.Context
	budget *ingestBudget
	need   int64         // the weight the body takes: budget.weight of its hint, a slot once past it
	within int64         // the bytes it may read at that weight (ingestBudget.within)
	seen   int64         // the bytes of the pieces it has made current
	held   int64         // the weight it holds now (0: none)
	pieces chan piece    // from the pump
	free   chan []byte   // pieces' buffers back to the pump
	done   chan struct{} // closed by close: the pump stops
	cur    []byte        // unread bytes of the current piece
	buf    []byte        // the current piece's buffer
	err    error         // the current piece's error, returned once its bytes are read
}

// newGatedBody starts the pump over r, a body of sizeHint bytes (0 or less: unknown). It
// takes no weight yet: the first Read (or wait) takes it once bytes are there.
func newGatedBody(ctx context.Context, r io.Reader, sizeHint int64, budget *ingestBudget) *gatedBody {
	need := budget.weight(sizeHint)
	g := &gatedBody{ctx: ctx, budget: budget, need: need, within: budget.within(need),
		pieces: make(chan piece), free: make(chan []byte, 2), done: make(chan struct{})}
	g.free <- make([]byte, ingestPieceBytes)
	g.free <- make([]byte, ingestPieceBytes)
	go g.pump(r)
	return g
}

// pump reads r piece by piece until an error (io.EOF included) or close. A Read of r that
// is blocked when close is called ends when the body does (the server cuts a stalled
// body at its rate window, and closes it when the request ends).
func (g *gatedBody) pump(r io.Reader) {
	for {
		var buf []byte
		select {
		case buf = <-g.free:
		case <-g.done:
			return
		}
		n, err := r.Read(buf)
		select {
		case g.pieces <- piece{buf: buf, n: n, err: err}:
		case <-g.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// wait returns once the body's first bytes (or its end) are there and its weight is held,
// so that buffers the caller sizes for the body are allocated by a body that flows.
func (g *gatedBody) wait() error {
	if len(g.cur) > 0 || g.err != nil {
		return nil
	}
	return g.nextPiece()
}

// Read implements io.Reader.
func (g *gatedBody) Read(p []byte) (int, error) {
	for len(g.cur) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		if err := g.nextPiece(); err != nil {
			return 0, err
		}
	}
	n := copy(p, g.cur)
	g.cur = g.cur[n:]
	return n, nil
}

// nextPiece makes the next piece current, holding the body's weight once it is there: it
// waits for it with the weight for ingestStallGrace, then without.
func (g *gatedBody) nextPiece() error {
	if g.buf != nil {
		g.free <- g.buf // the pump holds at most the other buffer: never blocks
		g.buf = nil
	}
	var pc piece
	select {
	case pc = <-g.pieces:
	default:
		got := false
		if g.held > 0 {
			t := time.NewTimer(ingestStallGrace)
			select {
			case pc = <-g.pieces:
				got = true
			case <-t.C:
			case <-g.ctx.Done():
				t.Stop()
				return g.ctxErr()
			}
			t.Stop()
		}
		if !got {
			g.release()
			select {
			case pc = <-g.pieces:
			case <-g.ctx.Done():
				return g.ctxErr()
			}
		}
	}
	g.buf, g.cur, g.err = pc.buf, pc.buf[:pc.n], pc.err
	if g.seen += int64(pc.n); g.seen > g.within {
		// Longer than its hint: from now on it weighs a slot, queued for like any other.
		g.release()
		g.need, g.within = g.budget.slot, g.budget.within(g.budget.slot)
	}
	if g.held > 0 || (pc.n == 0 && pc.err != nil) {
		return nil // the body's end (or its error) needs no weight to be read
	}
	if err := g.budget.acquire(g.ctx, g.need); err != nil {
		var e *Error
		if errors.As(pc.err, &e) {
			return pc.err
		}
		return g.ctxErr() // the pump's next read may hold the body's typed error
	}
	g.held = g.need
	return nil
}

// ctxGrace is how long a body whose request ended waits for the pump's last read: a body
// cut below the minimum rate ends its request's context as its read fails, and the read's
// typed error says more than the context's. A client that went away ends the read at once.
const ctxGrace = time.Second

// ctxErr is the error of a body whose context ended: the pump's read error when it comes
// within ctxGrace (a typed *Error: the minimum rate), else the context's.
func (g *gatedBody) ctxErr() error {
	t := time.NewTimer(ctxGrace)
	defer t.Stop()
	select {
	case pc := <-g.pieces:
		var e *Error
		if errors.As(pc.err, &e) {
			return pc.err
		}
		if pc.buf != nil {
			g.free <- pc.buf
		}
	case <-t.C:
	}
	return g.ctx.Err()
}

func (g *gatedBody) release() {
	if g.held > 0 {
		g.budget.release(g.held)
		g.held = 0
	}
}

// close gives the weight back and stops the pump. The gatedBody is not read after.
func (g *gatedBody) close() {
	g.release()
	close(g.done)
}
