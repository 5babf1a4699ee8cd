#!/usr/bin/env bash
# Starts a local 3-node Cairn cluster on loopback: a one-member etcd (scripts/etcd, or the
# system's etcd when installed), MinIO (scripts/minio.sh), and three `cairn serve
# --cluster`. Prints the client URLs; Ctrl-C (or SIGTERM) stops everything.
#
#   CAIRN_CLUSTER_DIR  where data and logs go (default: a new temporary directory)
#   CAIRN_BIN          the cairn binary (default: built from this checkout)
#   SHARDS             shards of a new cluster (default: 4)
#   BASE_PORT          first of the ports used (default: 17000): etcd BASE_PORT..+1,
#                      MinIO +2..+3, node i client +10+i, peer +20+i, admin +30+i
set -euo pipefail

if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
	exit 0
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${CAIRN_CLUSTER_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/cairn-cluster-XXXXXX")}"
shards="${SHARDS:-4}"
base="${BASE_PORT:-17000}"
mkdir -p "$dir"

pids=()
cleanup() {
	trap - EXIT INT TERM
	echo "stopping the cluster..." >&2
	# Cairn nodes first (SIGTERM: leaders hand over), then MinIO and etcd.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[$i]}" 2>/dev/null || true
		wait "${pids[$i]}" 2>/dev/null || true
	done
	echo "data and logs kept in $dir" >&2
	exit 0
}
trap cleanup EXIT INT TERM

wait_port() { # host port what
	for _ in $(seq 1 600); do
		if (echo >"/dev/tcp/$1/$2") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "cluster.sh: $3 did not listen on $1:$2 (see $dir)" >&2
	exit 1
}

bin="${CAIRN_BIN:-}"
if [ -z "$bin" ]; then
	bin="$dir/cairn"
	(cd "$root" && go build -o "$bin" ./cmd/cairn)
fi

# etcd
etcd_client="127.0.0.1:$base"
if command -v etcd >/dev/null; then
	etcd --name dev --data-dir "$dir/etcd" \
		--listen-client-urls "http://$etcd_client" --advertise-client-urls "http://$etcd_client" \
		--listen-peer-urls "http://127.0.0.1:$((base + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((base + 1))" \
		--initial-cluster "dev=http://127.0.0.1:$((base + 1))" >"$dir/etcd.log" 2>&1 &
else
	(cd "$root" && go build -o "$dir/etcd-dev" ./scripts/etcd)
	"$dir/etcd-dev" --dir "$dir/etcd" --client "$etcd_client" --peer "127.0.0.1:$((base + 1))" >"$dir/etcd.log" 2>&1 &
fi
pids+=($!)
wait_port 127.0.0.1 "$base" etcd

# MinIO
minio="$("$root/scripts/minio.sh")"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-cairndev}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-cairndev-secret}"
MINIO_ROOT_USER="$AWS_ACCESS_KEY_ID" MINIO_ROOT_PASSWORD="$AWS_SECRET_ACCESS_KEY" MINIO_BROWSER=off MINIO_UPDATE=off \
	"$minio" server "$dir/minio" --address "127.0.0.1:$((base + 2))" --console-address "127.0.0.1:$((base + 3))" \
	>"$dir/minio.log" 2>&1 &
pids+=($!)
wait_port 127.0.0.1 "$((base + 2))" MinIO

infra=("${pids[@]}") # etcd and MinIO: the cluster stops when one of them exits

# Three Cairn nodes, each started by its own script ($dir/nodeN.sh), so that a node killed
# while testing failures can be started again by hand; the cluster stays up meanwhile.
for i in 0 1 2; do
	cat >"$dir/node$i.sh" <<NODE
#!/usr/bin/env bash
export AWS_ACCESS_KEY_ID='$AWS_ACCESS_KEY_ID' AWS_SECRET_ACCESS_KEY='$AWS_SECRET_ACCESS_KEY'
exec '$bin' serve --cluster --data-dir '$dir/node$i' \\
	--listen 127.0.0.1:$((base + 10 + i)) --peer-listen 127.0.0.1:$((base + 20 + i)) \\
	--admin-listen 127.0.0.1:$((base + 30 + i)) \\
	--etcd $etcd_client --shards $shards --replication 3 \\
	--blob s3://cairn --s3-endpoint http://127.0.0.1:$((base + 2)) "\$@" >>'$dir/node$i.log' 2>&1
NODE
	chmod +x "$dir/node$i.sh"
	"$dir/node$i.sh" &
	pids+=($!)
done
for i in 0 1 2; do
	wait_port 127.0.0.1 "$((base + 10 + i))" "cairn node $i"
done

echo "Cairn cluster is up (data and logs in $dir):"
for i in 0 1 2; do
	echo "  node $i: http://127.0.0.1:$((base + 10 + i))  (admin http://127.0.0.1:$((base + 30 + i)))"
done
echo "etcd: http://$etcd_client   MinIO: http://127.0.0.1:$((base + 2))"
echo "Each node runs from $dir/node<i>.sh (pids ${pids[*]:2}); restart a killed one with"
echo "  $dir/node0.sh &     (extra arguments go to cairn serve)"
echo "Ctrl-C stops everything."
wait -n "${infra[@]}" || true
echo "cluster.sh: etcd or MinIO exited; see the logs in $dir" >&2
