#!/usr/bin/env bash
# Measures linearizable reads through a node that does not lead the shard against the same
# reads through the leader, side by side in one cluster. For each binary given, it starts a
# 3-node cluster with one shard (scripts/cluster.sh), finds the leader and a follower, and
# runs each read scenario ROUNDS times alternately through the leader and the follower
# (`cairn bench --scenario S`), so that both see the same machine load.
#
#   scripts/bench-follower.sh LABEL=BINARY [LABEL=BINARY ...]
#
#   DURATION     length of each bench phase (default 5s)
#   ROUNDS       leader/follower alternations per scenario (default 2)
#
# Needs curl and jq. Prints one Markdown table row per binary and scenario: the ops/s of
# each run through the leader and through the follower, and the ratio of their sums.
set -euo pipefail

if [ $# -eq 0 ] || [ "$1" = "--help" ] || [ "$1" = "-h" ]; then
	sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
	exit 0
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
duration="${DURATION:-5s}"
rounds="${ROUNDS:-2}"
work="$(mktemp -d "${TMPDIR:-/tmp}/cairn-bench-follower-XXXXXX")"
# shellcheck source=scripts/bench-cluster.sh
. "$root/scripts/bench-cluster.sh"
trap 'stop_cluster; exit 130' INT TERM
trap stop_cluster EXIT

# name|arguments of cairn bench
scenarios=(
	"small-get 1 KiB, 16 clients|--scenario small-get --concurrency 16"
	"stat (HEAD), 16 clients|--scenario stat --concurrency 16"
	"object-get 1 MiB, 4 clients|--scenario object-get --size 1MiB --concurrency 4"
)

echo "| binary | scenario | ops/s through the leader | ops/s through a follower | follower ÷ leader |"
echo "|---|---|---|---|---|"
base=17400
for spec in "$@"; do
	label="${spec%%=*}"
	bin="${spec#*=}"
	dir="$work/$label"
	start_bench_cluster "$label" "$bin" "$base" "$dir"
	n=0
	for sc in "${scenarios[@]}"; do
		name="${sc%%|*}"
		read -r -a args <<<"${sc#*|}"
		lrates="" frates=""
		for r in $(seq 1 "$rounds"); do
			for side in leader follower; do
				url="$leader"
				[ "$side" = follower ] && url="$follower"
				n=$((n + 1))
				"$bin" bench --server "$url" "${args[@]}" --duration "$duration" --out "$dir/$n.json" \
					>"$dir/$n.txt" 2>"$dir/$n.err"
				rate="$(jq '.cairn.achieved_rate' "$dir/$n.json")"
				if [ "$side" = leader ]; then lrates="$lrates $rate"; else frates="$frates $rate"; fi
			done
		done
		awk -v b="$label" -v s="$name" -v l="$lrates" -v f="$frates" 'BEGIN {
			nl = split(l, a, " "); nf = split(f, c, " ")
			for (i = 1; i <= nl; i++) { sl += a[i]; ls = ls (i > 1 ? ", " : "") sprintf("%.0f", a[i]) }
			for (i = 1; i <= nf; i++) { sf += c[i]; fs = fs (i > 1 ? ", " : "") sprintf("%.0f", c[i]) }
			printf "| %s | %s | %s | %s | %.2f× |\n", b, s, ls, fs, (sl > 0 ? sf / sl : 0)
		}'
	done
	stop_cluster
	base=$((base + 100))
done
