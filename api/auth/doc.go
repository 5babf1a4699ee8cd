// Package auth is who is calling (DESIGN.md §4, §10): principals, their scopes and agent
// roots, and the request context that carries them.
//
// Invariants:
//
//   - A principal's ID is public and stable; a key's secret never leaves the call that
//     created it, and is never logged, stored or returned again.
//   - A root a principal may not use answers exactly like a root that does not exist.
//   - Work the node does on its own behalf (workers) carries no principal.
package auth
