package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"
)

// Key management routes, on the admin listener (cairn admin key).
const (
	AdminKeysPath       = "/v1/admin/keys"
	AdminKeysRevokePath = "/v1/admin/keys/revoke"
)

// KeyRequest is what a new API key is made for (POST /v1/admin/keys).
type KeyRequest struct {
	Name string `json:"name"`
	// Agents are the agent roots the key may use; AllAgents: every root.
	Agents    []string `json:"agents,omitempty"`
	AllAgents bool     `json:"all_agents,omitempty"`
	// Scopes: "workspace:read", "workspace:write", "review", "admin" (or OpenWOP's
	// "manifest:read" and "proposals:apply", answered as "workspace:read" and "review").
	Scopes    []string `json:"scopes"`
	Tenant    string   `json:"tenant,omitempty"`
	Workspace string   `json:"workspace,omitempty"`
	// Workbench binds the key to one workbench of each root; Prefixes to the paths at or
	// below them ("outputs/run1/").
	Workbench string   `json:"workbench,omitempty"`
	Prefixes  []string `json:"prefixes,omitempty"`
	// ExpiresAt, when set, is when the key stops working.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// S3 gives the key an S3 credential for the S3 gateway (one agent root only).
	S3 bool `json:"s3,omitempty"`
}

// APIKey is a key as the server describes it. Secret is set only in the answer of
// CreateKey: it is shown once and never again.
type APIKey struct {
	ID        string    `json:"id"`
	Secret    string    `json:"secret,omitempty"`
	Name      string    `json:"name"`
	Agents    []string  `json:"agents"`
	AllAgents bool      `json:"all_agents"`
	Scopes    []string  `json:"scopes"`
	Tenant    string    `json:"tenant,omitempty"`
	Workspace string    `json:"workspace,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// State is "live", "revoked" or "expired".
	State string `json:"state"`
	// S3AccessKeyID is the access key id of the key's S3 credential ("" when it has none);
	// S3SecretAccessKey its secret, set only in the answer of CreateKey.
	S3AccessKeyID     string `json:"s3_access_key_id,omitempty"`
	S3SecretAccessKey string `json:"s3_secret_access_key,omitempty"`
	// Workbench and Prefixes bind the key as KeyRequest's do; MintedBy is the id of the
	// key that minted it (MintKey, a fork's mint_key), "" for an operator's.
	Workbench string   `json:"workbench,omitempty"`
	Prefixes  []string `json:"prefixes,omitempty"`
	MintedBy  string   `json:"minted_by,omitempty"`
	RawJSON
}

// CreateKey makes an API key (a with an admin key when the node requires keys). The
// answer holds the secret, once. Not retried: a retry would make a second key. Errors:
// *Error InvalidArguments naming the field.
func (a *Admin) CreateKey(ctx context.Context, req KeyRequest) (*APIKey, error) {
	return postJSON[APIKey](ctx, a.tr, a.tr.base+AdminKeysPath, req, notReplayable)
}

// MintPath is the client listener's route by which a key mints a narrower key.
const MintPath = "/v1/keys"

// MintKey makes a key no broader than c's own (c on the client listener, with its key):
// no root, workbench, path prefix or scope c's key lacks, expiring no later than it, and
// stopped when c's key is revoked. The answer holds the secret, once. Not retried.
// Errors: *Error PermissionDenied naming the field that would widen the key,
// InvalidArguments naming a bad field.
func (c *Client) MintKey(ctx context.Context, req KeyRequest) (*APIKey, error) {
	return postJSON[APIKey](ctx, c.tr, c.tr.base+MintPath, req, notReplayable)
}

// KeyList is the answer of ListKeys.
type KeyList struct {
	Keys []APIKey `json:"keys"`
	RawJSON
}

// ListKeys returns every key, revoked and expired ones too, oldest first; never a secret.
func (a *Admin) ListKeys(ctx context.Context) (*KeyList, error) {
	return getJSON[KeyList](ctx, a.tr, a.tr.base+AdminKeysPath)
}

// RevokeKey revokes the key with id (idempotent: a revoked key stays revoked at its first
// time). Errors: *Error NotFound for an unknown id.
func (a *Admin) RevokeKey(ctx context.Context, id string) (*APIKey, error) {
	return postJSON[APIKey](ctx, a.tr, a.tr.base+AdminKeysRevokePath, map[string]string{"id": id}, replayable)
}

// WithAPIKey returns a copy of c that sends key (Authorization: Bearer) on every request
// to c's own server, never to another host a redirect names (the same rule as
// TransportOptions.APIKey).
func (c *Client) WithAPIKey(key string) *Client {
	return newClient(c.tr.withAPIKey(key))
}

// NewInProcessAdmin returns an admin client whose requests h serves in this process,
// with no network (cairn admin key on a stopped node's data directory or on a cluster's
// etcd: the same key routes, the same answers).
func NewInProcessAdmin(h http.Handler) *Admin {
	return NewAdmin("http://in-process", &http.Client{Transport: inProcess{h}})
}

type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	if r.Context().Err() != nil {
		return nil, fmt.Errorf("in-process request: %w", r.Context().Err())
	}
	return rec.Result(), nil
}
