package documents

import (
	"context"
	"errors"

	"github.com/cairnstore/cairn/meta"
)

// Store is everything this package needs of Cairn: files of one workbench of an agent
// root, written through Cairn's ordinary write path (so replicated, versioned and on the
// change feed like any file), and the root's change feed. api/server adapts the Workbench
// service to it; nothing else of Cairn is imported for storage.
//
// Every method acts as the principal ctx carries (auth.FromContext) through this package's
// surface (Surface), so Cairn's own access rules apply: a root or workbench the caller
// does not reach answers ErrNotFound. Errors wrap the sentinels below; any other error is
// a failure of the store (answered 503 when it wraps ErrUnavailable, else 500).
type Store interface {
	// ReadFile returns the body and generation of path in workbench ws of agent's root.
	// ErrNotFound when the file (or workbench, or root) does not exist; ErrTooLarge when
	// the body is above maxBytes.
	ReadFile(ctx context.Context, agent, ws, path string, maxBytes int64) (body []byte, generation uint64, err error)
	// WriteFile publishes body at path (creating the workbench when missing). ifGeneration
	// 0 creates only: ErrExists when the path holds a file. Otherwise it replaces exactly
	// that generation: ErrConflict when the path holds another one (or none). The check
	// and the write are one atomic Cairn command. Returns the new generation.
	WriteFile(ctx context.Context, agent, ws, path string, body []byte, contentType string, ifGeneration uint64) (generation uint64, err error)
	// ReadDir returns the first maxFiles files directly in directory dir of workbench ws
	// whose names sort after after ("": from the first), in byte order of their names,
	// read from one view (more: further files follow); none (and no error) when dir or ws
	// does not exist. ErrTooLarge when their bodies together are more than maxBytes.
	ReadDir(ctx context.Context, agent, ws, dir, after string, maxFiles int, maxBytes int64) (files []StoredFile, more bool, err error)
	// RecentEvents returns the newest change-feed events of agent's root (at most limit,
	// oldest first) as the caller may see them, skipping those of workbench skip. None
	// when the root does not exist.
	RecentEvents(ctx context.Context, agent, skip string, limit int) ([]meta.Event, error)
	// Event returns the change-feed event of agent's root at pos; ErrNotFound when the feed
	// does not hold it (never was, dropped by retention, or hidden from the caller).
	Event(ctx context.Context, agent string, pos meta.FeedPosition) (meta.Event, error)
}

// Errors a Store wraps (errors.Is).
var (
	ErrNotFound    = errors.New("documents: not found")
	ErrExists      = errors.New("documents: already exists")
	ErrConflict    = errors.New("documents: generation conflict")
	ErrTooLarge    = errors.New("documents: too large")
	ErrForbidden   = errors.New("documents: permission denied")
	ErrUnavailable = errors.New("documents: store unavailable")
	// ErrRateLimited: the principal's request rate or the node's memory budget is used
	// up for now (429 with Retry-After).
	ErrRateLimited = errors.New("documents: rate limited")
)

// StoredFile is a file ReadDir returns: its name in its directory, body and generation.
type StoredFile struct {
	Name       string
	Body       []byte
	Generation uint64
}

// absentRoot is the Store of an agent root that holds nothing: what a request acting in
// another root than its owner's reads (Handler.serve). Every read finds nothing; every
// write path reads first what it needs (a head, an observation, a proposal) and stops
// there, so WriteFile is never reached and answers as a missing workbench would.
type absentRoot struct{}

func (absentRoot) ReadFile(context.Context, string, string, string, int64) ([]byte, uint64, error) {
	return nil, 0, ErrNotFound
}

func (absentRoot) WriteFile(context.Context, string, string, string, []byte, string, uint64) (uint64, error) {
	return 0, ErrNotFound
}

func (absentRoot) ReadDir(context.Context, string, string, string, string, int, int64) ([]StoredFile, bool, error) {
	return nil, false, nil
}

func (absentRoot) RecentEvents(context.Context, string, string, int) ([]meta.Event, error) {
	return nil, nil
}

func (absentRoot) Event(context.Context, string, meta.FeedPosition) (meta.Event, error) {
	return meta.Event{}, ErrNotFound
}
