// Package durable writes the small files a node's identity and settings live in (its id,
// its cursor key, a replica's server id, the API key file, a restored backup's parts) so
// that a crash or a power loss at any moment leaves either the old file or the new one,
// whole.
//
// Invariants:
//
//   - WriteFile writes a temporary file next to the target, fsyncs it, renames it over the
//     target and fsyncs the directory: after it returns, the new contents survive a power
//     loss; before, a reader sees the old contents or none, never a prefix.
//   - On an error the temporary file is removed and the target is unchanged.
//   - Remove removes a file and fsyncs its directory: after it returns, the file stays
//     gone after a power loss.
package durable
