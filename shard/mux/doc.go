// Package mux lets every stream of node-to-node traffic (the Raft groups of tens of shards,
// request forwarding) share one TCP port (docs/architecture.md#replication-and-placement).
//
// A dialer opens a TCP connection (optionally mutual TLS), writes a small header naming the
// stream, and waits for a one-byte answer; the acceptor reads the header under a deadline
// and hands the connection to the listener registered for that stream. Wire format, after
// the TLS handshake when TLS is on:
//
//	dialer → acceptor: "CRNM" | version (1 byte, = 1) | name length n (1 byte) | name (n bytes)
//	acceptor → dialer: 'k' (accepted) | 'u' (no such stream) | 'v' (unsupported version)
//
// After 'k' the connection belongs to the stream: mux never reads or writes it again.
//
// Invariants callers rely on:
//
//   - A connection reaches a stream's listener only after a complete, valid header (and,
//     with TLS, a client certificate that verified against the configured CAs); anything
//     else is closed and counted (Stats), never handed over.
//   - A slow or silent dialer holds an acceptor goroutine for at most HeaderTimeout; the
//     number of connections in that phase is bounded (maxPendingHandshakes).
//   - Close of the Mux stops accepting, closes connections that are still in the header
//     phase and the listeners of every stream, and returns after its goroutines ended.
//     Connections already handed to a stream belong to that stream's owner; a StreamLayer
//     (the raft.StreamLayer flavour) closes those it accepted or dialled when it is closed,
//     and a read on an accepted one that this close interrupted ends with io.EOF (the end
//     of the stream, which raft does not log), never net.ErrClosed; so does a read on an
//     accepted one that its peer reset (a stopping peer closing with unread data).
//   - mux never interprets stream payloads.
package mux
