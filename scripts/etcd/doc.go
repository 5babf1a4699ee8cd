// Command etcd runs a one-member etcd on loopback for local development
// (scripts/cluster.sh): go run ./scripts/etcd --dir DIR --client 127.0.0.1:2379.
// It serves until SIGINT or SIGTERM. Not for production: use a real etcd cluster.
//
// It binds only the two addresses it is given (loopback by default; plain HTTP, no
// authentication). It exits non-zero when the member cannot start or does not serve within
// 60 s; on SIGINT, SIGTERM or a member error (logged) it closes the member, then exits.
package main
