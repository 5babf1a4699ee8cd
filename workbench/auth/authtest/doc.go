// Package authtest is the conformance suite every auth.Store runs (the file store of an
// embedded node, the etcd store of a cluster): create, lookup, list, revoke, duplicate
// ids, persistence across a reopen, and a revocation made through one handle seen by
// another within RevocationBound. TrustHeader and As stand in for the node's
// authentication in the surfaces' tests: a request names its principal in a test header.
//
// It is test support: only _test.go files import it.
package authtest
