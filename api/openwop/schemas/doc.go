// Package schemas holds JSON Schemas published by the OpenWOP project (openwop/openwop-sdks,
// schemas/v2/; provenance per file in v2/README.md) and compiles them for validation:
// pack manifests (node packs, workflow-chain packs, agent manifests), proposals, the
// agent inventory and the error envelope.
//
// The files are published data, not code of ours: they are embedded byte for byte as the
// OpenWOP project publishes them and are never edited here. A schema that needs to change
// is copied from upstream again, for the whole set at once where upstream allows.
//
// Invariants:
//
//   - Every file under v2/ is an unmodified upstream copy whose "$id" is
//     BaseURL + its file name.
//   - Every "$ref" in the set resolves inside the set: compiling never reaches the network
//     or the filesystem (the compiler has no loader but the embedded files).
//   - Patterns are ECMA-262 regular expressions, as JSON Schema 2020-12 specifies, not Go
//     RE2 ones (upstream uses lookahead); each match is bounded by MatchTimeout.
//   - "format" is an annotation, as in the 2020-12 default vocabulary the files declare;
//     it is not asserted.
//   - The package imports nothing of Cairn's.
package schemas
