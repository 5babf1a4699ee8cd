package s3

import "net/http"

// What a router in front of the gateway needs (api/server's S3 router on a cluster node,
// docs/architecture.md "Replication and placement"): where a request is served depends
// on its agent root, which no S3 URL names — it is the root of the key that signed it.

// Root is the agent root r acts in: the one root of the key whose valid signature r
// carries. It checks what ServeHTTP checks before the body (Verifier.Verify: the
// signature, the clock, the expiry; a live key acting in exactly one root) and reads no
// byte of the body, so r can still be served here or forwarded whole. false when r is
// anonymous, badly signed, expired, or signed by a key that is unknown, revoked or not
// for one root: ServeHTTP answers it with the refusal, wherever it is served.
func (h *Handler) Root(r *http.Request) (string, bool) {
	_, _, agent, err := h.identify(r)
	return agent, err == nil
}

// Unavailable answers r, which no node can serve right now (its shard has no leader, or
// the leader cannot be reached), as S3 answers a retryable refusal: 503 ServiceUnavailable
// in S3's XML with Retry-After: 1, which every S3 client retries. msg says why for
// people; it must name no address.
func (h *Handler) Unavailable(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("Retry-After", "1")
	WriteError(w, r, h.nextID(), errorf(CodeServiceUnavailable, "%s", msg))
}
