package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gofrs/flock"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// Key management (cairn admin key): admin-listener routes over the node's key store, and
// the same routes over a store opened without a running node (KeyAdminHandler): a
// stopped embedded node's data directory (OpenDataDirKeys), or a cluster's etcd
// (OpenEtcdKeys, how a cluster's first admin key is made).
//
//	POST /v1/admin/keys          body KeyRequest; 201 {"status","id","secret",…}: the secret (and an S3 key's s3_secret_access_key), once
//	GET  /v1/admin/keys          200 {"status","keys":[…]}: every key, never a secret or digest
//	POST /v1/admin/keys/revoke   body {"id"}; 200 {"status",…the key, revoked}
const (
	KeysPath       = "/v1/admin/keys"
	KeysRevokePath = "/v1/admin/keys/revoke"
)

// KeyRequest is the body of POST KeysPath.
type KeyRequest struct {
	Name      string       `json:"name"`
	Agents    []string     `json:"agents,omitempty"`
	AllAgents bool         `json:"all_agents,omitempty"`
	Scopes    []auth.Scope `json:"scopes"`
	Tenant    string       `json:"tenant,omitempty"`
	Workspace string       `json:"workspace,omitempty"`
	// Workbench binds the key to one workbench of each root it names; Prefixes to the
	// paths at or below them (section-qualified: "outputs/run1/").
	Workbench string   `json:"workbench,omitempty"`
	Prefixes  []string `json:"prefixes,omitempty"`
	// ExpiresAt, when set, is when the key stops working.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// S3 gives the key an S3 credential for the S3 gateway: the answer holds its
	// s3_access_key_id and, this once, its s3_secret_access_key.
	S3 bool `json:"s3,omitempty"`
}

// maxKeyRequestBytes bounds a key route's request body.
const maxKeyRequestBytes = 64 << 10

// keyRoutes returns the admin routes of key management over keys.
func keyRoutes(keys auth.Store) map[string]http.Handler {
	return map[string]http.Handler{
		KeysPath: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodPost:
				createKey(w, r, keys)
			case http.MethodGet:
				listKeys(w, r, keys)
			default:
				methodNotAllowed(w, "GET, POST")
			}
		}),
		KeysRevokePath: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				methodNotAllowed(w, "POST")
				return
			}
			revokeKey(w, r, keys)
		}),
	}
}

// KeyAdminHandler serves the key routes (KeysPath, KeysRevokePath) over keys, for a store
// opened without a running node; anything else is 404.
func KeyAdminHandler(keys auth.Store) http.Handler {
	routes := keyRoutes(keys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := routes[r.URL.EscapedPath()]; h != nil {
			h.ServeHTTP(w, r)
			return
		}
		writeEnvelope(w, http.StatusNotFound, &workbench.Error{Code: workbench.CodeNotFound, Message: "no such route: " + r.URL.EscapedPath()})
	})
}

func createKey(w http.ResponseWriter, r *http.Request, keys auth.Store) {
	var in KeyRequest
	if err := decodeJSON(r, &in); err != nil {
		keyError(w, err)
		return
	}
	k, token, err := newKeyOf(in, time.Now())
	if err == nil {
		err = keys.Create(r.Context(), k)
	}
	if err != nil {
		keyError(w, err)
		return
	}
	writeNewKey(w, k, token)
}

// newKeyOf makes the key a KeyRequest asks for (auth.NewKey), refusing a binding to a
// reserved workbench and a prefix outside the workbench sections (workbench.Sections: a
// misspelt section would make a key that sees nothing).
func newKeyOf(in KeyRequest, now time.Time) (auth.Key, string, error) {
	for field, ws := range map[string]string{"workspace": in.Workspace, "workbench": in.Workbench} {
		if _, ok := reservedWorkbenches[ws]; ok {
			return auth.Key{}, "", &auth.InvalidSpecError{Field: field, Rule: fmt.Sprintf("%q is a workbench only the %s surface writes; bind the key to a workspace of its own", ws, reservedWorkbenches[ws])}
		}
	}
	for _, p := range in.Prefixes {
		if section, _, _ := strings.Cut(p, "/"); !slices.Contains(workbench.Sections, section) {
			return auth.Key{}, "", &auth.InvalidSpecError{Field: "prefixes", Rule: fmt.Sprintf("must start with a section (%s), got %q", strings.Join(workbench.Sections, ", "), p)}
		}
	}
	return auth.NewKey(in.spec(), now)
}

