package backup

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/shard"
)

// Format is the archive format this binary writes and reads.
const Format = 1

// Part names (doc.go).
const (
	IdentityPart = "identity.json"
	CursorKey    = "cursor.key"
	EtcdPart     = "etcd.json"
	ManifestPart = "manifest.json"
	// KeysPart is an embedded node's API keys file (workbench/auth.FileStore; digests only).
	KeysPart = "keys.json"
	// BlobPrefix starts the part name of every blob file an embedded node's archive
	// copies from a blob directory inside its data directory (Identity.BlobDir).
	BlobPrefix = "blobs/"
)

// IsBlobPart reports whether name is a copied blob file's part.
func IsBlobPart(name string) bool { return strings.HasPrefix(name, BlobPrefix) }

// ShardPart is the part name of shard id's snapshot.
func ShardPart(id int) string { return "shards/" + strconv.Itoa(id) + ".snap.zst" }

// Kinds of Identity.
const (
	KindEmbedded = "embedded"
	KindCluster  = "cluster"
)

// Identity says what was backed up. The node's admin route writes it as the stream's
// last part.
type Identity struct {
	Format    int       `json:"format"`
	Backup    string    `json:"backup"`
	CreatedAt time.Time `json:"created_at"`
	// Kind is KindEmbedded or KindCluster.
	Kind string `json:"kind"`
	// NodeID is the embedded node's id (its Raft server id); for a cluster the node that
	// answered.
	NodeID string `json:"node_id"`
	// ClusterID, Shards and Replication are the cluster record's (cluster only).
	ClusterID   string `json:"cluster_id,omitempty"`
	Replication int    `json:"replication,omitempty"`
	// EtcdRevision is the etcd revision the records were read at (cluster only).
	EtcdRevision int64 `json:"etcd_revision,omitempty"`
	// Shards are the shard snapshots, by shard id.
	Shards []ShardInfo `json:"shards"`
	// Keys says the archive holds the embedded node's API keys (KeysPart). A cluster's
	// keys are among its etcd records.
	Keys bool `json:"keys,omitempty"`
	// BlobDir is set when the archive holds the node's blobs: the embedded node's blob
	// directory, relative to its data directory ("blobs" for the default --blob dir),
	// whose files are the parts under BlobPrefix. Empty: the blobs stay in the node's
	// blob store (an s3:// store, a directory outside the data directory, a cluster's
	// store), kept from garbage collection by the backup hold; a restore needs that store.
	BlobDir string `json:"blob_dir,omitempty"`
}

// Blobs counts the archive's blob parts.
func (m *Manifest) Blobs() int {
	n := 0
	for _, p := range m.Parts {
		if IsBlobPart(p.Name) {
			n++
		}
	}
	return n
}

// ShardInfo is one shard's snapshot: Version is the shard version it captures, at or after
// HoldVersion, the version of the backup hold it placed.
type ShardInfo struct {
	Shard       int    `json:"shard"`
	Version     uint64 `json:"version"`
	HoldVersion uint64 `json:"hold_version"`
}

// check refuses an identity this binary cannot restore: another format or an unknown kind.
func (id Identity) check() error {
	if id.Format != Format {
		return fmt.Errorf("%s: format %d is not supported (this binary reads %d)", IdentityPart, id.Format, Format)
	}
	if id.Kind != KindEmbedded && id.Kind != KindCluster {
		return fmt.Errorf("%w: %s: kind %q is neither %q nor %q", ErrDamaged, IdentityPart, id.Kind, KindEmbedded, KindCluster)
	}
	return nil
}

// Part is one stored part: its name, size in bytes and SHA-256 (hex).
type Part struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Manifest describes a whole archive.
type Manifest struct {
	Format   int      `json:"format"`
	Identity Identity `json:"identity"`
	Parts    []Part   `json:"parts"`
}

// Bytes totals the parts' sizes.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, p := range m.Parts {
		n += p.Bytes
	}
	return n
}

// ErrIncomplete: a backup stream or archive lacks a part (the stream ended early, the
// archive has no manifest).
var ErrIncomplete = errors.New("backup incomplete")

// ErrBroken: the node's backup stream broke off before its end (the node stopped or the
// connection failed). It comes with ErrIncomplete; nothing written is a backup yet, and
// the backup may be run again once the node answers.
var ErrBroken = errors.New("the backup stream broke off")

// ErrDamaged: a part does not match the manifest (size or digest), or a shard snapshot
// does not decode.
var ErrDamaged = errors.New("backup damaged")

// maxMetaPartBytes bounds the JSON parts read into memory (identity, manifest, etcd).
const maxMetaPartBytes = 256 << 20

