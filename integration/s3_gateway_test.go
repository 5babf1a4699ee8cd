package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/freeport"
)

// s3ToolTimeout bounds one run of an S3 client.
const s3ToolTimeout = 5 * time.Minute

// s3Gateway starts an embedded node serving the S3 gateway and makes an S3 key for agent
// root "a" offline on its data directory.
func s3Gateway(t *testing.T) (endpoint string, key framework.Key) {
	t.Helper()
	_, endpoint, key = s3GatewayNode(t)
	return endpoint, key
}

// s3GatewayNode is s3Gateway that also returns the node's process.
func s3GatewayNode(t *testing.T) (node *framework.Process, endpoint string, key framework.Key) {
	t.Helper()
	dir := t.TempDir()
	key = framework.CreateKey(t, cairnRaceBin, nil, "s3", "--data-dir", dir, "--agent", "a",
		"--scope", "workspace:read,workspace:write", "--s3")
	if !strings.HasPrefix(key.S3AccessKeyID, "CAIRN") || len(key.S3SecretAccessKey) != 40 {
		t.Fatalf("the S3 credential of the key: %q, %d-character secret", key.S3AccessKeyID, len(key.S3SecretAccessKey))
	}
	addr := freeport.Addr(t)
	node = framework.StartProcess(t, cairnBin, dir, "--s3-listen", addr)
	return node, "http://" + addr, key
}

// goTree is a real tree to round-trip: a directory of the Go standard library's source.
func goTree(t *testing.T) string {
	t.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(goroot)), "src", "encoding")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the Go source tree to upload: %v", err)
	}
	return dir
}

// sameTree fails unless every file of want is in got with the same bytes, and got has no
// other file.
func sameTree(t *testing.T, want, got string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		a, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: %d bytes, read back %d bytes (%v)", rel, len(a), len(b), err)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := 0
	_ = filepath.WalkDir(got, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			m++
		}
		return nil
	})
	if n == 0 || m != n {
		t.Fatalf("the tree read back holds %d files, the one written %d", m, n)
	}
}

