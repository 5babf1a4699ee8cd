package s3

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/api/deadline"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// Keys is what the gateway knows of S3 credentials: the secret of an access key id
// (Secrets) and the principal it authenticates as.
type Keys interface {
	Secrets
	// S3Principal returns the principal of a live S3 access key id; an error when it has
	// none (the key was revoked since it was verified).
	S3Principal(ctx context.Context, accessKeyID string) (auth.Principal, error)
}

// Config tunes the gateway.
type Config struct {
	// Region is the region credentials are scoped to and buckets report. Default
	// DefaultRegion.
	Region string
	// Logger receives the internal errors answered as InternalError. Default
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// BodyMinBytesPerSecond and BodyRateWindow bound every request body, and WriteTimeout
	// every write of a response, as on REST (api/deadline). Defaults
	// deadline.DefaultBodyMinBytesPerSecond, DefaultBodyRateWindow, DefaultWriteTimeout.
	BodyMinBytesPerSecond int64
	BodyRateWindow        time.Duration
	WriteTimeout          time.Duration
	// MinPartSize is the least size of a multipart upload's part that is not the last
	// (EntityTooSmall at Complete). Default DefaultMinPartSize, S3's.
	MinPartSize int64
	// UploadDeadline is how long a multipart upload may stay incomplete: older ones are
	// aborted (multipart.go). Default DefaultUploadDeadline.
	UploadDeadline time.Duration
	// ReclaimInterval is how often RunReclaim sweeps for expired uploads. Default
	// DefaultReclaimInterval.
	ReclaimInterval time.Duration
	// CompleteKeepAlive is how long a CompleteMultipartUpload may publish before its
	// answer starts, and then the interval of the whitespace that keeps the connection
	// alive until the result (complete.go). Default DefaultCompleteKeepAlive.
	CompleteKeepAlive time.Duration
	// Instance names the node the gateway runs in, the same across its restarts (the
	// node's id): a Complete's claim made by an earlier run of this node (one a crash cut
	// off) is taken over at once instead of after claimTimeout (complete.go). Default
	// none: every claim holds for claimTimeout.
	Instance string
}

// DefaultRegion is the region of a gateway configured without one: what S3 clients
// assume when told none.
const DefaultRegion = "us-east-1"

// Surface is the name writes through the gateway are attributed to (workbench.WithSurface).
const Surface = "s3"

// Handler serves the S3 API on one listener, path-style (/bucket/key): a bucket is a
// workbench of the key's agent root, an object key is a file's path in it.
type Handler struct {
	svc *workbench.Service
	// lookup resolves a request's bucket, objects and versions (lookup.go).
	lookup *lookup
	// multipart serves the multipart uploads (multipart.go).
	multipart *multipart
	cfg       Config
	keys      Keys
	verifier  Verifier
	log       *slog.Logger
	ids       atomic.Uint64
	idBase    string
}

// NewHandler returns the gateway over svc, authenticating with keys.
func NewHandler(svc *workbench.Service, keys Keys, cfg Config) *Handler {
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BodyMinBytesPerSecond <= 0 {
		cfg.BodyMinBytesPerSecond = deadline.DefaultBodyMinBytesPerSecond
	}
	if cfg.BodyRateWindow <= 0 {
		cfg.BodyRateWindow = deadline.DefaultBodyRateWindow
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = deadline.DefaultWriteTimeout
	}
	l := &lookup{svc: svc}
	return &Handler{svc: svc, lookup: l, multipart: newMultipart(svc, l, cfg), keys: keys, log: cfg.Logger, cfg: cfg,
		verifier: Verifier{Secrets: keys, Region: cfg.Region, Now: cfg.Now},
		idBase:   strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// request is one authenticated S3 request, routed.
type request struct {
	*http.Request
	signed      Signed
	agent       string
	bucket, key string // key "" for bucket and service requests
	id          string
}

func (h *Handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	id := h.nextID()
	w := deadline.NewWriter(rw, h.cfg.WriteTimeout)
	var body *requestBody
	if r.Body != nil && r.Body != http.NoBody {
		// On a copy: net/http's own request keeps the body it gave, so that an answer
		// sent before the body is read is not held while net/http drains it.
		r = r.WithContext(r.Context())
		body = &requestBody{ReadCloser: r.Body}
		minRate, window := h.cfg.BodyMinBytesPerSecond, h.cfg.BodyRateWindow
		r.Body = deadline.NewBody(body, w, minRate, window, func(received int64) error {
			return errorf(CodeRequestTimeout, "your socket connection to the server was not read from or written to within the timeout period: the body arrived slower than %d bytes/s over %s (%d bytes received)",
				minRate, window, received)
		})
	}
	w.Header().Set("x-amz-request-id", id)
	if r.ContentLength == 0 && strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		// botocore (boto3, the aws CLI) asks for a 100 Continue before an empty body too;
		// Go's server sends none for an empty body, and botocore then reads the next
		// request's answer on this connection wrongly (it waits out its 60 s read timeout
		// and sends again). Closing the connection after this answer sends its next
		// request on a fresh one.
		w.Header().Set("Connection", "close")
	}
	req, err := h.authenticate(r, id)
	if err == nil {
		err = h.route(w, req)
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			h.log.Error("s3: internal error", "request_id", id, "method", r.Method, "err", err)
		}
		answerError(w, r, body, id, err, req != nil) // unread.go
	}
}