// Write stores the parts of a node's backup stream (a tar stream, identity.json last)
// into t, then the manifest. Errors: ErrIncomplete when the stream ends before
// identity.json, a part name outside the layout, or t's error. Nothing is a valid archive
// until Write returns nil (no manifest).
func Write(ctx context.Context, t Target, stream io.Reader) (*Manifest, error) {
	tr := tar.NewReader(stream)
	m := &Manifest{Format: Format}
	var identity []byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w: %v", ErrIncomplete, ErrBroken, err)
		}
		if h.Name == ManifestPart || !ValidPart(h.Name) {
			return nil, fmt.Errorf("backup stream: unexpected part %q", h.Name)
		}
		p, err := storePart(ctx, t, h.Name, tr)
		if err != nil {
			return nil, err
		}
		if p.Bytes != h.Size {
			return nil, fmt.Errorf("%w: part %s: %d of %d bytes", ErrIncomplete, h.Name, p.Bytes, h.Size)
		}
		m.Parts = append(m.Parts, p)
		if h.Name == IdentityPart {
			if identity, err = readPart(ctx, t, IdentityPart); err != nil {
				return nil, err
			}
		}
	}
	if identity == nil {
		return nil, fmt.Errorf("%w: the stream ended before %s", ErrIncomplete, IdentityPart)
	}
	if err := json.Unmarshal(identity, &m.Identity); err != nil {
		return nil, fmt.Errorf("backup stream: %s: %w", IdentityPart, err)
	}
	if err := m.Identity.check(); err != nil {
		return nil, fmt.Errorf("backup stream: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := putBytes(ctx, t, ManifestPart, b); err != nil {
		return nil, err
	}
	return m, nil
}

// ValidPart reports whether name is a part of the archive layout (doc.go).
func ValidPart(name string) bool {
	switch name {
	case IdentityPart, CursorKey, EtcdPart, KeysPart, ManifestPart:
		return true
	}
	if rel, ok := strings.CutPrefix(name, BlobPrefix); ok {
		return validBlobPath(rel)
	}
	id, ok := strings.CutPrefix(name, "shards/")
	if !ok {
		return false
	}
	id, ok = strings.CutSuffix(id, ".snap.zst")
	n, err := strconv.Atoi(id)
	return ok && err == nil && n >= 0 && strconv.Itoa(n) == id
}

// validBlobPath accepts a slash-separated relative path whose every element is a plain
// name: no empty, ".", ".." or dot-file element (a blob directory's temporary files
// start with a dot), no backslash, no NUL.
func validBlobPath(rel string) bool {
	if rel == "" || len(rel) > 1024 || strings.ContainsAny(rel, "\\\x00") {
		return false
	}
	for _, e := range strings.Split(rel, "/") {
		if e == "" || strings.HasPrefix(e, ".") {
			return false
		}
	}
	return true
}

func storePart(ctx context.Context, t Target, name string, r io.Reader) (Part, error) {
	w, err := t.Create(ctx, name)
	if err != nil {
		return Part{}, err
	}
	h := sha256.New()
	src := &readErr{r: r}
	n, err := io.Copy(io.MultiWriter(w, h), src)
	if err != nil {
		w.Abort()
		if src.err != nil { // the stream, not the destination
			return Part{}, fmt.Errorf("%w: part %s: %w: %v", ErrIncomplete, name, ErrBroken, err)
		}
		return Part{}, fmt.Errorf("%w: part %s: %v", ErrIncomplete, name, err)
	}
	if err := w.Close(); err != nil {
		return Part{}, fmt.Errorf("backup %s: store %s: %w", t, name, err)
	}
	return Part{Name: name, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// readErr records the error of the reader it wraps, telling a broken stream from a
// destination that refused a write.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

func putBytes(ctx context.Context, t Target, name string, b []byte) error {
	w, err := t.Create(ctx, name)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}

func readPart(ctx context.Context, t Target, name string) ([]byte, error) {
	rc, err := t.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxMetaPartBytes+1))
	if err == nil && len(b) > maxMetaPartBytes {
		err = fmt.Errorf("part %s is larger than %d bytes", name, maxMetaPartBytes)
	}
	return b, err
}

// ReadManifest reads t's manifest. Errors: ErrNoDestination when t is a directory that
// does not exist, ErrIncomplete when there is no manifest.
func ReadManifest(ctx context.Context, t Target) (*Manifest, error) {
	b, err := readPart(ctx, t, ManifestPart)
	if errors.Is(err, ErrNoPart) {
		if d, ok := t.(dirTarget); ok && d.missing() {
			return nil, fmt.Errorf("%w: %s does not exist", ErrNoDestination, t)
		}
		return nil, fmt.Errorf("%w: %s has no %s (the backup did not finish)", ErrIncomplete, t, ManifestPart)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, ManifestPart, err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("backup format %d is not supported (this binary reads %d)", m.Format, Format)
	}
	if err := m.Identity.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestPart, err)
	}
	return &m, nil
}