// s3Tool runs a real S3 client with the key in its environment and fails the test unless
// it succeeds.
func s3Tool(t *testing.T, key framework.Key, name string, args ...string) string {
	t.Helper()
	out, err := s3ToolRun(t, key, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// s3ToolRun runs a real S3 client with the key in its environment (and no AWS setting
// of this machine's: a CA bundle or profile of the host would change what it does).
func s3ToolRun(t *testing.T, key framework.Key, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s3ToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID="+key.S3AccessKeyID, "AWS_SECRET_ACCESS_KEY="+key.S3SecretAccessKey,
		"AWS_DEFAULT_REGION=us-east-1", "AWS_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// debianTool is the path of a client Debian installs (.ci/run installs the packages).
func debianTool(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("/usr/bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed (Debian's package; .ci/run installs it): %v", p, err)
	}
	return p
}

func TestS3GatewayRoundTripsATreeWithRealClients(t *testing.T) {
	endpoint, key := s3Gateway(t)
	tree := goTree(t)

	t.Run("aws-cli", func(t *testing.T) {
		aws := debianTool(t, "aws")
		s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "mb", "s3://cli")
		s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "sync", tree, "s3://cli/input/encoding")
		out := t.TempDir()
		s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "sync", "s3://cli/input/encoding", out)
		sameTree(t, tree, out)
		if again := s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "sync", tree, "s3://cli/input/encoding"); strings.Contains(again, "upload:") {
			t.Fatalf("a second sync of an unchanged tree uploaded again:\n%s", again)
		}
		ls := s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "ls", "s3://cli/input/encoding/")
		if !strings.Contains(ls, "PRE json/") || !strings.Contains(ls, "encoding.go") {
			t.Fatalf("aws s3 ls:\n%s", ls)
		}
		s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "rm", "--recursive", "s3://cli/input/encoding/json")
		// aws s3 ls exits 1 when it lists nothing.
		if ls, err := s3ToolRun(t, key, aws, "--endpoint-url", endpoint, "s3", "ls", "--recursive", "s3://cli/input/encoding/json"); strings.TrimSpace(ls) != "" || err == nil {
			t.Fatalf("objects left after aws s3 rm --recursive (%v):\n%s", err, ls)
		}
		head := s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3api", "head-object", "--bucket", "cli", "--key", "input/encoding/encoding.go")
		if !strings.Contains(head, `"ETag"`) || !strings.Contains(head, `"ContentLength"`) {
			t.Fatalf("s3api head-object: %s", head)
		}
	})

	t.Run("rclone", func(t *testing.T) {
		rclone := debianTool(t, "rclone")
		conf := filepath.Join(t.TempDir(), "rclone.conf")
		err := os.WriteFile(conf, []byte("[cairn]\ntype = s3\nprovider = Other\nendpoint = "+endpoint+"\naccess_key_id = "+key.S3AccessKeyID+
			"\nsecret_access_key = "+key.S3SecretAccessKey+"\nregion = us-east-1\n"), 0o600)
		if err != nil {
			t.Fatal(err)
		}
		remote := "cairn:"
		rc := func(args ...string) string {
			return s3Tool(t, key, rclone, append([]string{"--config", conf, "--retries", "1"}, args...)...)
		}
		rc("mkdir", remote+"rc")
		rc("sync", tree, remote+"rc/input/encoding")
		// rclone sends Content-MD5 and keeps its modification times in metadata: a check
		// compares every hash, and a second sync of an unchanged tree copies nothing.
		if out := rc("check", tree, remote+"rc/input/encoding"); strings.Contains(out, "could not be checked") || !strings.Contains(out, "0 differences found") {
			t.Fatalf("rclone check:\n%s", out)
		}
		if out := rc("sync", "-v", tree, remote+"rc/input/encoding"); strings.Contains(out, "Copied") {
			t.Fatalf("a second sync of an unchanged tree copied again:\n%s", out)
		}
		// A copy within the remote is S3's server-side CopyObject: no byte goes through
		// rclone, and the copy checks against the tree.
		if out := rc("copy", "-v", remote+"rc/input/encoding", remote+"rc/outputs/encoding"); !strings.Contains(out, "Copied (server-side copy)") {
			t.Fatalf("rclone copied within the remote without a server-side copy:\n%s", out)
		}
		if out := rc("check", tree, remote+"rc/outputs/encoding"); !strings.Contains(out, "0 differences found") {
			t.Fatalf("rclone check of the server-side copy:\n%s", out)
		}
		out := t.TempDir()
		rc("copy", remote+"rc/input/encoding", out)
		sameTree(t, tree, out)
	})
	t.Run("s3cmd", func(t *testing.T) {
		s3cmd := debianTool(t, "s3cmd")
		host := strings.TrimPrefix(endpoint, "http://")
		conf := filepath.Join(t.TempDir(), "s3cfg")
		err := os.WriteFile(conf, []byte("[default]\naccess_key = "+key.S3AccessKeyID+"\nsecret_key = "+key.S3SecretAccessKey+
			"\nhost_base = "+host+"\nhost_bucket = "+host+"\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n"), 0o600)
		if err != nil {
			t.Fatal(err)
		}
		sc := func(args ...string) string {
			out := s3Tool(t, key, s3cmd, append([]string{"-c", conf}, args...)...)
			// s3cmd warns, and uploads again, when an ETag it takes for an MD5 differs
			// from the bytes'.
			if strings.Contains(out, "WARNING") {
				t.Fatalf("s3cmd %s warned:\n%s", strings.Join(args, " "), out)
			}
			return out
		}
		sc("mb", "s3://s3c")
		sc("sync", tree+"/", "s3://s3c/input/encoding/")
		if again := sc("sync", tree+"/", "s3://s3c/input/encoding/"); strings.Contains(again, "upload:") {
			t.Fatalf("a second s3cmd sync of an unchanged tree uploaded again:\n%s", again)
		}
		out := t.TempDir()
		sc("sync", "s3://s3c/input/encoding/", out+"/")
		sameTree(t, tree, out)
		sc("del", "--recursive", "--force", "s3://s3c/input/encoding/json/")
		if ls := sc("ls", "--recursive", "s3://s3c/input/encoding/json/"); strings.TrimSpace(ls) != "" {
			t.Fatalf("objects left after s3cmd del --recursive:\n%s", ls)
		}
	})
	t.Run("minio-go", func(t *testing.T) {
		c, err := minio.New(strings.TrimPrefix(endpoint, "http://"), &minio.Options{
			Creds: miniocreds.NewStaticV4(key.S3AccessKeyID, key.S3SecretAccessKey, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := c.MakeBucket(ctx, "mgo", minio.MakeBucketOptions{}); err != nil {
			t.Fatal(err)
		}
		err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(tree, p)
			_, err = c.FPutObject(ctx, "mgo", "input/encoding/"+filepath.ToSlash(rel), p, minio.PutObjectOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("minio-go FPutObject: %v", err)
		}
		out := t.TempDir()
		for o := range c.ListObjects(ctx, "mgo", minio.ListObjectsOptions{Prefix: "input/encoding/", Recursive: true}) {
			if o.Err != nil {
				t.Fatalf("minio-go ListObjects: %v", o.Err)
			}
			rel := strings.TrimPrefix(o.Key, "input/encoding/")
			if err := c.FGetObject(ctx, "mgo", o.Key, filepath.Join(out, filepath.FromSlash(rel)), minio.GetObjectOptions{}); err != nil {
				t.Fatalf("minio-go FGetObject %s: %v", o.Key, err)
			}
		}
		sameTree(t, tree, out)
	})

	t.Run("boto3", func(t *testing.T) {
		python := debianTool(t, "python3")
		script := `
import os, sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
tree, out = sys.argv[2], sys.argv[3]
s3.create_bucket(Bucket="py")
s3.put_object(Bucket="py", Key="input/empty", Body=b"")
sent = []
for root, _, files in os.walk(tree):
    for name in files:
        rel = os.path.relpath(os.path.join(root, name), tree)
        s3.upload_file(os.path.join(root, name), "py", "input/encoding/" + rel)
        sent.append("input/encoding/" + rel)
keys = []
for page in s3.get_paginator("list_objects_v2").paginate(Bucket="py", Prefix="input/encoding/", PaginationConfig={"PageSize": 7}):
    keys += [o["Key"] for o in page.get("Contents", [])]
assert keys == sorted(sent, key=lambda k: k.encode()), (len(keys), len(sent))
for k in keys:
    dst = os.path.join(out, k[len("input/encoding/"):])
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    s3.download_file("py", k, dst)
assert s3.get_object(Bucket="py", Key="input/empty")["Body"].read() == b""
print("ok")
`
		out := t.TempDir()
		if got := s3Tool(t, key, python, "-c", script, endpoint, tree, out); !strings.Contains(got, "ok") {
			t.Fatalf("boto3: %s", got)
		}
		sameTree(t, tree, out)
	})

	t.Run("aws-sdk-go-v2", func(t *testing.T) {
		c := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(key.S3AccessKeyID, key.S3SecretAccessKey, "")})
		ctx := context.Background()
		if _, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String("sdk")}); err != nil {
			t.Fatal(err)
		}
		err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(tree, p)
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("sdk"), Key: aws.String("input/encoding/" + filepath.ToSlash(rel)), Body: f})
			return err
		})
		if err != nil {
			t.Fatalf("PutObject of the tree: %v", err)
		}
		out := t.TempDir()
		pages := awss3.NewListObjectsV2Paginator(c, &awss3.ListObjectsV2Input{Bucket: aws.String("sdk"), Prefix: aws.String("input/encoding/"), MaxKeys: aws.Int32(9)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				got, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("sdk"), Key: o.Key})
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(got.Body)
				got.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				dst := filepath.Join(out, filepath.FromSlash(strings.TrimPrefix(aws.ToString(o.Key), "input/encoding/")))
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dst, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		sameTree(t, tree, out)
	})
}

