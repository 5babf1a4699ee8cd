package workbench

import (
	"context"
	"errors"
	"io"
	"time"
)

// A body read from the network goes through a gatedBody. A pump goroutine reads the body
// in pieces of ingestPieceBytes (two pieces per body, reused); the ingest reads the
// pieces. The body takes its weight of the ingest budget (ingest_budget.go) once its
// first piece is there, whole (or the body ended), so a body whose client has sent less
// holds no weight and at most its two pieces (issue 25, finding 12: uploads that sent
// 8 KiB and then one byte every 10 s held every slot of a node), and keeps it until its
// ingest ends, stalled or not: the weight is
// the memory its buffers hold, so giving it back while the buffers stay would let the
// node's uploads hold more than the budget (issue 29: four hundred 8 MiB uploads that
// stalled near their end held 3.3 GB when a stalled body gave its weight back). A client
// that stalls is cut by the minimum body rate at the end of its window; one that keeps
// the rate holds what its body weighs, its declared length up to one segment, else a
// slot (docs/architecture.md, the write path).
//
// A client that goes away while its upload waits for its weight is seen only when the
// pump's read of its body fails: net/http does not end a request's context while its body
// is unread, and the pump reads at most two pieces ahead. Such an upload keeps its place
// in the queue until the weight is free or IngestQueueTimeout passes, then fails at its
// next read.
//
// Once the body holds its weight, the pump is let run dry: its buffers are no longer given
// back, and when the piece it was reading ahead has been read the ingest reads the body
// itself, straight into the caller's buffer (the segment the Splitter fills), so the
// bytes are not copied out of a piece. A body that turns out longer than it declared
// waits for its larger weight then as before, without a read pending beside it.
//
// ingestPieceBytes is the size of one piece the pump reads (each body has two).
const ingestPieceBytes = 32 << 10

// piece is one read of the pump: buf[:n] and the read's error.
type piece struct {
	buf []byte
	n   int
	err error
}

// gatedBody is an io.Reader over a network body that holds the weight of the ingest
// budget its bytes need (see above). Its owner calls close once it stops reading.
type gatedBody struct {
	ctx    context.Context
	r      io.Reader // the body: the pump's until it has run dry (direct), then Read's
	budget *ingestBudget
	hint   int64         // the body's declared length (0 or less: unknown)
	seen   int64         // the bytes of the pieces it has made current
	held   int64         // the weight it holds (0: none yet)
	pieces chan piece    // from the pump
	free   chan []byte   // pieces' buffers back to the pump
	done   chan struct{} // closed by close: the pump stops
	cur    []byte        // unread bytes of the current piece
	buf    []byte        // the current piece's buffer
	err    error         // the current piece's error, returned once its bytes are read
	// pending is the number of pieces the pump will still send (buffers given to it, less
	// pieces taken). Once the body holds weight its buffers are kept (direct), and when
	// pending is 0 the pump reads no more: Read reads r itself.
	pending int
}