// spec is the auth.KeySpec of in.
func (in KeyRequest) spec() auth.KeySpec {
	return auth.KeySpec{Name: in.Name, Agents: in.Agents, AllAgents: in.AllAgents, Scopes: in.Scopes,
		Tenant: in.Tenant, Workspace: in.Workspace, Workbench: in.Workbench, Prefixes: in.Prefixes, ExpiresAt: in.ExpiresAt, S3: in.S3}
}

// writeNewKey answers 201 with k and, this once, its secrets.
func writeNewKey(w http.ResponseWriter, k auth.Key, token string) {
	out := keyJSON(k, time.Now())
	out["secret"] = token
	if k.S3Secret != "" {
		out["s3_secret_access_key"] = k.S3Secret
	}
	writeSuccess(w, http.StatusCreated, out)
}

func listKeys(w http.ResponseWriter, r *http.Request, keys auth.Store) {
	all, err := keys.List(r.Context())
	if err != nil {
		keyError(w, err)
		return
	}
	now := time.Now()
	out := make([]map[string]any, 0, len(all))
	for _, k := range all {
		out = append(out, keyJSON(k, now))
	}
	writeSuccess(w, http.StatusOK, map[string]any{"keys": out})
}

func revokeKey(w http.ResponseWriter, r *http.Request, keys auth.Store) {
	var in struct {
		ID string `json:"id"`
	}
	if err := decodeJSON(r, &in); err != nil {
		keyError(w, err)
		return
	}
	if !auth.ValidKeyID(in.ID) {
		keyError(w, &auth.InvalidSpecError{Field: "id", Rule: fmt.Sprintf("must be a key id (%d lowercase hex digits)", auth.KeyIDLen)})
		return
	}
	k, err := keys.Revoke(r.Context(), in.ID, time.Now())
	if err != nil {
		keyError(w, err)
		return
	}
	writeSuccess(w, http.StatusOK, keyJSON(k, time.Now()))
}

// keyJSON renders a key as the routes answer it: never its digest.
func keyJSON(k auth.Key, now time.Time) map[string]any {
	state := "live"
	switch err := k.Live(now); {
	case errors.Is(err, auth.ErrKeyRevoked):
		state = "revoked"
	case errors.Is(err, auth.ErrKeyExpired):
		state = "expired"
	}
	agents := k.Agents
	if agents == nil {
		agents = []string{}
	}
	m := map[string]any{"id": k.ID, "name": k.Name, "agents": agents, "all_agents": k.AllAgents, "scopes": k.Scopes,
		"created_at": k.CreatedAt, "state": state}
	if k.S3Secret != "" {
		m["s3_access_key_id"] = auth.S3AccessKeyID(k.ID)
	}
	if len(k.Prefixes) > 0 {
		m["prefixes"] = k.Prefixes
	}
	for name, v := range map[string]string{"tenant": k.Tenant, "workspace": k.Workspace, "workbench": k.Workbench, "minted_by": k.MintedBy} {
		if v != "" {
			m[name] = v
		}
	}
	for name, t := range map[string]time.Time{"expires_at": k.ExpiresAt, "revoked_at": k.RevokedAt} {
		if !t.IsZero() {
			m[name] = t
		}
	}
	return m
}

