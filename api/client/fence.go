package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnstore/cairn/internal/pause"
)

// ListingAttempts is the most times a live listing is run from its first page when a
// later page fails with ReadFenceChanged (the workbench changed since the first page;
// docs/workbench.md, "Cursors"): by RestartListing and ListAll, and so for each
// directory of Walk, Export and Import's --delete walk.
const ListingAttempts = 5

// listingPause is the pause before a listing's second run; each further pause doubles
// (50, 100, 200, 400 ms for ListingAttempts 5).
const listingPause = 50 * time.Millisecond

// ErrWorkbenchKeptChanging is wrapped, together with the last ReadFenceChanged *Error
// (so ErrorCode still answers "ReadFenceChanged"), by the error of a listing whose every
// run within ListingAttempts met a change of the workbench. Listing again is safe; a
// listing at a snapshot never meets one.
var ErrWorkbenchKeptChanging = errors.New("the workbench kept changing while it was listed")

// RestartListing runs list, which must list from the first page and discard whatever an
// earlier run collected, and runs it again from the start while it fails with
// ReadFenceChanged, at most ListingAttempts runs, pausing between them (50 ms, then
// doubling). A pause that ctx's deadline would cut short is not taken. Any other error, or
// nil, is returned as list returned it; after the last run the error wraps
// ErrWorkbenchKeptChanging and the last ReadFenceChanged; when ctx ends during a pause,
// ctx's error and the last ReadFenceChanged. An error that already wraps
// ErrWorkbenchKeptChanging (list ran a listing that restarts on its own, as ListAll and
// Walk do) is returned at once, so bounds never multiply.
func RestartListing(ctx context.Context, list func() error) error {
	wait := listingPause
	for attempt := 1; ; attempt++ {
		err := list()
		if ErrorCode(err) != "ReadFenceChanged" || errors.Is(err, ErrWorkbenchKeptChanging) {
			return err // an inner RestartListing already spent the bound
		}
		if attempt == ListingAttempts {
			return fmt.Errorf("%w (%d listings from the first page each met a change; listing again is safe): %w",
				ErrWorkbenchKeptChanging, attempt, err)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return fmt.Errorf("%w (the deadline leaves no time to list again after %d listings): %w",
				ErrWorkbenchKeptChanging, attempt, err)
		}
		if cerr := pause.For(ctx, wait); cerr != nil {
			return fmt.Errorf("%w: %w", cerr, err)
		}
		wait *= 2
	}
}

// ListAll returns every direct child of dir, following cursors (opts.Cursor is ignored:
// it starts at the first page). A live listing that fails with ReadFenceChanged on a
// later page is listed again from the first page, as RestartListing says, so the entries
// are one consistent listing: never pages of two read versions, and none of an
// abandoned run.
func (c *Client) ListAll(ctx context.Context, agent, wb, dir string, opts ListOptions) ([]Entry, error) {
	var entries []Entry
	err := RestartListing(ctx, func() error {
		entries = entries[:0]
		opts.Cursor = ""
		for {
			page, err := c.List(ctx, agent, wb, dir, opts)
			if err != nil {
				return err
			}
			entries = append(entries, page.Entries...)
			if page.NextCursor == "" {
				return nil
			}
			opts.Cursor = page.NextCursor
		}
	})
	if err != nil {
		return nil, err
	}
	return entries, nil
}