// newGatedBody starts the pump over r, a body of sizeHint bytes (0 or less: unknown). It
// takes no weight yet: the first Read (or wait) takes it once bytes are there.
func newGatedBody(ctx context.Context, r io.Reader, sizeHint int64, budget *ingestBudget) *gatedBody {
	g := &gatedBody{ctx: ctx, r: r, budget: budget, hint: sizeHint, pending: 2,
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
	for first := true; ; first = false {
		var buf []byte
		select {
		case buf = <-g.free:
		case <-g.done:
			return
		}
		var n int
		var err error
		if first {
			// The first piece is read whole (or to the body's end or error): the weight is
			// taken for it, so a client that sends a few bytes and stalls takes none.
			n, err = readWhole(r, buf)
		} else {
			n, err = r.Read(buf)
		}
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

// readWhole reads r until buf is full or a read fails, and returns that failure as it is
// (io.EOF for a body that ended; io.ReadFull would turn a truncated body's own
// io.ErrUnexpectedEOF into a short read).
func readWhole(r io.Reader, buf []byte) (n int, err error) {
	for n < len(buf) && err == nil {
		var m int
		m, err = r.Read(buf[n:])
		n += m
	}
	return n, err
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
		if g.direct() && g.pending == 0 {
			return g.readDirect(p)
		}
		if err := g.nextPiece(); err != nil {
			return 0, err
		}
	}
	n := copy(p, g.cur)
	g.cur = g.cur[n:]
	return n, nil
}

// direct reports whether the body holds its weight, from when the pump is let run dry.
func (g *gatedBody) direct() bool { return g.held > 0 }

// readDirect reads the body straight into p, the pump having stopped (pending is 0: its
// last read happened before the piece it sent was taken, and it is given no buffer
// again). It takes more weight when the bytes seen need it, as nextPiece does.
func (g *gatedBody) readDirect(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil {
		g.err = err
	}
	g.seen += int64(n)
	if need := g.budget.need(g.hint, g.seen); need > g.held {
		// More bytes than the body declared: it queues for its whole need holding none,
		// as in nextPiece.
		g.release()
		if aerr := g.budget.acquire(g.ctx, need); aerr != nil {
			var e *Error
			switch {
			case errors.As(err, &e):
				g.err = err
			case errors.As(aerr, &e):
				g.err = aerr // the budget's queue timeout
			default:
				g.err = g.ctx.Err()
			}
			return 0, g.err
		}
		g.held = need
	}
	return n, err
}

// nextPiece makes the next piece current once the body holds the weight its bytes so far
// need (ingestBudget.need), waiting for the piece, then for the weight.
func (g *gatedBody) nextPiece() error {
	if g.buf != nil {
		if !g.direct() {
			g.free <- g.buf // the pump holds at most the other buffer: never blocks
			g.pending++
		}
		g.buf = nil
	}
	var pc piece
	select {
	case pc = <-g.pieces:
		g.pending--
	case <-g.ctx.Done():
		return g.ctxErr()
	}
	g.buf, g.cur, g.err = pc.buf, pc.buf[:pc.n], pc.err
	g.seen += int64(pc.n)
	need := g.budget.need(g.hint, g.seen)
	if need <= g.held || (pc.n == 0 && pc.err != nil) {
		return nil // the body's end (or its error) needs no more weight to be read
	}
	// First bytes, or more than the body declared: it queues for its whole need holding
	// none, so that no waiter holds part of the budget (ingest_budget.go).
	g.release()
	if err := g.budget.acquire(g.ctx, need); err != nil {
		var e *Error
		if errors.As(pc.err, &e) {
			return pc.err
		}
		if errors.As(err, &e) {
			return err // the budget's queue timeout
		}
		return g.ctxErr() // the pump's next read may hold the body's typed error
	}
	g.held = need
	return nil
}

// ctxGrace is how long a body whose request ended waits for the pump's last read: a body
// cut below the minimum rate ends its request's context as its read fails, and the read's
// typed error says more than the context's. A client that went away ends the read at once.
const ctxGrace = time.Second

// ctxErr is the error of a body whose context ended: the pump's read error when it comes
// within ctxGrace (a typed *Error such as the minimum rate's; a body cut short, as a
// client that half-closes before the end of its body cuts it, is one that could not be
// read: readError), else the context's.
func (g *gatedBody) ctxErr() error {
	t := time.NewTimer(ctxGrace)
	defer t.Stop()
	select {
	case pc := <-g.pieces:
		if pc.err != nil && pc.err != io.EOF {
			return readError(pc.err)
		}
		if pc.buf != nil {
			g.free <- pc.buf
		}
	case <-t.C:
	}
	return g.ctx.Err()
}

func (g *gatedBody) release() {
	g.budget.release(g.held)
	g.held = 0
}

// close gives the weight back and stops the pump. The gatedBody is not read after.
func (g *gatedBody) close() {
	g.release()
	close(g.done)
}
