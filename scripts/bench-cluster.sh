# Sourced by the bench-*.sh scripts that measure a 3-node cluster: start_bench_cluster
# starts one with one shard (scripts/cluster.sh) for a binary and sets $leader and
# $follower to the client URLs of the shard's leader and of another node; stop_cluster
# stops it. Needs curl and jq; the caller sets `set -euo pipefail` and traps stop_cluster.

cluster_pid=""

stop_cluster() {
	if [ -n "$cluster_pid" ]; then
		kill -TERM "$cluster_pid" 2>/dev/null || true
		wait "$cluster_pid" 2>/dev/null || true
		cluster_pid=""
	fi
}

# start_bench_cluster NAME BINARY BASE_PORT DIR
start_bench_cluster() {
	local name="$1" bin="$2" base="$3" dir="$4" root st lid voters
	root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
	mkdir -p "$dir"
	CAIRN_BIN="$bin" SHARDS=1 BASE_PORT="$base" CAIRN_CLUSTER_DIR="$dir" "$root/scripts/cluster.sh" >"$dir/cluster.out" 2>&1 &
	cluster_pid=$!
	for _ in $(seq 1 600); do
		grep -q "Cairn cluster is up" "$dir/cluster.out" 2>/dev/null && break
		sleep 0.1
	done
	leader="" follower=""
	for _ in $(seq 1 300); do
		st="$(curl -fsS "http://127.0.0.1:$((base + 30))/v1/admin/cluster" 2>/dev/null || true)"
		lid="$(echo "$st" | jq -r '.shard_status[0].leader // empty' 2>/dev/null || true)"
		voters="$(echo "$st" | jq '[.shard_status[0].members[]? | select(.voter)] | length' 2>/dev/null || echo 0)"
		if [ -n "$lid" ] && [ "$voters" = 3 ]; then
			leader="$(echo "$st" | jq -r --arg id "$lid" '.nodes[] | select(.id == $id) | .client_url')"
			follower="$(echo "$st" | jq -r --arg id "$lid" '[.nodes[] | select(.id != $id)][0].client_url')"
			return 0
		fi
		sleep 0.2
	done
	echo "$(basename "$0"): no leader with three voters for $name (see $dir)" >&2
	exit 1
}
