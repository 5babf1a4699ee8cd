#!/usr/bin/env bash
# Measures writes sent to a node that does not lead the shard of their root (docs/architecture.md#the-write-path:
# the receiving node uploads the body and forwards only the metadata command). For each
# binary given, it starts a 3-node cluster with one shard (scripts/cluster.sh), picks a
# follower, runs `cairn bench --scenario object-put` through it at each size, and reads
# the leader's /metrics before and after: the bytes the leader uploaded to the object
# store and, where the binary exports it, the bytes the leader received on the peer
# port's fwd stream, each per MiB written.
#
#   scripts/bench-forward.sh LABEL=BINARY [LABEL=BINARY ...]
#
#   SIZES        body sizes (default "1MiB 64MiB")
#   DURATION     length of each bench phase (default 10s)
#   CONCURRENCY  bench clients (default 4)
#
# Needs curl and jq. Prints one Markdown table row per binary and size.
set -euo pipefail

if [ $# -eq 0 ] || [ "$1" = "--help" ] || [ "$1" = "-h" ]; then
	sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
	exit 0
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
sizes="${SIZES:-1MiB 64MiB}"
duration="${DURATION:-10s}"
conc="${CONCURRENCY:-4}"
work="$(mktemp -d "${TMPDIR:-/tmp}/cairn-bench-forward-XXXXXX")"
# shellcheck source=scripts/bench-cluster.sh
. "$root/scripts/bench-cluster.sh"
trap 'stop_cluster; exit 130' INT TERM
trap stop_cluster EXIT

metric() { # url name [label-filter]: the sum of the matching samples, 0 when none
	{ curl -fsS "$1/metrics" || true; } | { grep -E "^$2(\{[^}]*${3:-}[^}]*\})? " || true; } |
		awk '{s += $2} END {printf "%.0f", s}'
}

size_bytes() { # 1MiB, 64MiB, 512KiB
	case "$1" in
	*GiB) echo $((${1%GiB} << 30)) ;;
	*MiB) echo $((${1%MiB} << 20)) ;;
	*KiB) echo $((${1%KiB} << 10)) ;;
	*) echo "$1" ;;
	esac
}

echo "| binary | size | MiB/s through a follower | leader uploaded, bytes per MiB written | leader fwd bytes received per MiB written |"
echo "|---|---|---|---|---|"
base=17100
for spec in "$@"; do
	label="${spec%%=*}"
	bin="${spec#*=}"
	dir="$work/$label"
	start_bench_cluster "$label" "$bin" "$base" "$dir"
	for size in $sizes; do
		put0="$(metric "$leader" cairn_blob_put_bytes_total)"
		fwd0="$(metric "$leader" cairn_peer_bytes_total 'direction="received",stream="fwd"')"
		"$bin" bench --server "$follower" --scenario object-put --size "$size" --concurrency "$conc" \
			--duration "$duration" --out "$dir/$size.json" >"$dir/$size.txt" 2>"$dir/$size.err"
		put1="$(metric "$leader" cairn_blob_put_bytes_total)"
		fwd1="$(metric "$leader" cairn_peer_bytes_total 'direction="received",stream="fwd"')"
		bytes="$(size_bytes "$size")"
		mib="$(jq --argjson b "$bytes" '.cairn.achieved_rate * $b / 1048576' "$dir/$size.json")"
		written="$(jq --argjson b "$bytes" '.cairn.ok * $b' "$dir/$size.json")"
		awk -v l="$label" -v s="$size" -v m="$mib" -v w="$written" -v p=$((put1 - put0)) -v f=$((fwd1 - fwd0)) -v hasfwd="$fwd1" 'BEGIN {
			mw = w / 1048576
			fw = (hasfwd == "" || hasfwd == 0) ? "not exported" : sprintf("%.0f", (mw > 0 ? f / mw : 0))
			printf "| %s | %s | %.1f | %.0f | %s |\n", l, s, m, (mw > 0 ? p / mw : 0), fw
		}'
	done
	stop_cluster
	base=$((base + 100))
done