// TestS3GatewayCopiesAGibibyteWithoutWritingABlob: a CopyObject of a 1 GiB object stores
// no blob (the node's blob put counters do not move) and the copy reads back the same
// bytes, with the source's ETag.
func TestS3GatewayCopiesAGibibyteWithoutWritingABlob(t *testing.T) {
	node, endpoint, key := s3GatewayNode(t)
	size := int64(1 << 30)
	if testing.Short() {
		size = 64 << 20
	}
	src := filepath.Join(t.TempDir(), "ckpt.bin")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, want), io.LimitReader(rand.NewChaCha8([32]byte{7}), size)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	c := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key.S3AccessKeyID, key.S3SecretAccessKey, "")})
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String("big")}); err != nil {
		t.Fatal(err)
	}
	body, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	put, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("big"), Key: aws.String("outputs/ckpt.bin"), Body: body})
	if err != nil {
		t.Fatalf("PutObject of %d bytes: %v", size, err)
	}
	objects, bytesPut := metricValue(t, node, "cairn_blob_put_objects_total"), metricValue(t, node, "cairn_blob_put_bytes_total")
	if objects == 0 || bytesPut < float64(size) {
		t.Fatalf("after a %d-byte PUT the node counts %v blob puts of %v bytes: the counters prove nothing", size, objects, bytesPut)
	}
	cp, err := c.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String("big"), Key: aws.String("outputs/ckpt-copy.bin"),
		CopySource: aws.String("big/outputs/ckpt.bin")})
	if err != nil {
		t.Fatalf("CopyObject: %v", err)
	}
	if got, want := aws.ToString(cp.CopyObjectResult.ETag), aws.ToString(put.ETag); got != want {
		t.Fatalf("the copy's ETag %s, the source's %s", got, want)
	}
	if o, b := metricValue(t, node, "cairn_blob_put_objects_total"), metricValue(t, node, "cairn_blob_put_bytes_total"); o != objects || b != bytesPut {
		t.Fatalf("CopyObject stored blobs: put objects %v -> %v, bytes %v -> %v", objects, o, bytesPut, b)
	}
	got, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("big"), Key: aws.String("outputs/ckpt-copy.bin")})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, got.Body)
	if err != nil || n != size || !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
		t.Fatalf("the copy read back %d bytes of %d (%v), same digest: %v", n, size, err, bytes.Equal(h.Sum(nil), want.Sum(nil)))
	}
}

