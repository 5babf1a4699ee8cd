// Package auth is who is calling (docs/architecture.md#surfaces): principals, their scopes and agent
// roots, the request context that carries them, and the API keys that authenticate them:
// the key format (key.go), the Store interface with its two implementations (FileStore,
// one file in an embedded node's data directory; EtcdStore, a cluster's keys under its
// control-plane prefix with a watch-fed cache) and Authenticate.
//
// A key is "cairn_<id>_<secret>": a public 16-hex-digit id (the principal's ID) and 256
// random bits, shown once at creation. Stores keep the key's SHA-256 digest only, and
// Authenticate compares digests in constant time (crypto/subtle).
//
// Invariants:
//
//   - A principal's ID is public and stable; a key's secret never leaves the call that
//     created it, and is never logged, stored or returned again.
//   - A root a principal may not use answers exactly like a root that does not exist, and
//     a workbench it may not reach (a key bound to one workbench: Principal.ReachIn, the
//     one decision every surface follows) exactly like a workbench that does not exist.
//   - Work the node does on its own behalf (workers) carries no principal.
//   - No error of this package contains a secret; at most a key id.
//   - Store.Lookup answers from memory: a request never waits on a disk or on etcd to be
//     authenticated. An EtcdStore's cache follows etcd's watch, so a revocation through
//     any node is seen by every node as soon as etcd delivers it (well within 5 s).
//   - A revoked key stays listed (with its revocation time) and never authenticates again.
//   - Scoped keys (issue 31): Principal.Workbench binds a key to one workbench of its
//     roots, Principal.Prefixes to the paths at or below section-qualified prefixes;
//     scopes are its operations (no second vocabulary). A path outside the prefixes
//     answers exactly as a missing path (meta.View.OnlyPaths), a write naming one is
//     PermissionDenied decided from the request alone, and root-wide records are refused
//     as for a workbench-bound key. A proposal's evidence is resolved in what the key
//     reaches (meta.ProposalView.ResolveEvidence): a hidden path or workbench it names
//     answers as a missing one. A rewind whose scope names a path or prefix outside the
//     prefixes is PermissionDenied, preview and apply, whether the path exists or
//     changed. Minting, renewing and retiring a snapshot are operations on the whole
//     workbench (a snapshot holds every path; a fork's base is one), PermissionDenied as
//     commit and fork are; a key bound to prefixes or to one workbench lists a
//     workbench's snapshots without those a fork pinned, whose annotation
//     (pinned_by_fork, the reason) names the fork. Prefixes bind paths, not a workbench's
//     own records: its revision (which a hidden path's write moves) and its commits
//     (identities and whole-tree digests) stay visible to a key that sees the workbench.
//     An expired key is refused exactly as an unknown one.
//   - A minted key (mint.go, POST /v1/keys) is never broader than its minter (Narrower:
//     roots, workbench, prefixes, scopes, expiry), records MintedBy, and stops working
//     when any key above it is revoked or expires (Key.LiveIn).
package auth
