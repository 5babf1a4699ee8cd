package redact

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/cairnstore/cairn/meta"
)

// Bounds of registered secrets.
const (
	// MinValueChars is the fewest characters (Unicode code points) of a registered value
	// (RFC 0059 §WSR-1: shorter values would redact ordinary words).
	MinValueChars = 8
	// MaxValueBytes is the longest registered value, in bytes.
	MaxValueBytes = 1024
	// MaxIDBytes is the longest secret id, in bytes.
	MaxIDBytes = 64
)

// ErrInvalidConfig is what every *ConfigError matches.
var ErrInvalidConfig = errors.New("invalid redaction configuration")

// ConfigError is a secrets file or Config that breaks a rule. It names where (tenant,
// secret id, field, line) and the rule, never a secret value.
type ConfigError struct {
	Tenant string // "" when not about one tenant
	ID     string // the secret's id; "" when not about one secret (or the id is missing)
	Index  int    // the secret's position in its tenant's list, from 0 (-1: none)
	Field  string // "tenants", "allSurfaces", "id", "value", or "" for the file
	Rule   string
	Line   int // the line in the file, 0 when not known
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("redaction secrets")
	if e.Tenant != "" {
		fmt.Fprintf(&b, ": tenant %q", e.Tenant)
	}
	switch {
	case e.ID != "":
		fmt.Fprintf(&b, ", secret %q", e.ID)
	case e.Index >= 0:
		fmt.Fprintf(&b, ", secret #%d", e.Index+1)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, " %s", e.Rule)
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// Secret is one registered secret value of a tenant. It prints as its id only.
type Secret struct {
	// ID names the secret in its marker "[REDACTED:<ID>]": an ASCII letter or digit,
	// then letters, digits, '_', '.' or '-', at most MaxIDBytes bytes; unique in its
	// tenant, and not a kind.
	ID string
	// Value is replaced wherever it occurs in the tenant's bodies (rules: package doc).
	Value string
}

// String is the secret's id: a Secret never prints its value.
func (s Secret) String() string { return "secret " + s.ID }

// GoString is String, for %#v.
func (s Secret) GoString() string { return s.String() }

// LogValue is the id, for slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Config is what a Redactor redacts.
type Config struct {
	// Secrets maps a tenant (an agent root id) to its registered secret values.
	Secrets map[string][]Secret
	// AllSurfaces lists the tenants whose writes through every surface (REST, MCP, CLI)
	// are redacted, not only their OpenWOP writes.
	AllSurfaces []string
}

// LoadFile reads a secrets file (Parse). Its errors are *ConfigError, or the file's
// read error.
func LoadFile(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("redaction secrets file: %w", err)
	}
	return Parse(data)
}

// Parse reads a secrets file, JSON or YAML:
//
//	tenants:
//	  <tenant>:
//	    - {id: <secret id>, value: <secret value>}
//	allSurfaces: [<tenant>, …]
//
// Both keys are optional; no other key is allowed. Its errors are *ConfigError naming
// the line, never quoting the file (it holds secrets).
func Parse(data []byte) (Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Config{}, &ConfigError{Index: -1, Rule: "must be JSON or YAML of the form {tenants: {<tenant>: [{id, value}]}, allSurfaces: [<tenant>]}"}
	}
	var cfg Config
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return cfg, &ConfigError{Index: -1, Rule: "must be a mapping with the keys tenants and allSurfaces", Line: root.Line}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		var err error
		switch key.Value {
		case "tenants":
			cfg.Secrets, err = parseTenants(val)
		case "allSurfaces":
			cfg.AllSurfaces, err = parseStrings(val, "allSurfaces")
		default:
			err = &ConfigError{Index: -1, Field: key.Value, Rule: "is not a known key (tenants, allSurfaces)", Line: key.Line}
		}
		if err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

func parseTenants(n *yaml.Node) (map[string][]Secret, error) {
	if n.Kind != yaml.MappingNode {
		return nil, &ConfigError{Index: -1, Field: "tenants", Rule: "must be a mapping of tenant to a list of {id, value}", Line: n.Line}
	}
	out := make(map[string][]Secret, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, list := n.Content[i].Value, n.Content[i+1]
		if _, dup := out[name]; dup {
			return nil, &ConfigError{Tenant: name, Index: -1, Field: "tenants", Rule: "is listed twice", Line: n.Content[i].Line}
		}
		if list.Kind != yaml.SequenceNode {
			return nil, &ConfigError{Tenant: name, Index: -1, Rule: "must be a list of {id, value}", Line: list.Line}
		}
		secrets := make([]Secret, 0, len(list.Content))
		for j, item := range list.Content {
			s, err := parseSecret(item)
			if err != nil {
				err.Tenant, err.Index = name, j
				return nil, err
			}
			secrets = append(secrets, s)
		}
		out[name] = secrets
	}
	return out, nil
}