// Verify reads t's manifest and rereads every part against it (size and SHA-256), and
// checks that every shard the identity names has its snapshot part, and decodes every
// shard snapshot, which must be at the version the identity names. Errors: those of
// ReadManifest, ErrIncomplete, ErrDamaged (naming the part), or t's error.
//
// Verify reads the archive alone: it does not ask the node whether the backup's hold
// still keeps the blobs an archive without them (Identity.BlobDir "") needs;
// Manifest.CheckHolds compares the node's holds with it.
func Verify(ctx context.Context, t Target) (*Manifest, error) {
	m, err := ReadManifest(ctx, t)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, p := range m.Parts {
		if err := verifyPart(ctx, t, p); err != nil {
			return m, err
		}
		have[p.Name] = true
	}
	for _, need := range requiredParts(m.Identity) {
		if !have[need] {
			return m, fmt.Errorf("%w: the manifest lists no %s", ErrIncomplete, need)
		}
	}
	for _, s := range m.Identity.Shards {
		name := ShardPart(s.Shard)
		v, err := shard.CheckSnapshot(func() (io.ReadCloser, error) { return t.Open(ctx, name) })
		if err == nil && v != s.Version {
			err = fmt.Errorf("it captures shard version %d, the identity says %d", v, s.Version)
		}
		if err != nil {
			return m, fmt.Errorf("%w: %s: %v", ErrDamaged, name, err)
		}
	}
	return m, nil
}

func requiredParts(id Identity) []string {
	need := []string{IdentityPart, CursorKey}
	if id.Kind == KindCluster {
		need = append(need, EtcdPart)
	}
	if id.Keys {
		need = append(need, KeysPart)
	}
	for _, s := range id.Shards {
		need = append(need, ShardPart(s.Shard))
	}
	return need
}

func verifyPart(ctx context.Context, t Target, p Part) error {
	rc, err := t.Open(ctx, p.Name)
	if errors.Is(err, ErrNoPart) {
		return fmt.Errorf("%w: part %s is missing", ErrDamaged, p.Name)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		return fmt.Errorf("backup %s: read %s: %w", t, p.Name, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != p.Bytes || got != p.SHA256 {
		return fmt.Errorf("%w: part %s holds %d bytes with SHA-256 %s; the manifest says %d bytes, %s", ErrDamaged, p.Name, n, got, p.Bytes, p.SHA256)
	}
	return nil
}

// tmpPrefix starts the name of a directory destination's temporary part files.
const tmpPrefix = ".tmp-"

// CheckBackupID fails with an *OtherBackupError (ErrOtherBackup) when t's manifest or
// identity.json names a backup other than id (a destination holding neither passes: a
// backup cut off before its identity).
func CheckBackupID(ctx context.Context, t Target, id string) error {
	for _, name := range []string{ManifestPart, IdentityPart} {
		b, err := readPart(ctx, t, name)
		if errors.Is(err, ErrNoPart) {
			continue
		}
		if err != nil {
			return err
		}
		var v struct {
			Backup   string `json:"backup"` // identity.json
			Identity struct {
				Backup string `json:"backup"`
			} `json:"identity"` // manifest.json
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrDamaged, name, err)
		}
		if got := v.Backup + v.Identity.Backup; got != id {
			return &OtherBackupError{Dest: t.String(), Backup: got, Want: id, Complete: name == ManifestPart}
		}
	}
	return nil
}

// DiscardPartial deletes what backup id left at t, complete or not: the manifest first,
// then every part of the layout and every temporary part file, and returns how many
// files it deleted. It deletes nothing when t holds another backup (CheckBackupID). It
// does not touch the node's hold: release that first (a destination a crash cut off has
// no manifest, so only its id, from `cairn admin backup holds`, names it). Errors: a
// destination of another backup, or t's error.
func DiscardPartial(ctx context.Context, t Target, id string) (int, error) {
	if err := CheckBackupID(ctx, t, id); err != nil {
		return 0, err
	}
	names, err := t.List(ctx)
	if err != nil {
		return 0, err
	}
	drop := []string{ManifestPart} // first: what is left is no backup
	for _, n := range names {
		if n != ManifestPart && (ValidPart(n) || strings.HasPrefix(path.Base(n), tmpPrefix)) {
			drop = append(drop, n)
		}
	}
	if err := t.Remove(ctx, drop); err != nil {
		return 0, err
	}
	if !slices.Contains(names, ManifestPart) {
		return len(drop) - 1, nil
	}
	return len(drop), nil
}
