// Package bench will hold `cairn bench`: the load generator (closed and open loop), its
// scenarios (small put/get, stat, mixed, append-log, object-path put/get, list, snapshot
// and restore, MCP tool mix), the side-by-side baselines (raw minio-go, file+fsync, etcd),
// and the report writer (JSON, Markdown, PNG). It talks to a running Cairn over HTTP and
// MCP like any user, and never imports the storage packages.
package bench
