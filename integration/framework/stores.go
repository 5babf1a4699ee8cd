package framework

import (
	"strconv"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob/s3/s3test"
	"github.com/cairnstore/cairn/internal/etcdtest"
	"github.com/cairnstore/cairn/ops"
)

// ObjectStore is a real MinIO with a bucket of the test's own (blob/s3/s3test).
type ObjectStore struct {
	Endpoint string // host:port
	Bucket   string
}

// StartObjectStore starts MinIO (or reuses the package's) and makes a new bucket; both go
// away when t ends.
func StartObjectStore(t *testing.T) ObjectStore {
	t.Helper()
	m := s3test.Start(t)
	return ObjectStore{Endpoint: m.Endpoint, Bucket: s3test.Bucket()}
}

// ExportCredentials sets the S3 credential variables (ops.EnvS3AccessKey,
// ops.EnvS3SecretKey) for the rest of t, where a `cairn` child process reads them: a
// node's credentials never travel as arguments.
func (o ObjectStore) ExportCredentials(t *testing.T) {
	t.Setenv(ops.EnvS3AccessKey, s3test.AccessKey)
	t.Setenv(ops.EnvS3SecretKey, s3test.SecretKey)
}

// Credentials are the S3 credentials of an in-process node.
func (o ObjectStore) Credentials() ops.Credentials {
	return ops.Credentials{S3AccessKey: s3test.AccessKey, S3SecretKey: s3test.SecretKey}
}

// BlobArgs are the `cairn serve` arguments of a blob store in the bucket, under prefix
// ("" for the bucket's root, else "/a/b"): --blob s3://bucket[prefix] --s3-endpoint URL.
func (o ObjectStore) BlobArgs(prefix string) []string {
	return []string{"--blob", "s3://" + o.Bucket + prefix, "--s3-endpoint", "http://" + o.Endpoint}
}

// Stores are what every node of a cluster shares: one real etcd (internal/etcdtest) and
// one MinIO bucket.
type Stores struct {
	ObjectStore
	Etcd string // etcd client endpoint, host:port
	// EtcdServer is that etcd, to stop and restart (member 0) in fault tests.
	EtcdServer *etcdtest.Cluster
}

// StartStores starts MinIO (a new bucket) and an etcd, both stopped when t ends.
func StartStores(t *testing.T) Stores {
	t.Helper()
	o := StartObjectStore(t)
	e := etcdtest.Start(t)
	return Stores{ObjectStore: o, Etcd: e.Endpoint(), EtcdServer: e}
}

// ClusterReplication is the replication of every cluster the framework builds.
const ClusterReplication = 3

// ClusterArgs are the `cairn serve` arguments every node of a cluster of shards shards on
// s takes: --cluster, its etcd, shard count and replication, the object store, and a 5 s
// shutdown. Listen and peer addresses are the caller's.
func (s Stores) ClusterArgs(shards int) []string {
	return append([]string{"--cluster", "--etcd", s.Etcd, "--shards", strconv.Itoa(shards),
		"--replication", strconv.Itoa(ClusterReplication), "--shutdown-timeout", "5s"}, s.BlobArgs("")...)
}

// ClusterConfig is the ops.Config of an in-process node of the same cluster as
// ClusterArgs describes, on its own data directory, listening on loopback ports picked at
// start.
func (s Stores) ClusterConfig(dataDir string, shards int) ops.Config {
	cfg := ops.DefaultConfig()
	cfg.DataDir = dataDir
	cfg.Listen = "127.0.0.1:0"
	cfg.Blob = "s3://" + s.Bucket
	cfg.S3Endpoint = "http://" + s.Endpoint
	cfg.Cluster = true
	cfg.PeerListen = "127.0.0.1:0"
	cfg.Etcd = s.Etcd
	cfg.Shards = shards
	cfg.Replication = ClusterReplication
	cfg.ShutdownTimeout = 5 * time.Second
	return cfg
}
