#!/usr/bin/env bash
# Measures a backup and a restore of an embedded node holding FILES small files: it starts
# `cairn serve` on a fresh data directory, imports FILES files of SIZE bytes (one
# workbench), runs `cairn admin backup` to a directory and `cairn admin restore` into a new
# data directory, and prints the times and the backup's size as a Markdown table row.
#
#   scripts/bench-backup.sh [BINARY]     (default: builds ./cmd/cairn)
#
#   FILES  number of files (default 100000)
#   SIZE   bytes per file (default 512; at most --inline-max-bytes, 4096, keeps them inline)
set -euo pipefail

if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
	exit 0
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
files="${FILES:-100000}"
size="${SIZE:-512}"
work="$(mktemp -d "${TMPDIR:-/tmp}/cairn-bench-backup-XXXXXX")"
pid=""
cleanup() {
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bin="${1:-}"
if [ -z "$bin" ]; then
	bin="$work/cairn"
	(cd "$root" && go build -o "$bin" ./cmd/cairn)
fi
port=$((20000 + RANDOM % 20000))
server="http://127.0.0.1:$port"
admin="http://127.0.0.1:$((port + 1))"

mkdir -p "$work/src"
python3 - "$work/src" "$files" "$size" <<'PY'
import os, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    sub = os.path.join(d, "%03d" % (i % 1000))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, "f%06d.txt" % i), "wb") as f:
        f.write((b"%06d " % i) * (size // 7) + b"\n" * (size - 7 * (size // 7)))
PY

"$bin" serve --data-dir "$work/data" --listen "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	curl -fsS "$server/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done
t0=$(date +%s.%N)
"$bin" import "$work/src" --server "$server" --agent bench --workbench w --concurrency 16 >/dev/null
t1=$(date +%s.%N)
"$bin" admin backup --to "$work/backup" --id bench --admin-server "$admin" >/dev/null
t2=$(date +%s.%N)
kill -TERM "$pid"
wait "$pid" || true
pid=""
"$bin" admin restore --from "$work/backup" --data-dir "$work/restored" >/dev/null
t3=$(date +%s.%N)
bytes=$(du -sb "$work/backup" | cut -f1)
printf '| %d files × %d B | import %.1f s | backup %.2f s | %.1f MB (%.0f B/file) | restore %.2f s |\n' \
	"$files" "$size" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" \
	"$(echo "$bytes / 1000000" | bc -l)" "$(echo "$bytes / $files" | bc -l)" "$(echo "$t3 - $t2" | bc)"
