// Package redact is WSR-1 secret redaction on write (OpenWOP RFC 0059, api/openwop/doc.go): it
// replaces secret-shaped values and each tenant's registered secret values in a body
// before the body is stored.
//
// What it replaces:
//
//   - A registered secret value of the tenant (an agent root), loaded at start from the
//     secrets file (Parse, LoadFile), becomes "[REDACTED:<secret id>]". Values are plain
//     substrings: at least MinValueChars characters, at most MaxValueBytes bytes, with no
//     '[' or ']' (the marker's brackets), and not part of one of the tenant's own markers.
//   - A secret-shaped token becomes "[REDACTED:<kind>]", kind one of Kinds:
//     anthropic_api_key (sk-ant-…), openai_api_key (every other sk-… key: sk-proj-,
//     sk-svcacct-, sk-admin-, legacy), aws_access_key_id (AKIA/ASIA + 16 of [A-Z0-9]),
//     github_token (ghp_/gho_/ghu_/ghs_/ghr_ + 36..251 alphanumerics, github_pat_…),
//     slack_token (xoxb-/xoxa-/xoxp-/xoxr-/xoxs-…), jwt (three base64url parts whose
//     header decodes to a JSON object) and private_key (a PEM block from "-----BEGIN …
//     PRIVATE KEY-----" to the matching END line). A token must stand alone: the
//     characters around it are not of its alphabet (patterns.go says which), so UUIDs,
//     hex digests (sha256:…, git SHAs), kebab-case names, base64 that is not a JWT and
//     OpenWOP's WCT1-BLACKBOX-SECRET-<uuid> stay as they are.
//
// How: every occurrence of a registered value (Aho–Corasick, all overlaps) and every
// token is a candidate. Overlapping candidates compete: the longest wins (a registered
// value before a token of the same length, then the leftmost) and names the marker, and
// the marker replaces the whole run of candidates that overlap one another, so no part
// of a secret that lost to a longer one stays readable (replacing the winner alone would
// leave the loser's other end in the body). Markers never overlap; the body is written
// in one left-to-right pass.
//
// Invariants:
//
//   - Pure and deterministic: the output depends only on the tenant's configuration and
//     the input bytes; nothing reads the clock, the network or the disk (but LoadFile,
//     once, at start).
//   - No secret value leaves the package but in the input it came with: errors name the
//     tenant, the secret id, the field and the rule, never a value; Secret prints its id
//     only (fmt, slog); nothing is logged; the values live in memory only.
//   - Idempotent: redacting an output again changes nothing, and an output never holds a
//     registered value of its tenant (the load rules above make both hold: a marker
//     neither contains a value or a token, nor joins its neighbours into one).
//   - Tenants are isolated: tenant A's values are never looked for in B's bodies.
//   - Streaming (NewReader) holds at most StreamWindowBytes + StreamChunkBytes +
//     StreamMaxRunBytes of input (about 130 KiB) and gives the same bytes as Redact for
//     any split of the input into reads, except where a run of overlapping candidates is
//     longer than StreamMaxRunBytes (then the run is decided in pieces, each replaced by
//     its own marker).
package redact
