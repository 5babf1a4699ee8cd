package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// ErrNoPart: the destination holds no part of that name.
var ErrNoPart = errors.New("backup part not found")

// Target is where an archive lives: a local directory or an s3:// prefix.
type Target interface {
	// Create starts writing part name; the part exists under its name only once Close
	// returned nil (Abort drops it).
	Create(ctx context.Context, name string) (PartWriter, error)
	// Open reads part name, or fails with ErrNoPart.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// Remove deletes the parts named (absent ones are not an error).
	Remove(ctx context.Context, names []string) error
	// List returns the name of every file under the destination, slash-separated and in
	// no set order: parts, and the temporary files of parts a crash cut off.
	List(ctx context.Context) ([]string, error)
	String() string
}

// PartWriter writes one part.
type PartWriter interface {
	io.Writer
	Close() error
	Abort()
}

// S3 says how to reach the object store of an s3:// destination.
type S3 struct {
	// Endpoint is "http://host:port" or "https://host[:port]".
	Endpoint             string
	Region               string
	AccessKey, SecretKey string
}

// OpenTarget opens the destination at: "s3://BUCKET[/PREFIX]" (with s3), "dir://PATH" or
// a plain path. A directory is created when missing. Errors name the flag's value.
func OpenTarget(at string, s3 S3) (Target, error) {
	if rest, ok := strings.CutPrefix(at, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		prefix = strings.Trim(prefix, "/")
		if bucket == "" {
			return nil, fmt.Errorf("backup destination %q: the s3:// URL names no bucket", at)
		}
		u, err := url.Parse(s3.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("backup destination %q: the S3 endpoint %q must be http://host:port or https://host[:port]", at, s3.Endpoint)
		}
		var creds *credentials.Credentials
		if s3.AccessKey != "" {
			creds = credentials.NewStaticV4(s3.AccessKey, s3.SecretKey, "")
		} else {
			creds = credentials.New(&credentials.Static{Value: credentials.Value{SignerType: credentials.SignatureAnonymous}})
		}
		cli, err := minio.New(u.Host, &minio.Options{Creds: creds, Secure: u.Scheme == "https", Region: s3.Region})
		if err != nil {
			return nil, fmt.Errorf("backup destination %q: %w", at, err)
		}
		return &s3Target{cli: cli, bucket: bucket, prefix: prefix, url: at, host: u.Host}, nil
	}
	dir := strings.TrimPrefix(at, "dir://")
	if dir == "" {
		return nil, errors.New("backup destination is empty: give a directory or an s3:// URL")
	}
	return dirTarget(dir), nil
}

// dirTarget is a local directory; parts are written to a temporary file, fsynced and
// renamed into place.
type dirTarget string

func (d dirTarget) String() string { return string(d) }

func (d dirTarget) Create(_ context.Context, name string) (PartWriter, error) {
	p := filepath.Join(string(d), filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return nil, err
	}
	return &filePart{f: f, final: p}, nil
}

func (d dirTarget) Open(_ context.Context, name string) (io.ReadCloser, error) {
	f, err := os.Open(filepath.Join(string(d), filepath.FromSlash(name)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", name, ErrNoPart)
	}
	return f, err
}

func (d dirTarget) Remove(_ context.Context, names []string) error {
	for _, n := range names {
		p := filepath.Join(string(d), filepath.FromSlash(n))
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		// Directories the part left empty go too (os.Remove refuses a non-empty one).
		for dir := filepath.Dir(p); dir != filepath.Clean(string(d)) && strings.HasPrefix(dir, string(d)); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
	}
	return nil
}

func (d dirTarget) List(_ context.Context) ([]string, error) {
	var out []string
	err := filepath.WalkDir(string(d), func(p string, e os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.Type().IsRegular() {
			rel, err := filepath.Rel(string(d), p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

type filePart struct {
	f     *os.File
	final string
}

func (p *filePart) Write(b []byte) (int, error) { return p.f.Write(b) }

func (p *filePart) Abort() {
	p.f.Close()
	os.Remove(p.f.Name())
}

func (p *filePart) Close() error {
	err := p.f.Sync()
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(p.f.Name(), p.final)
	}
	if err != nil {
		os.Remove(p.f.Name())
		return err
	}
	if dir, err := os.Open(filepath.Dir(p.final)); err == nil {
		err = dir.Sync()
		dir.Close()
		return err
	}
	return nil
}

// s3Target is a prefix of a bucket; a part is spooled to a temporary file and uploaded
// with its size on Close (one PUT, or a multipart upload of minio-go's part size).
type s3Target struct {
	cli            *minio.Client
	bucket, prefix string
	url            string
	host           string // the endpoint's host[:port]
}

func (s *s3Target) String() string { return s.url }

func (s *s3Target) object(name string) string {
	if s.prefix == "" {
		return name
	}
	return path.Join(s.prefix, name)
}

func (s *s3Target) Create(ctx context.Context, name string) (PartWriter, error) {
	f, err := os.CreateTemp("", "cairn-backup-*")
	if err != nil {
		return nil, err
	}
	return &s3Part{ctx: ctx, t: s, name: name, f: f}, nil
}

func (s *s3Target) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if _, err := s.cli.StatObject(ctx, s.bucket, s.object(name), minio.StatObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, fmt.Errorf("%s: %w", name, ErrNoPart)
		}
		return nil, fmt.Errorf("backup %s: %s: %w", s.url, name, err)
	}
	obj, err := s.cli.GetObject(ctx, s.bucket, s.object(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("backup %s: %s: %w", s.url, name, err)
	}
	return obj, nil
}

func (s *s3Target) Remove(ctx context.Context, names []string) error {
	for _, n := range names {
		if err := s.cli.RemoveObject(ctx, s.bucket, s.object(n), minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("backup %s: remove %s: %w", s.url, n, err)
		}
	}
	return nil
}

func (s *s3Target) List(ctx context.Context) ([]string, error) {
	prefix := ""
	if s.prefix != "" {
		prefix = s.prefix + "/"
	}
	var out []string
	for obj := range s.cli.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("backup %s: list: %w", s.url, obj.Err)
		}
		out = append(out, strings.TrimPrefix(obj.Key, prefix))
	}
	return out, nil
}

type s3Part struct {
	ctx  context.Context
	t    *s3Target
	name string
	f    *os.File
}

func (p *s3Part) Write(b []byte) (int, error) { return p.f.Write(b) }

func (p *s3Part) Abort() {
	p.f.Close()
	os.Remove(p.f.Name())
}

func (p *s3Part) Close() error {
	defer p.Abort()
	size, err := p.f.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = p.f.Seek(0, io.SeekStart)
	}
	if err == nil {
		_, err = p.t.cli.PutObject(p.ctx, p.t.bucket, p.t.object(p.name), p.f, size, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	}
	if err != nil {
		return fmt.Errorf("backup %s: upload %s: %w", p.t.url, p.name, err)
	}
	return nil
}
