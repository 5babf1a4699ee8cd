package s3

import (
	"context"

	"github.com/cairnstore/cairn/workbench/auth"
)

// Multipart uploads of a key bound to path prefixes (auth.Principal.Prefixes; doc.go,
// "Multipart uploads"). An upload's files in UploadsWorkbench are named by bucket and
// upload id ("<bucket>/<upload id>/…"), not by the object key they will become, so the
// service's path restriction (meta.View.OnlyPaths) would hide them all from such a key
// and refuse every write to them. The gateway decides instead, by the upload's target
// object key, with the caller's own principal:
//
//   - CreateMultipartUpload first asks the service whether the caller may write the
//     target (workbench.Writes.MayWrite): a key outside the prefixes is AccessDenied,
//     the answer of a PUT of it, and no record is written;
//   - an upload whose record names a key the caller does not see (showsKey) answers, on
//     every request that names its id, exactly as an upload id never issued
//     (NoSuchUpload), and ListMultipartUploads leaves it out;
//   - what the caller reads of the objects themselves (a copy source, the key's versions
//     a Complete searches, the target's current generation) it reads with its own
//     principal, and Complete asks MayWrite of the target again before it publishes.
//
// Only then does the gateway read and write the upload's files, and publish the object
// (workbench.Writes.Compose reads the parts and writes the target in one command), with
// bookkeeping: the caller's principal without its prefixes, still its id (attribution,
// upload slots), roots, workbench binding and scopes.

// bookkeeping returns the context the gateway reads and writes UploadsWorkbench in for
// r: r's own, with its principal's path prefixes dropped when it has some. It is used
// for nothing but UploadsWorkbench's files and the publish of an upload whose target key
// the caller sees (showsKey, MayWrite).
func (r *request) bookkeeping() context.Context {
	p, ok := auth.FromContext(r.Context())
	if !ok || len(p.Prefixes) == 0 {
		return r.Context()
	}
	p.Prefixes = nil
	return auth.WithPrincipal(r.Context(), p)
}

// showsKey reports whether r's caller may use the object key of r's root (a
// section-qualified path): every key without path prefixes, else one at or below them
// (auth.Reach.ShowsPath, the service's rule).
func (r *request) showsKey(key string) bool {
	p, ok := auth.FromContext(r.Context())
	return !ok || p.ReachIn(r.agent).ShowsPath(key)
}