func parseSecret(n *yaml.Node) (Secret, *ConfigError) {
	if n.Kind != yaml.MappingNode {
		return Secret{}, &ConfigError{Rule: "must be a mapping {id, value}", Line: n.Line}
	}
	var s Secret
	var hasID, hasValue bool
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Value != "id" && key.Value != "value" {
			return Secret{}, &ConfigError{ID: s.ID, Field: key.Value, Rule: "is not a known key (id, value)", Line: key.Line}
		}
		if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
			return Secret{}, &ConfigError{ID: s.ID, Field: key.Value, Rule: "must be a string", Line: val.Line}
		}
		if key.Value == "id" {
			s.ID, hasID = val.Value, true
		} else {
			s.Value, hasValue = val.Value, true
		}
	}
	switch {
	case !hasID:
		return Secret{}, &ConfigError{Field: "id", Rule: "is missing", Line: n.Line}
	case !hasValue:
		return Secret{}, &ConfigError{ID: s.ID, Field: "value", Rule: "is missing", Line: n.Line}
	}
	return s, nil
}

func parseStrings(n *yaml.Node, field string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, &ConfigError{Index: -1, Field: field, Rule: "must be a list of tenants", Line: n.Line}
	}
	out := make([]string, 0, len(n.Content))
	for _, item := range n.Content {
		if item.Kind != yaml.ScalarNode {
			return nil, &ConfigError{Index: -1, Field: field, Rule: "must be a list of tenants", Line: item.Line}
		}
		out = append(out, item.Value)
	}
	return out, nil
}

// New checks cfg and returns its Redactor. Its errors are *ConfigError: a tenant that is
// not an agent id, a secret id that is malformed, repeated or a kind (or whose marker
// holds a token), a value shorter than MinValueChars, longer than MaxValueBytes, with '['
// or ']', inside one of the tenant's markers, or registered twice.
func New(cfg Config) (*Redactor, error) {
	r := &Redactor{tenants: make(map[string]*tenant, len(cfg.Secrets)), plain: plainTenant, all: make(map[string]bool, len(cfg.AllSurfaces))}
	for name, secrets := range cfg.Secrets {
		if err := meta.ValidateName("tenant", name); err != nil {
			return nil, &ConfigError{Tenant: name, Index: -1, Field: "tenants", Rule: "must be an agent id: " + err.Message}
		}
		if err := checkSecrets(name, secrets); err != nil {
			return nil, err
		}
		t, err := newTenant(secrets)
		if err != nil {
			return nil, err
		}
		r.tenants[name] = t
	}
	for _, name := range cfg.AllSurfaces {
		if err := meta.ValidateName("tenant", name); err != nil {
			return nil, &ConfigError{Tenant: name, Index: -1, Field: "allSurfaces", Rule: "must be an agent id: " + err.Message}
		}
		r.all[name] = true
	}
	return r, nil
}

// checkSecrets applies the rules of New to one tenant's secrets.
func checkSecrets(tenantName string, secrets []Secret) error {
	names := kindNames()
	for i, s := range secrets {
		bad := func(field, rule string) error {
			return &ConfigError{Tenant: tenantName, ID: s.ID, Index: i, Field: field, Rule: rule}
		}
		if rule := checkID(s.ID); rule != "" {
			return bad("id", rule)
		}
		if names[s.ID] {
			return bad("id", "is a kind or another secret's id; it must be unique and not one of "+strings.Join(Kinds, ", "))
		}
		names[s.ID] = true
		if cands := plainTenant.candidates(nil, []byte(markerPrefix+s.ID+"]"), 0, len(markerPrefix)+len(s.ID)+1); len(cands) > 0 {
			return bad("id", "must not look like a secret itself (its marker would be redacted as "+cands[0].name+")")
		}
	}
	markers := make([]string, 0, len(names))
	for n := range names {
		markers = append(markers, markerPrefix+n+"]")
	}
	values := make(map[string]string, len(secrets))
	for i, s := range secrets {
		bad := func(rule string) error {
			return &ConfigError{Tenant: tenantName, ID: s.ID, Index: i, Field: "value", Rule: rule}
		}
		switch {
		case utf8.RuneCountInString(s.Value) < MinValueChars:
			return bad(fmt.Sprintf("must be at least %d characters", MinValueChars))
		case len(s.Value) > MaxValueBytes:
			return bad(fmt.Sprintf("must be at most %d bytes", MaxValueBytes))
		case strings.ContainsAny(s.Value, "[]"):
			return bad("must not contain '[' or ']' (a marker's brackets, which would let a marker and its neighbours spell the value)")
		}
		for _, m := range markers {
			if strings.Contains(m, s.Value) {
				return bad("must not be part of a marker of this tenant (\"[REDACTED:\" and a kind or one of its secret ids)")
			}
		}
		if other, dup := values[s.Value]; dup {
			return bad("is the same as secret " + other + "'s")
		}
		values[s.Value] = s.ID
	}
	return nil
}

// checkID returns the rule a secret id breaks, or "".
func checkID(id string) string {
	if id == "" {
		return "must not be empty"
	}
	if len(id) > MaxIDBytes {
		return fmt.Sprintf("must be at most %d bytes", MaxIDBytes)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !alnum[c] && (i == 0 || c != '_' && c != '.' && c != '-') {
			return "must be an ASCII letter or digit, then letters, digits, '_', '.' or '-'"
		}
	}
	return ""
}
