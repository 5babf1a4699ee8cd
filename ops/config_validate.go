package ops

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/meta"
)

// ConfigError reports one bad configuration value: which field, which rule it broke, the
// offending value and, when known, where it came from.
type ConfigError struct {
	// Source names where the value came from: a flag ("--listen"), an environment
	// variable ("CAIRN_LISTEN"), a YAML file position ("cairn.yaml:3 (listen)"), or ""
	// when unknown (a Config built in Go, or a default).
	Source string
	// Field is the Config field name ("Listen"); "" for an error that is not about one
	// field (an unknown YAML key, a malformed file).
	Field string
	// Rule is the rule that was broken, phrased to follow the field name
	// ("must be host:port").
	Rule string
	// Value is the offending value as text; "" when there is none to show.
	Value string
}

// Flag returns the command-line flag that sets e's field ("--etcd" for Etcd), or ""
// when the field has none (or e is about no field).
func (e *ConfigError) Flag() string {
	for _, s := range settings {
		if s.field == e.Field && e.Field != "" {
			return "--" + s.flag()
		}
	}
	return ""
}

// Error formats as "<source>: <setting> <rule> (got "<value>")", naming the setting as
// the user writes it: its flag ("--etcd"), else the Field. The source is left out when
// it is the flag itself or unknown: "--shards must be between 1 and 256 (got "0")",
// "CAIRN_LISTEN: --listen must be host:port (got "x")".
func (e *ConfigError) Error() string {
	var b strings.Builder
	name := e.Flag()
	if name == "" {
		name = e.Field
	}
	switch {
	case e.Source != "" && e.Source != name:
		b.WriteString(e.Source)
		b.WriteString(": ")
	case e.Source == "" && name == "":
		b.WriteString("config: ")
	}
	if name != "" {
		b.WriteString(name)
		b.WriteString(" ")
	}
	b.WriteString(e.Rule)
	if e.Value != "" {
		fmt.Fprintf(&b, " (got %q)", e.Value)
	}
	return b.String()
}

// Validate checks every field against its rule (documented on the field). It returns nil
// or one *ConfigError per broken rule, joined with errors.Join, so errors.As finds the
// first; Source is empty because a Config does not know where its values came from
// (LoadConfig fills it in).
func (c Config) Validate() error {
	return joinConfigErrors(c.validate())
}

// configErrors collects the broken rules of one validation pass.
type configErrors []*ConfigError

// add records that field broke rule with value ("" when there is none to show).
func (errs *configErrors) add(field, rule, value string) {
	*errs = append(*errs, &ConfigError{Field: field, Rule: rule, Value: value})
}

