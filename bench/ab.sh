#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A/B of two fencelockd binaries on W1/W2 (fencelock only), alternating which goes first in
# each round so drift on a shared machine hits both alike; prints every run and the medians.
#   bench/ab.sh OLD_BIN NEW_BIN [ROUNDS=5] [SECONDS=5]
# Each run: a fresh 3-node cluster on 127.0.0.1:27480+10*(i-1) (Raft +1, HTTP +2; BENCH_AB_PORT
# moves the base; not the ports of bench/servers/fencelock.sh, so it can run beside `make bench`;
# bench/instr.sh's are BENCH_INSTR_PORT, 27580), data under
# build/bench/ab/, release lockbench W1 then W2, cluster stopped. Then, once per binary, the
# leader's instructions per LOCK+UNLOCK pair (bench/instr.sh, callgrind: a count, so one run each
# is enough and the machine's load does not move it; BENCH_INSTR=0 skips it, BENCH_INSTR_PAIRS
# sets its pairs, default 2000), and the ratio new / old.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 rounds=${3:-5} secs=${4:-5}
LB=build/release/bench/lockbench
top=build/bench/ab
out=$top/results.jsonl
mkdir -p "$top"
: >"$out"
pids=()
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop EXIT
port() { echo $((${BENCH_AB_PORT:-27480} + 10 * ($1 - 1) + $2)); }
run() { # label binary
  rm -rf "$top/data"
  local m="" e="" i
  for i in 1 2 3; do
    m+="${m:+,}$i=127.0.0.1:$(port "$i" 1)"
    e+="${e:+,}127.0.0.1:$(port "$i" 0)"
  done
  for i in 1 2 3; do
    mkdir -p "$top/data/n$i"
    "$2" --id "$i" --data-dir "$top/data/n$i" --initial-cluster "$m" \
      --listen "127.0.0.1:$(port "$i" 0)" --raft-listen "127.0.0.1:$(port "$i" 1)" \
      --http-listen "127.0.0.1:$(port "$i" 2)" >"$top/n$i.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 1 200); do
    for i in 1 2 3; do
      (exec 3<>"/dev/tcp/127.0.0.1/$(port "$i" 2)" && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 &&
        timeout 2 cat <&3) 2>/dev/null | grep -q '"status":"ok","role":"leader"' && break 2
    done
    sleep 0.1
  done
  sleep 1 # followers caught up
  for w in W1 W2; do
    line=$("$LB" --driver fencelock --endpoints "$e" --workload "$w" --seconds "$secs")
    echo "{\"label\":\"$1\",${line#\{}" | tee -a "$out"
  done
  stop
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then run old "$old"; run new "$new"; else run new "$new"; run old "$old"; fi
done
python3 - "$out" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and k not in ("clients", "ttl_ms")]
for w in ("W1", "W2"):
    for label in ("old", "new"):
        rs = [r for r in rows if r["workload"] == w and r["label"] == label]
        med = {k: statistics.median(r[k] for r in rs if k in r) for k in keys if all(k in r for r in rs)}
        print(w, label, "runs=%d" % len(rs), " ".join("%s=%.4g" % kv for kv in sorted(med.items())))
EOF
if [ "${BENCH_INSTR:-1}" = 1 ]; then
  stop
  for label in old new; do
    bin=$old
    [ "$label" = new ] && bin=$new
    line=$(bench/instr.sh "$bin" "${BENCH_INSTR_PAIRS:-2000}") || true
    echo "{\"label\":\"$label\",${line#\{}" | tee -a "$out"
  done
  python3 - "$out" <<'EOF'
import json, sys
rows = {r["label"]: r for r in map(json.loads, open(sys.argv[1])) if r.get("workload") == "INSTR"}
o, n = rows.get("old", {}).get("per_pair"), rows.get("new", {}).get("per_pair")
print("INSTR instructions per LOCK+UNLOCK pair on the leader: old=%s new=%s new/old=%s" %
      (o, n, "%.3f" % (n / o) if o and n else "?"))
EOF
fi