// TestS3GatewayVersionsWithTheAWSCLI is issue 28's acceptance for versions, with Debian's
// aws CLI: three PUTs and a DELETE are four versions listed, each readable by its
// --version-id, the delete marker the latest.
func TestS3GatewayVersionsWithTheAWSCLI(t *testing.T) {
	endpoint, key := s3Gateway(t)
	cli := debianTool(t, "aws")
	api := func(v any, args ...string) {
		t.Helper()
		out := s3Tool(t, key, cli, append([]string{"--endpoint-url", endpoint, "--output", "json", "s3api"}, args...)...)
		if v != nil {
			if err := json.Unmarshal([]byte(out), v); err != nil {
				t.Fatalf("s3api %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	}
	type version struct {
		Key, VersionId, ETag string
		IsLatest             bool
	}
	api(nil, "create-bucket", "--bucket", "ver")
	var versioning struct{ Status string }
	if api(&versioning, "get-bucket-versioning", "--bucket", "ver"); versioning.Status != "Enabled" {
		t.Fatalf("get-bucket-versioning: %+v, want Enabled", versioning)
	}
	dir := t.TempDir()
	bodies := map[string][]byte{}
	var ids []string
	for i, text := range []string{"step,loss\n", "step,loss\n1,0.9\n", "step,loss\n1,0.9\n2,0.7\n"} {
		file := filepath.Join(dir, fmt.Sprint("v", i))
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var put version
		if api(&put, "put-object", "--bucket", "ver", "--key", "outputs/metrics.csv", "--body", file); put.VersionId == "" {
			t.Fatalf("put-object %d: no VersionId", i)
		}
		bodies[put.VersionId] = []byte(text)
		ids = append(ids, put.VersionId)
	}
	var del struct {
		DeleteMarker bool
		VersionId    string
	}
	if api(&del, "delete-object", "--bucket", "ver", "--key", "outputs/metrics.csv"); !del.DeleteMarker || del.VersionId == "" {
		t.Fatalf("delete-object: %+v, want a delete marker", del)
	}
	var listed struct{ Versions, DeleteMarkers []version }
	api(&listed, "list-object-versions", "--bucket", "ver")
	if len(listed.Versions) != 3 || len(listed.DeleteMarkers) != 1 {
		t.Fatalf("list-object-versions: %+v, want 3 versions and 1 delete marker", listed)
	}
	if m := listed.DeleteMarkers[0]; m.VersionId != del.VersionId || !m.IsLatest {
		t.Fatalf("the delete marker listed: %+v, want %s, the latest", m, del.VersionId)
	}
	for i, v := range listed.Versions {
		if want := ids[len(ids)-1-i]; v.VersionId != want || v.IsLatest {
			t.Fatalf("version %d listed: %+v, want %s (newest first), not the latest", i, v, want)
		}
		out := filepath.Join(dir, "got-"+v.VersionId)
		api(nil, "get-object", "--bucket", "ver", "--key", "outputs/metrics.csv", "--version-id", v.VersionId, out)
		if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, bodies[v.VersionId]) {
			t.Fatalf("get-object --version-id %s: %q %v, want %q", v.VersionId, got, err, bodies[v.VersionId])
		}
	}
}

// writePattern writes size bytes of pattern(seed) to a new file of dir and returns its path.
func writePattern(t *testing.T, dir string, seed uint64, size int64) string {
	t.Helper()
	p := filepath.Join(dir, "body.bin")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, pattern(seed, 0, size)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func sameFile(t *testing.T, want, got string) {
	t.Helper()
	a, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(got)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("read back %d bytes of %d (%v), or other bytes", len(b), len(a), err)
	}
}

// Real clients upload large files in parts: each part goes through the write path, and
// completing publishes the object the clients read back byte for byte.
func TestS3GatewayMultipartUploadsWithRealClients(t *testing.T) {
	server, endpoint, key := s3GatewayNode(t)

	t.Run("boto3", func(t *testing.T) {
		python := debianTool(t, "python3")
		script := `
import sys, boto3
from boto3.s3.transfer import TransferConfig
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
s3.create_bucket(Bucket="pymp")
cfg = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20)
s3.upload_file(sys.argv[2], "pymp", "outputs/model.bin", Config=cfg)
assert s3.list_multipart_uploads(Bucket="pymp").get("Uploads", []) == [], "an upload left after upload_file"
s3.download_file("pymp", "outputs/model.bin", sys.argv[3], Config=cfg)
print("ok")
`
		src := writePattern(t, t.TempDir(), 28, 64<<20+12345)
		dst := filepath.Join(t.TempDir(), "model.bin")
		if out := s3Tool(t, key, python, "-c", script, endpoint, src, dst); !strings.Contains(out, "ok") {
			t.Fatalf("boto3: %s", out)
		}
		sameFile(t, src, dst)
	})

	t.Run("aws-cli", func(t *testing.T) {
		aws := debianTool(t, "aws")
		src := writePattern(t, t.TempDir(), 29, 20<<20+7)
		s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "mb", "s3://climp")
		// Above the CLI's 8 MiB multipart threshold: three parts.
		s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "cp", src, "s3://climp/outputs/big.bin")
		dst := filepath.Join(t.TempDir(), "big.bin")
		s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "cp", "s3://climp/outputs/big.bin", dst)
		sameFile(t, src, dst)
	})

	// 1 GiB generated as it is sent, in 16 MiB parts by the AWS SDK for Go v2's transfer
	// manager (default checksums on), read back through a hash: the test holds no body,
	// and the server's peak RSS stays bounded.
	t.Run("aws-sdk-go-v2 1 GiB", func(t *testing.T) {
		const size = 1 << 30
		c := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(key.S3AccessKeyID, key.S3SecretAccessKey, "")})
		ctx, cancel := context.WithTimeout(t.Context(), normalRunTimeout)
		defer cancel()
		if _, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String("gib")}); err != nil {
			t.Fatal(err)
		}
		sent := sha256.New()
		tm := transfermanager.New(c, func(o *transfermanager.Options) { o.PartSizeBytes, o.Concurrency = 16<<20, 4 })
		start := time.Now()
		res, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: aws.String("gib"), Key: aws.String("outputs/1gib.bin"),
			Body: io.TeeReader(pattern(30, 0, size), sent)})
		if err != nil {
			t.Fatalf("UploadObject: %v", err)
		}
		up := time.Since(start)
		if aws.ToString(res.UploadID) == "" {
			t.Fatal("the transfer manager did not upload in parts")
		}
		sum := hex.EncodeToString(sent.Sum(nil))
		start = time.Now()
		got, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("gib"), Key: aws.String("outputs/1gib.bin")})
		if err != nil {
			t.Fatal(err)
		}
		defer got.Body.Close()
		read := sha256.New()
		n, err := io.Copy(read, got.Body)
		if err != nil {
			t.Fatalf("GetObject: after %d bytes: %v", n, err)
		}
		down := time.Since(start)
		// The ETag of a body no MD5 was promised for is its SHA-256 (api/s3 objectETag).
		if n != size || hex.EncodeToString(read.Sum(nil)) != sum || aws.ToString(got.ETag) != `"sha256-`+sum+`"` {
			t.Fatalf("GetObject: %d bytes, ETag %s; want %d bytes of SHA-256 %s", n, aws.ToString(got.ETag), int64(size), sum)
		}
		hwm := serverHWM(t, server)
		t.Logf("THROUGHPUT s3 gateway multipart of %d MiB: upload %.1f s (%.1f MB/s), GET %.1f s (%.1f MB/s); server VmHWM %d MiB",
			size>>20, up.Seconds(), size/1e6/up.Seconds(), down.Seconds(), size/1e6/down.Seconds(), hwm>>20)
		if hwm >= maxServerHWMBytes {
			t.Fatalf("server peak RSS (VmHWM) %d MiB for a %d MiB multipart upload, want < %d MiB", hwm>>20, size>>20, maxServerHWMBytes>>20)
		}
	})
}