func (c Config) validate() []*ConfigError {
	var errs configErrors
	bad := errs.add

	switch {
	case c.DataDir == "":
		bad("DataDir", "must not be empty", "")
	case strings.ContainsRune(c.DataDir, 0):
		bad("DataDir", "must not contain NUL", c.DataDir)
	}

	switch {
	case c.CacheMaxBytes < 0:
		bad("CacheMaxBytes", "must not be negative (0 turns the segment cache off)", strconv.FormatInt(c.CacheMaxBytes, 10))
	case c.CacheDir != "" && c.CacheMaxBytes == 0:
		bad("CacheDir", "is set but --cache-max-bytes is 0, which turns the segment cache off", c.CacheDir)
	case strings.ContainsRune(c.CacheDir, 0):
		bad("CacheDir", "must not contain NUL", c.CacheDir)
	}

	if c.InlineMaxBytes < 0 || c.InlineMaxBytes > MaxInlineMaxBytes {
		bad("InlineMaxBytes", fmt.Sprintf("must be between 0 and %d bytes", MaxInlineMaxBytes),
			strconv.FormatInt(c.InlineMaxBytes, 10))
	}
	if c.MCPMaxPayloadBytes < 1 || c.MCPMaxPayloadBytes > MaxMCPMaxPayloadBytes {
		bad("MCPMaxPayloadBytes", fmt.Sprintf("must be between 1 and %d bytes", MaxMCPMaxPayloadBytes),
			strconv.FormatInt(c.MCPMaxPayloadBytes, 10))
	}
	if c.RetentionWindow <= 0 {
		bad("RetentionWindow", "must be positive", c.RetentionWindow.String())
	}
	if err := c.History().Validate(); err != nil {
		field := map[string]string{"versions": "HistoryVersions", "age": "HistoryAge", "max_versions": "HistoryMaxVersions"}[err.Field]
		bad(field, err.Message, "")
	}
	if c.SnapshotGrace <= 0 {
		bad("SnapshotGrace", "must be positive", c.SnapshotGrace.String())
	}
	if c.GCGrace <= 0 {
		bad("GCGrace", "must be positive", c.GCGrace.String())
	}
	if c.GCInterval <= 0 {
		bad("GCInterval", "must be positive", c.GCInterval.String())
	}
	if c.GCMaxBatch < 1 || c.GCMaxBatch > meta.MaxGCBatch {
		bad("GCMaxBatch", fmt.Sprintf("must be between 1 and %d", meta.MaxGCBatch), strconv.Itoa(c.GCMaxBatch))
	}
	if c.MaxSnapshotsPerWorkbench < 1 {
		bad("MaxSnapshotsPerWorkbench", "must be at least 1", strconv.Itoa(c.MaxSnapshotsPerWorkbench))
	}
	switch {
	case c.MaxUploadDuration < 0:
		bad("MaxUploadDuration", "must not be negative (0 means half of --gc-grace)", c.MaxUploadDuration.String())
	case c.GCGrace > 0 && c.MaxUploadDuration >= c.GCGrace:
		bad("MaxUploadDuration", fmt.Sprintf("must be less than --gc-grace (%s): the collector may delete the blobs of an upload that outlasts the grace", c.GCGrace),
			c.MaxUploadDuration.String())
	}
	if c.HeapFloorBytes < 0 {
		bad("HeapFloorBytes", "must not be negative (0 turns the heap floor off)", strconv.FormatInt(c.HeapFloorBytes, 10))
	}
	if c.QueryBudgetBytes < MinQueryBudgetBytes {
		bad("QueryBudgetBytes", fmt.Sprintf("must be at least %d bytes", MinQueryBudgetBytes), strconv.FormatInt(c.QueryBudgetBytes, 10))
	}
	if r := c.PrincipalRequestsPerSecond; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		bad("PrincipalRequestsPerSecond", "must be a finite number ≥ 0 (0: no limit)", strconv.FormatFloat(r, 'g', -1, 64))
	}
	if c.PrincipalRequestBurst < 0 {
		bad("PrincipalRequestBurst", "must be ≥ 0 (0: ceil of --principal-requests-per-second)", strconv.Itoa(c.PrincipalRequestBurst))
	}
	if c.PrincipalMaxUploads < AutoPrincipalLimit {
		bad("PrincipalMaxUploads", "must be ≥ -1 (0: no limit, -1: a limit beyond loopback only)", strconv.Itoa(c.PrincipalMaxUploads))
	}
	if c.PrincipalMaxAdmissions < AutoPrincipalLimit {
		bad("PrincipalMaxAdmissions", "must be ≥ -1 (0: no limit, -1: a limit beyond loopback only)", strconv.Itoa(c.PrincipalMaxAdmissions))
	}
	if c.QueryQueueTimeout <= 0 {
		bad("QueryQueueTimeout", "must be positive", c.QueryQueueTimeout.String())
	}
	if c.RestoreBatch < 1 || c.RestoreBatch > MaxRestoreBatch {
		bad("RestoreBatch", fmt.Sprintf("must be between 1 and %d files", MaxRestoreBatch), strconv.Itoa(c.RestoreBatch))
	}
	if c.DedupeMaxPerRoot < 1 {
		bad("DedupeMaxPerRoot", "must be at least 1", strconv.Itoa(c.DedupeMaxPerRoot))
	}
	if c.FeedRetention <= 0 {
		bad("FeedRetention", "must be positive", c.FeedRetention.String())
	}
	if c.FeedMaxPerRoot < 1 && c.FeedMaxPerRoot != -1 {
		bad("FeedMaxPerRoot", "must be at least 1, or -1 for no feed", strconv.Itoa(c.FeedMaxPerRoot))
	}
	if rule := checkPresentationRoot(c.PresentationRoot); rule != "" {
		bad("PresentationRoot", rule, c.PresentationRoot)
	}
	if c.RaftSnapshotInterval <= 0 {
		bad("RaftSnapshotInterval", "must be positive", c.RaftSnapshotInterval.String())
	}
	if c.RaftSnapshotThreshold < 1 {
		bad("RaftSnapshotThreshold", "must be at least 1", strconv.FormatUint(c.RaftSnapshotThreshold, 10))
	}
	if _, ok := logLevels[c.LogLevel]; !ok {
		bad("LogLevel", "must be one of debug, info, warn, error", c.LogLevel)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("LogFormat", "must be text or json", c.LogFormat)
	}
	if c.ShutdownTimeout <= 0 {
		bad("ShutdownTimeout", "must be positive", c.ShutdownTimeout.String())
	}
	errs = append(errs, c.validateBlob()...)
	errs = append(errs, c.validateCluster()...)
	errs = append(errs, c.validateServing()...)
	errs = append(errs, c.validateListeners()...)
	errs = append(errs, c.validateAuth()...)
	errs = append(errs, c.validateRedact()...)
	errs = append(errs, c.validateOpenWOP()...)
	errs = append(errs, c.validateS3Gateway()...)
	errs = append(errs, c.validateDocuments()...)
	return errs
}