// nextID is a new request id (x-amz-request-id).
func (h *Handler) nextID() string { return fmt.Sprintf("%s-%d", h.idBase, h.ids.Add(1)) }

// authenticate verifies r's signature, finds its principal and agent root, and splits
// the path into bucket and key.
func (h *Handler) authenticate(r *http.Request, id string) (*request, error) {
	s, p, agent, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	bucket, key, err := splitPath(r)
	if err != nil {
		return nil, err
	}
	ctx := auth.WithPrincipal(r.Context(), p)
	return &request{Request: r.WithContext(ctx), signed: s, agent: agent, bucket: bucket, key: key, id: id}, nil
}

// identify verifies r's signature (not its body: Signed.Body checks that as it is read)
// and finds the principal of its key and the one agent root that key acts in.
func (h *Handler) identify(r *http.Request) (Signed, auth.Principal, string, error) {
	s, err := h.verifier.Verify(r)
	if err != nil {
		return Signed{}, auth.Principal{}, "", err
	}
	p, err := h.keys.S3Principal(r.Context(), s.AccessKeyID)
	if err != nil {
		return Signed{}, auth.Principal{}, "", errorf(CodeInvalidAccessKeyID, "the access key id you provided does not exist in our records")
	}
	agent, ok := agentOf(p)
	if !ok {
		return Signed{}, auth.Principal{}, "", errorf(CodeAccessDenied, "an S3 key acts in exactly one agent root; this key names %d", len(p.Agents))
	}
	return s, p, agent, nil
}

// agentOf is the one agent root an S3 key acts in: its only root, or the tenant a bound
// key is bound to.
func agentOf(p auth.Principal) (string, bool) {
	switch {
	case p.AllAgents:
		return "", false
	case len(p.Agents) == 1:
		return p.Agents[0], true
	case len(p.Agents) == 0 && p.Tenant != "":
		return p.Tenant, true
	}
	return "", false
}

// splitPath decodes a path-style request's bucket and key from the path as sent:
// KeyTooLongError for a key past MaxKeyBytes, whatever the request does with it.
func splitPath(r *http.Request) (bucket, key string, err error) {
	raw := r.URL.EscapedPath()
	if u := r.RequestURI; u != "" && u[0] == '/' {
		raw, _, _ = strings.Cut(u, "?")
	}
	rawBucket, rawKey, _ := strings.Cut(strings.TrimPrefix(raw, "/"), "/")
	if bucket, err = url.PathUnescape(rawBucket); err != nil {
		return "", "", errorf(CodeInvalidBucketName, "the bucket name is not a valid escaped path segment")
	}
	if key, err = url.PathUnescape(rawKey); err != nil {
		return "", "", errorf(CodeInvalidArgument, "the object key is not a valid escaped path")
	}
	if err := checkKeyLength(key); err != nil {
		return "", "", err
	}
	return bucket, key, nil
}

// subresources the gateway does not serve: any of them in the query answers
// NotImplemented rather than being mistaken for a plain request.
var unsupported = []string{"acl", "analytics", "attributes", "cors", "encryption", "inventory", "legal-hold",
	"lifecycle", "logging", "metrics", "notification", "object-lock", "ownershipControls", "policy",
	"policyStatus", "publicAccessBlock", "replication", "requestPayment", "restore", "retention", "select",
	"tagging", "torrent", "uploadId", "uploads", "website", "partNumber"}

