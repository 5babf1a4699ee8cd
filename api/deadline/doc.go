// Package deadline holds the progress-based deadlines every HTTP surface puts on its
// requests (docs/architecture.md, "Packages"): a request body must keep arriving at a
// minimum average rate (Body), and each write of a response must be taken by the client
// within a timeout (Extend), so a slow-loris upload or a client that stops reading ends
// with a typed error instead of holding its connection and its slots for ever, while a
// slow but moving transfer of any size completes. http.Server's ReadTimeout and
// WriteTimeout would bound a whole transfer instead.
//
// Invariants:
//
//   - Only time spent waiting inside the body's Read counts against the client: a server
//     slow to read (waiting for an ingest slot, uploading segments) never blames it.
//   - A body cut off keeps answering the surface's own error (Body's slow function), so
//     each surface answers in its own wire format.
package deadline