// decodeJSON reads r's body into v: one JSON object, known fields only.
func decodeJSON(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxKeyRequestBytes+1))
	if err != nil || len(data) > maxKeyRequestBytes {
		return &bodyError{Field: "body", Rule: fmt.Sprintf("must be a JSON object of at most %d bytes", maxKeyRequestBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	var te *json.UnmarshalTypeError
	switch {
	case err != nil && errors.As(err, &te) && te.Field != "":
		return &bodyError{Field: te.Field, Rule: "must not be a JSON " + te.Value + " (see the route's documented fields)"}
	case err != nil && strings.HasPrefix(err.Error(), `json: unknown field "`):
		field := strings.TrimSuffix(strings.TrimPrefix(err.Error(), `json: unknown field "`), `"`)
		return &bodyError{Field: field, Rule: "is not a field of this request"}
	case err != nil || dec.More():
		return &bodyError{Field: "body", Rule: "must be one JSON object of the documented fields"}
	}
	return nil
}

// bodyError is a request body decodeJSON refused: Field names the member at fault, or
// "body" for the body as a whole. Its text names no Go type or parser.
type bodyError struct{ Field, Rule string }

func (e *bodyError) Error() string { return e.Field + " " + e.Rule }

// keyError answers a key route's failure.
func keyError(w http.ResponseWriter, err error) {
	var ie *auth.InvalidSpecError
	var be *bodyError
	switch {
	case errors.As(err, &be):
		writeEnvelope(w, http.StatusBadRequest, &workbench.Error{Code: workbench.CodeInvalidArguments, Message: be.Error(),
			Details: map[string]any{"field": be.Field}})
	case errors.As(err, &ie):
		writeEnvelope(w, http.StatusBadRequest, &workbench.Error{Code: workbench.CodeInvalidArguments, Message: ie.Error(),
			Details: map[string]any{"field": ie.Field}})
	case errors.Is(err, auth.ErrKeyNotFound):
		writeEnvelope(w, http.StatusNotFound, &workbench.Error{Code: workbench.CodeNotFound, Message: err.Error()})
	case errors.Is(err, auth.ErrKeyExists):
		writeEnvelope(w, http.StatusConflict, &workbench.Error{Code: workbench.CodeAlreadyExists, Message: err.Error()})
	case errors.Is(err, auth.ErrStoreUnavailable):
		w.Header().Set("Retry-After", "1")
		writeEnvelope(w, http.StatusServiceUnavailable, workbench.RoutingUnavailable("the key store cannot answer right now; retry"))
	default:
		writeEnvelope(w, http.StatusInternalServerError, &workbench.Error{Code: workbench.CodeInternal, Message: "key store: " + err.Error()})
	}
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeEnvelope(w, http.StatusMethodNotAllowed, &workbench.Error{Code: workbench.CodeInvalidArguments,
		Message: "method not allowed here (allowed: " + allow + ")", Details: map[string]any{"field": "method"}})
}

func writeSuccess(w http.ResponseWriter, status int, body map[string]any) {
	body["status"] = "success"
	rest.WriteJSON(w, status, body)
}

// openNodeKeys opens the key store of a node: the cluster's in etcd, or the embedded
// node's file in its data directory.
func (n *Node) openNodeKeys(ctx context.Context) (auth.Store, error) {
	if n.cfg.Cluster {
		sctx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
		defer cancel()
		s, err := auth.OpenEtcdStore(sctx, n.etcd, n.controlPlane.Config().Prefix)
		if err != nil {
			return nil, fmt.Errorf("etcd %s: %w", n.cfg.Etcd, err)
		}
		return s, nil
	}
	return auth.OpenFileStore(filepath.Join(n.cfg.DataDir, auth.KeysFile))
}

// DataDirKeys is the key store of a stopped embedded node, with its data directory
// locked until Close.
type DataDirKeys struct {
	*auth.FileStore
	lock *flock.Flock
}

// OpenDataDirKeys opens the key store in dataDir and takes its LOCK. A dataDir that does
// not exist yet is created, as Open creates it, so a node's first key can be made before
// its first start (README: running a node reachable from other hosts). Errors:
// ErrDataDirLocked while a node (or another command) uses the directory; a path that is
// not a directory or cannot be created.
func OpenDataDirKeys(dataDir string) (*DataDirKeys, error) {
	lock, err := lockDataDir(context.Background(), dataDir, " (stop the node, or manage keys through its admin listener)")
	if err != nil {
		return nil, err
	}
	s, err := auth.OpenFileStore(filepath.Join(dataDir, auth.KeysFile))
	if err != nil {
		_ = lock.Unlock()
		return nil, err
	}
	return &DataDirKeys{FileStore: s, lock: lock}, nil
}

// Close releases the data directory.
func (d *DataDirKeys) Close() error {
	return errors.Join(d.FileStore.Close(), d.lock.Unlock())
}

// EtcdKeys is a cluster's key store opened straight on its etcd (no node running).
type EtcdKeys struct {
	*auth.EtcdStore
	cli *clientv3.Client
}

// OpenEtcdKeys opens the key store of the cluster whose control plane is at the etcd
// endpoints (the default prefix, as every node uses). ctx bounds reaching etcd.
func OpenEtcdKeys(ctx context.Context, endpoints []string) (*EtcdKeys, error) {
	ecfg := control.ClientConfig(endpoints)
	ecfg.Logger = ops.ZapLogger(slog.Default(), "etcd-client") // the process's format, not zap's JSON
	cli, err := clientv3.New(ecfg)
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	s, err := auth.OpenEtcdStore(ctx, cli, control.DefaultConfig().Prefix)
	if err != nil {
		cli.Close()
		return nil, err
	}
	return &EtcdKeys{EtcdStore: s, cli: cli}, nil
}

// Close stops the store and closes its etcd client.
func (e *EtcdKeys) Close() error {
	return errors.Join(e.EtcdStore.Close(), e.cli.Close())
}