// TestS3GatewayGibibyteThroughEveryClient: each real client uploads the same 1 GiB file
// through the gateway the way it uploads large files (in parts: the aws CLI and boto3 at
// 8 MiB, rclone, s3cmd and minio-go at their defaults) and downloads it again,
// byte-exact.
func TestS3GatewayGibibyteThroughEveryClient(t *testing.T) {
	endpoint, key := s3Gateway(t)
	src := writePattern(t, t.TempDir(), 31, 1<<30)
	want := fileDigest(t, src)
	host := strings.TrimPrefix(endpoint, "http://")
	conf := t.TempDir()
	rcloneConf := filepath.Join(conf, "rclone.conf")
	s3cmdConf := filepath.Join(conf, "s3cfg")
	if err := os.WriteFile(rcloneConf, []byte("[cairn]\ntype = s3\nprovider = Other\nendpoint = "+endpoint+"\naccess_key_id = "+key.S3AccessKeyID+
		"\nsecret_access_key = "+key.S3SecretAccessKey+"\nregion = us-east-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s3cmdConf, []byte("[default]\naccess_key = "+key.S3AccessKeyID+"\nsecret_key = "+key.S3SecretAccessKey+
		"\nhost_base = "+host+"\nhost_bucket = "+host+"\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	boto3 := `
import sys, boto3
from boto3.s3.transfer import TransferConfig
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
s3.create_bucket(Bucket="gib-boto3")
cfg = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20)
s3.upload_file(sys.argv[2], "gib-boto3", "outputs/1gib.bin", Config=cfg)
s3.download_file("gib-boto3", "outputs/1gib.bin", sys.argv[3], Config=cfg)
print("ok")
`
	sdk := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key.S3AccessKeyID, key.S3SecretAccessKey, "")})
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, dst string)
	}{
		{"aws-cli", func(t *testing.T, dst string) {
			aws := debianTool(t, "aws")
			s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "mb", "s3://gib-aws-cli")
			s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "cp", src, "s3://gib-aws-cli/outputs/1gib.bin")
			s3Tool(t, key, aws, "--endpoint-url", endpoint, "s3", "cp", "s3://gib-aws-cli/outputs/1gib.bin", dst)
		}},
		{"boto3", func(t *testing.T, dst string) {
			if out := s3Tool(t, key, debianTool(t, "python3"), "-c", boto3, endpoint, src, dst); !strings.Contains(out, "ok") {
				t.Fatalf("boto3: %s", out)
			}
		}},
		{"rclone", func(t *testing.T, dst string) {
			rclone := debianTool(t, "rclone")
			s3Tool(t, key, rclone, "--config", rcloneConf, "--retries", "1", "mkdir", "cairn:gib-rclone")
			s3Tool(t, key, rclone, "--config", rcloneConf, "--retries", "1", "copyto", src, "cairn:gib-rclone/outputs/1gib.bin")
			s3Tool(t, key, rclone, "--config", rcloneConf, "--retries", "1", "copyto", "cairn:gib-rclone/outputs/1gib.bin", dst)
		}},
		{"s3cmd", func(t *testing.T, dst string) {
			s3cmd := debianTool(t, "s3cmd")
			s3Tool(t, key, s3cmd, "-c", s3cmdConf, "mb", "s3://gib-s3cmd")
			s3Tool(t, key, s3cmd, "-c", s3cmdConf, "put", src, "s3://gib-s3cmd/outputs/1gib.bin")
			s3Tool(t, key, s3cmd, "-c", s3cmdConf, "get", "s3://gib-s3cmd/outputs/1gib.bin", dst)
		}},
		{"minio-go", func(t *testing.T, dst string) {
			c, err := minio.New(host, &minio.Options{Creds: miniocreds.NewStaticV4(key.S3AccessKeyID, key.S3SecretAccessKey, ""),
				Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), normalRunTimeout)
			defer cancel()
			if err := c.MakeBucket(ctx, "gib-minio", minio.MakeBucketOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.FPutObject(ctx, "gib-minio", "outputs/1gib.bin", src, minio.PutObjectOptions{PartSize: 16 << 20}); err != nil {
				t.Fatalf("minio-go FPutObject: %v", err)
			}
			if err := c.FGetObject(ctx, "gib-minio", "outputs/1gib.bin", dst, minio.GetObjectOptions{}); err != nil {
				t.Fatalf("minio-go FGetObject: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "1gib.bin")
			tc.run(t, dst)
			if got := fileDigest(t, dst); got != want {
				t.Fatalf("%s read back a file of SHA-256 %s, want %s", tc.name, got, want)
			}
			os.Remove(dst)
			// An object completed from parts answers its part count.
			head, err := sdk.HeadObject(t.Context(), &awss3.HeadObjectInput{Bucket: aws.String("gib-" + strings.TrimSuffix(tc.name, "-go")),
				Key: aws.String("outputs/1gib.bin"), PartNumber: aws.Int32(1)})
			if err != nil || aws.ToInt32(head.PartsCount) < 2 {
				t.Fatalf("%s: HEAD ?partNumber=1 answered %v parts (%v): it did not upload in parts", tc.name, head, err)
			}
		})
	}
}

// fileDigest is the hex SHA-256 of a file, read as a stream.
func fileDigest(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
