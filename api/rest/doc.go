// Package rest is Cairn's REST surface: streaming file bodies with standard HTTP semantics
// (ETag = generation, If-Match / If-None-Match, Range, 304, 412), Idempotency-Key, the
// contract's error envelope, the OpenAPI document, and the operational endpoints.
//
// Routes match on the escaped request path and validate each decoded component: "..",
// "//", "%2e%2e", "%2F" and a trailing "/" are rejected with InvalidArguments, never
// cleaned or redirected. Bodies stream in both directions with bounded memory. Error codes
// map to HTTP statuses in one table (statusOf).
package rest