// validateCluster checks the cluster settings. They are checked whether or not Cluster
// is set (a bad value is a mistake either way); the requirements apply only with Cluster.
func (c Config) validateCluster() []*ConfigError {
	var errs configErrors
	bad := errs.add
	if c.NodeID != "" {
		if len(c.NodeID) > MaxNodeIDBytes || strings.Trim(c.NodeID, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != "" {
			bad("NodeID", fmt.Sprintf("must be 1 to %d characters of [A-Za-z0-9._-]", MaxNodeIDBytes), c.NodeID)
		}
	}
	tlsSet := 0
	for _, f := range []string{c.PeerTLSCert, c.PeerTLSKey, c.PeerTLSCA} {
		if f != "" {
			tlsSet++
		}
	}
	if tlsSet != 0 && tlsSet != 3 {
		switch {
		case c.PeerTLSCert == "":
			bad("PeerTLSCert", "must be set with --peer-tls-key and --peer-tls-ca (all three or none)", "")
		case c.PeerTLSKey == "":
			bad("PeerTLSKey", "must be set with --peer-tls-cert and --peer-tls-ca (all three or none)", "")
		default:
			bad("PeerTLSCA", "must be set with --peer-tls-cert and --peer-tls-key (all three or none)", "")
		}
	}
	if c.PeerListen != "" {
		if rule := checkPeerHostPort(c.PeerListen, c.PeerTLS()); rule != "" {
			bad("PeerListen", rule, c.PeerListen)
		}
	}
	if c.AdvertisePeer != "" {
		if rule := checkAdvertised(c.AdvertisePeer); rule != "" {
			bad("AdvertisePeer", rule, c.AdvertisePeer)
		}
	}
	if c.PeerSource != "" {
		if ip := net.ParseIP(c.PeerSource); ip == nil || ip.IsUnspecified() || ip.IsMulticast() {
			bad("PeerSource", "must be one unicast IP address (no port, not 0.0.0.0 or ::)", c.PeerSource)
		}
	}
	if c.AdvertiseClient != "" {
		u, err := url.Parse(c.AdvertiseClient)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			bad("AdvertiseClient", "must be an http:// or https:// URL with a host and no path, query or credentials", shownURL(c.AdvertiseClient))
		}
	}
	for _, e := range c.EtcdEndpoints() {
		if strings.ContainsAny(e, " \x00?#") || strings.Contains(e, "@") {
			bad("Etcd", "must be comma-separated host:port or http(s):// endpoints without credentials, query or fragment", shownURL(e))
			break
		}
	}
	if c.Shards < 1 || c.Shards > MaxShards {
		bad("Shards", fmt.Sprintf("must be between 1 and %d", MaxShards), strconv.Itoa(c.Shards))
	}
	if c.Replication < 1 || c.Replication > MaxReplication {
		bad("Replication", fmt.Sprintf("must be between 1 and %d", MaxReplication), strconv.Itoa(c.Replication))
	}
	if !c.Cluster {
		return errs
	}
	if !strings.HasPrefix(c.Blob, blobS3Scheme) {
		bad("Blob", "must be an s3:// object store in cluster mode (every replica must read every blob)", c.Blob)
	}
	if len(c.EtcdEndpoints()) == 0 {
		bad("Etcd", "must list at least one etcd endpoint in cluster mode", c.Etcd)
	}
	if c.PeerListen == "" {
		bad("PeerListen", "must be set in cluster mode", "")
	}
	if host, _, err := net.SplitHostPort(c.PeerListen); err == nil && c.AdvertisePeer == "" {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			bad("AdvertisePeer", "must be set when --peer-listen binds every interface (other nodes cannot dial "+c.PeerListen+")", "")
		}
	}
	return errs
}

// checkPeerHostPort returns the broken rule for a peer listen address, or "": host:port,
// loopback unless peer TLS is configured.
func checkPeerHostPort(addr string, tls bool) string {
	if rule := checkHostPort(addr); rule != "" {
		return rule
	}
	if host, _, _ := net.SplitHostPort(addr); !tls && !loopbackHost(host) {
		return "must be a loopback address unless peer TLS is configured (PeerTLSCert, PeerTLSKey, PeerTLSCA)"
	}
	return ""
}

// checkAdvertised returns the broken rule for an advertised host:port, or "".
func checkAdvertised(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || strings.ContainsAny(host, " /\x00") {
		return "must be host:port with a host"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
		return "must be host:port with a numeric port 1..65535"
	}
	return ""
}

// checkHostPort returns the broken rule for the form of a listen address, or "" (which
// hosts it may bind is the listener policy's, listen.go).
func checkHostPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "must be host:port"
	}
	if strings.ContainsAny(host, " /\x00") {
		return "must be host:port with a valid host"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || port != strconv.Itoa(n) {
		return "must be host:port with a numeric port 0..65535"
	}
	return ""
}

// checkPresentationRoot returns the broken rule for a presentation root, or "".
func checkPresentationRoot(root string) string {
	switch {
	case root == "/":
		return `must not be "/"`
	case !strings.HasPrefix(root, "/"):
		return `must be an absolute path starting with "/"`
	case !strings.Contains(root, PresentationRootAgentPlaceholder):
		return `must contain "{agent}"`
	case strings.ContainsAny(root, "\\\x00"):
		return "must not contain a backslash or NUL"
	}
	for _, comp := range strings.Split(root[1:], "/") {
		if comp == "" || comp == "." || comp == ".." {
			return `must be a clean path (no empty, "." or ".." components, no trailing "/")`
		}
	}
	return ""
}