// partRead reports whether r reads one part of an object (GET or HEAD ?partNumber=).
func partRead(r *request, q url.Values) bool {
	return r.key != "" && !q.Has("uploadId") && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// route dispatches an authenticated request.
func (h *Handler) route(w http.ResponseWriter, r *request) error {
	q := r.URL.Query()
	mpOp := multipartOp(r.Method, r.key, q)
	for _, sub := range unsupported {
		if q.Has(sub) && !(mpOp != "" && multipartParams[sub]) && !(sub == "partNumber" && partRead(r, q)) {
			return errorf(CodeNotImplemented, "the %s subresource is not implemented by this gateway", sub)
		}
	}
	if err := h.svc.AllowRequest(r.Context()); err != nil {
		return fromWorkbench(err, CodeNoSuchBucket)
	}
	if err := checkExpectedOwners(r, q); err != nil {
		return err
	}
	if r.bucket == UploadsWorkbench {
		if r.key == "" && r.Method == http.MethodPut {
			return errorf(CodeInvalidBucketName, "the bucket name %q is reserved for this gateway's multipart uploads", UploadsWorkbench)
		}
		return errorf(CodeNoSuchBucket, "the specified bucket does not exist")
	}
	if mpOp != "" {
		return h.multipart.serve(w, r, mpOp)
	}
	if r.bucket == "" {
		if r.Method != http.MethodGet {
			return errorf(CodeMethodNotAllowed, "the service resource takes GET only")
		}
		return h.listBuckets(w, r.op("ListBuckets"))
	}
	if r.key == "" {
		switch {
		case r.Method == http.MethodGet && q.Has("location"):
			return h.bucketLocation(w, r.op("GetBucketLocation"))
		case r.Method == http.MethodGet && q.Has("versioning"):
			return h.bucketVersioning(w, r.op("GetBucketVersioning"))
		case r.Method == http.MethodPut && q.Has("versioning"):
			return h.putBucketVersioning(w, r.op("PutBucketVersioning"))
		case r.Method == http.MethodGet && q.Has("versions"):
			return h.listObjectVersions(w, r.op("ListObjectVersions"))
		case q.Has("versioning") || q.Has("versions"):
			return errorf(CodeMethodNotAllowed, "the bucket's versions do not take %s", r.Method)
		case r.Method == http.MethodGet && q.Has("list-type"):
			if err := checkListType(q); err != nil {
				return err
			}
			return h.listObjects(w, r.op("ListObjectsV2"), true)
		case r.Method == http.MethodGet:
			return h.listObjects(w, r.op("ListObjects"), false)
		case r.Method == http.MethodHead:
			return h.headBucket(w, r.op("HeadBucket"))
		case r.Method == http.MethodPut:
			return h.createBucket(w, r.op("CreateBucket"))
		case r.Method == http.MethodDelete:
			return h.deleteBucket(w, r.op("DeleteBucket"))
		case r.Method == http.MethodPost && q.Has("delete"):
			return h.deleteObjects(w, r.op("DeleteObjects"))
		}
		return errorf(CodeMethodNotAllowed, "the bucket resource does not take %s here", r.Method)
	}
	if q.Has("versionId") && r.Method != http.MethodGet && r.Method != http.MethodHead {
		return versionWriteRefused(r.Method)
	}
	switch r.Method {
	case http.MethodGet:
		return h.getObject(w, r.op("GetObject"), true)
	case http.MethodHead:
		return h.getObject(w, r.op("HeadObject"), false)
	case http.MethodPut:
		if len(r.Header.Values("X-Amz-Copy-Source")) > 0 {
			return h.copyObject(w, r.op("CopyObject"))
		}
		return h.putObject(w, r.op("PutObject"))
	case http.MethodDelete:
		return h.deleteObject(w, r.op("DeleteObject"))
	}
	return errorf(CodeMethodNotAllowed, "the object resource does not take %s", r.Method)
}

// The headers naming the account a request expects to own its bucket, and its copy's
// source bucket (S3's ExpectedBucketOwner, ExpectedSourceBucketOwner).
const (
	headerExpectedOwner       = "X-Amz-Expected-Bucket-Owner"
	headerExpectedSourceOwner = "X-Amz-Source-Expected-Bucket-Owner"
)

// checkExpectedOwners refuses, AccessDenied as on S3, a request on a bucket or object
// whose x-amz-expected-bucket-owner, or a copy whose x-amz-source-expected-bucket-owner,
// names any owner but the one every bucket the key reaches has (rootOwner); an empty one
// names none. Every operation on a bucket or object takes it, as on S3, but CreateBucket
// (S3's has no such parameter) and ListBuckets, which name no bucket. The check compares
// the value with the key's own root and reads nothing of the bucket, so its answer is the
// same whether the bucket exists, is another root's, or is the key's: another root's
// bucket still answers exactly as a missing one. A presigned URL carries the values in its
// query (the AWS SDKs hoist them there); they are checked alike.
func checkExpectedOwners(r *request, q url.Values) error {
	if r.bucket == "" || r.key == "" && r.Method == http.MethodPut && !q.Has("versioning") {
		return nil
	}
	names := []string{headerExpectedOwner}
	if len(r.Header.Values("X-Amz-Copy-Source")) > 0 {
		names = append(names, headerExpectedSourceOwner)
	}
	want := rootOwner(r).ID
	for _, name := range names {
		vals := r.Header.Values(name)
		for k, v := range q {
			if strings.EqualFold(k, name) {
				vals = append(vals, v...)
			}
		}
		for _, v := range vals {
			if v != want {
				return errorf(CodeAccessDenied, "Access Denied: %s does not name this bucket's owner", strings.ToLower(name))
			}
		}
	}
	return nil
}

// op names the operation in the request's context, for attribution and audit.
func (r *request) op(name string) *request {
	c := *r
	c.Request = r.WithContext(workbench.WithSurface(r.Context(), Surface+"/"+name))
	return &c
}
