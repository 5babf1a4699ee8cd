package s3

import (
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// lookup resolves what a request names against the Workbench service and answers as S3
// does: its bucket (NoSuchBucket for one missing or out of the key's reach, the same
// answer), an object (NoSuchKey), a version (versions.go: NoSuchVersion), a copy's source
// and its conditions (copy.go), a write's precondition on its target (objects.go:
// PreconditionFailed). It is the part the object operations (Handler) and the multipart
// uploads (multipart) both read through. Every lookup reads with the request's own
// context, so with the caller's principal (never multipart's bookkeeping: an object
// outside a key's prefixes is missing here), and keeps nothing between requests.
type lookup struct {
	svc *workbench.Service
}

// workspace reads the bucket's workbench from a linearizable view: NoSuchBucket when it
// is missing or the key does not reach it (the same answer).
func (l *lookup) workspace(r *request) (*meta.View, *meta.Workspace, error) {
	view, ws, _, err := l.svc.Reads.ViewAt(r.Context(), r.agent, r.bucket, workbench.At{})
	if err != nil {
		return nil, nil, bucketError(err)
	}
	return view, ws, nil
}

// objectError maps an error about an object: NotFound is NoSuchKey when the bucket
// exists and NoSuchBucket when it does not.
func (l *lookup) objectError(r *request, err error) error {
	e := fromWorkbench(err, CodeNoSuchKey)
	if codeOf(e) == CodeNoSuchKey {
		if _, _, berr := l.workspace(r); berr != nil {
			return berr
		}
	}
	return e
}

// absent answers a read of a key no object can have (readPath) in bucket: NoSuchBucket
// when the bucket is missing or out of the key's reach, as for any read; when the read
// names a version, InvalidArgument for a malformed id and NoSuchVersion for any other;
// else NoSuchKey.
func (l *lookup) absent(r *request, bucket string, named bool, versionID string) error {
	if named {
		if _, err := parseVersionID(versionID, bucket, ""); err != nil {
			return err
		}
	}
	in := *r
	in.bucket = bucket
	if _, _, err := l.workspace(&in); err != nil {
		return err
	}
	if named {
		return noSuchVersion()
	}
	return errorf(CodeNoSuchKey, "the specified key does not exist")
}
