#!/usr/bin/env bash
# Prints the path of the MinIO server that the blob/s3 tests run against, building it from
# source at a pinned version when the cached binary is missing. Only the path goes to
# stdout; build output goes to stderr.
#
#   CAIRN_CACHE_DIR  cache root (default: $HOME/.cache/cairn); the binary lands in
#                    $CAIRN_CACHE_DIR/minio-<version>/minio
#   GO               the go command (default: go)
#
# The build (a few minutes, through the Go module proxy) happens once per machine; a lock
# makes concurrent callers wait for it instead of building twice.
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
cache="${CAIRN_CACHE_DIR:-${HOME:?HOME or CAIRN_CACHE_DIR must be set}/.cache/cairn}/minio-$MINIO_VERSION"
bin="$cache/minio"

if [ ! -x "$bin" ]; then
	mkdir -p "$cache"
	exec 9>"$cache/.lock"
	if command -v flock >/dev/null; then
		flock 9
	fi
	if [ ! -x "$bin" ]; then
		tmp="$(mktemp -d "$cache/.build-XXXXXX")"
		trap 'rm -rf "$tmp"' EXIT
		echo "scripts/minio.sh: building MinIO $MINIO_VERSION into $cache (once per machine)" >&2
		start=$SECONDS
		GOBIN="$tmp" "${GO:-go}" install "github.com/minio/minio@$MINIO_VERSION" >&2
		mv "$tmp/minio" "$bin"
		echo "scripts/minio.sh: built in $((SECONDS - start)) s" >&2
	fi
fi
echo "$bin"
