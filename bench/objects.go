package bench

import (
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sync/errgroup"
)

// objectStore is an S3 client's PutObject, GetObject and removal by prefix, in one bucket:
// what the minio and relay baselines (minio-go) and the S3 gateway phase (the AWS SDK for
// Go v2) send.
type objectStore interface {
	put(ctx context.Context, key string, body io.ReadSeeker, size int64) error
	get(ctx context.Context, key string) (io.ReadCloser, error)
	removePrefix(ctx context.Context, prefix string) error
	// closeIdle closes the client's idle connections.
	closeIdle()
}

// objectPhases turns a put or get scenario into S3 operations on an objectStore: PUT of a
// new key per operation under prefix+"p<phase>/" (put scenarios), GET of one of Files
// objects prepared under prefix+"read/" (get scenarios), with the bodies the REST
// scenarios generate.
type objectPhases struct {
	name      string // in errors: "minio baseline", "s3 gateway"
	store     objectStore
	prefix    string // ends in "/"
	sizeBytes int64
	files     int
	get       bool // a get scenario: read the prepared objects
	nonce     uint64
}

// isGetScenario reports whether scenario reads prepared objects (and puts none).
func isGetScenario(scenario string) bool {
	return scenario == ScenarioSmallGet || scenario == ScenarioObjectGet
}

// setup writes the Files objects a get scenario's phases read.
func (b *objectPhases) setup(ctx context.Context) error {
	if !b.get {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(setupConcurrency)
	for i := range b.files {
		g.Go(func() error { return b.put(gctx, b.readKey(uint64(i)), ^uint64(i)) })
	}
	if err := g.Wait(); err != nil {
		return errors.Join(fmt.Errorf("%s: setup: %w", b.name, err), b.Close())
	}
	return nil
}

func (b *objectPhases) readKey(i uint64) string { return fmt.Sprintf("%sread/%09d", b.prefix, i) }

// put writes the body of (nonce, seq) to key, the way the put scenarios generate it.
func (b *objectPhases) put(ctx context.Context, key string, seq uint64) error {
	return b.store.put(ctx, key, payloadBody(b.nonce, seq, b.sizeBytes), b.sizeBytes)
}

func (b *objectPhases) phase(ctx context.Context, i int) (Op, func() error, error) {
	if b.get {
		return OpFunc(func(ctx context.Context, seq uint64) error {
			key := b.readKey(mix(seq) % uint64(b.files))
			body, err := b.store.get(ctx, key)
			if err != nil {
				return err
			}
			return readWhole(body, key, b.sizeBytes)
		}), func() error { return nil }, nil
	}
	prefix := fmt.Sprintf("%sp%d/", b.prefix, i)
	return OpFunc(func(ctx context.Context, seq uint64) error {
			return b.put(ctx, fmt.Sprintf("%s%09d", prefix, seq), seq)
		}), func() error {
			return b.removePrefix(context.WithoutCancel(ctx), prefix)
		}, nil
}

func (b *objectPhases) removePrefix(ctx context.Context, prefix string) error {
	if err := b.store.removePrefix(ctx, prefix); err != nil {
		return fmt.Errorf("%s: clean up: %w", b.name, err)
	}
	return nil
}

// Close removes the objects the setup prepared and closes idle connections.
func (b *objectPhases) Close() error {
	defer b.store.closeIdle()
	if !b.get {
		return nil
	}
	return b.removePrefix(context.Background(), b.prefix)
}

// readWhole reads body, what a GET of key answered, to its end and closes it; a body of
// other than size bytes is an error wrapping io.ErrUnexpectedEOF.
func readWhole(body io.ReadCloser, key string, size int64) error {
	defer body.Close()
	n, err := io.Copy(io.Discard, body)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("GET %s: %d bytes, want %d: %w", key, n, size, io.ErrUnexpectedEOF)
	}
	return nil
}
