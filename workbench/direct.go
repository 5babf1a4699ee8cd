package workbench

import (
	"context"
	"net/url"

	"github.com/cairnstore/cairn/blob"
)

// DirectURL returns a presigned object-store URL from which the client can read the
// revision's bytes itself (docs/architecture.md#the-read-path; issue "large artifacts", direct reads), or nil
// when the revision cannot be read that way: direct reads are off (Config.DirectReads),
// the body is empty, inline or of several segments, or its one blob is stored compressed
// (the object's bytes would not be the file's). The URL names the object store's bucket
// and key and bypasses the node's digest check: the client verifies the bytes against
// Info.Digest (REST sends it as Cairn-Digest). Errors: the blob's absence or an object
// store failure, as every read reports them.
func (f *File) DirectURL(ctx context.Context) (*url.URL, error) {
	s, e := f.s, f.entry
	if s.cfg.DirectReads == nil || e.Size == 0 || len(e.Segments) != 1 || e.Segments[0].IsInline() {
		return nil, nil
	}
	uid, err := s.rootUID(ctx, f.agent)
	if err != nil {
		return nil, err
	}
	expiry := s.cfg.DirectReadExpiry
	sg := e.Segments[0]
	u, info, err := s.cfg.DirectReads.PresignGet(ctx, blob.Key{Root: uid, Digest: blob.Digest(sg.Digest)}, expiry)
	switch {
	case err != nil:
		return nil, AsError(err)
	case info.Encoding != blob.EncodingIdentity || info.Size != sg.Size:
		return nil, nil
	}
	return u, nil
}
