#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/instr.sh — instructions the leader executes per LOCK+UNLOCK pair: a figure a loaded
# machine does not move (a count, not a time), so a change that costs CPU shows up in an A/B
# even while other work runs beside it.
#   bench/instr.sh BIN [PAIRS=2000]      prints one JSON line (workload "INSTR")
# perf's hardware counters are not available in this VM (`perf stat -e instructions` answers
# "<not supported>"), so the count is valgrind's: a 3-node cluster of BIN, node 1 under
# `valgrind --tool=callgrind` and the leader (nodes 2 and 3 plain, joined to it), then:
#   idle:  counters zeroed, BENCH_INSTR_IDLE_S (2) seconds with no client, dumped: the leader's
#          own timers (heartbeats, lease ticks) per second;
#   load:  counters zeroed, lockbench W1 (1 client, its own lock) for PAIRS pairs
#          (no warm-up: the count stays exact), dumped;
#   per pair = (load Ir - idle Ir/s x load seconds) / PAIRS
# where Ir is callgrind's instruction count of the whole process (every thread: the event loop,
# libraft's I/O threads). The session's open and close and the connection are in the load
# window too: one each, against thousands of pairs. Valgrind slows the leader (~30-50x on CPU);
# the figure is a count, so that does not matter, but the election timeout must outlast its
# slowest turn: the nodes run with --election-ms BENCH_INSTR_ELECTION_MS (2000).
# BENCH_INSTR_ARGS: more fencelockd flags for all three nodes, e.g. "--history-per-lock 0" for
# the cost of a setting (the same binary with and without it).
# Ports: BENCH_INSTR_PORT (27580) + 10*(N-1), Raft +1, HTTP +2 (not bench/run.sh's nor
# bench/ab.sh's). Data and logs under build/bench/instr/ (BENCH_INSTR_DIR). Every node it
# started is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$1 pairs=${2:-2000}
LB=${LB:-build/release/bench/lockbench}
base=${BENCH_INSTR_PORT:-27580}
top=${BENCH_INSTR_DIR:-build/bench/instr}
idle_s=${BENCH_INSTR_IDLE_S:-2}
election_ms=${BENCH_INSTR_ELECTION_MS:-2000}
extra=${BENCH_INSTR_ARGS:-} # more fencelockd flags for every node (an A/B of a setting)
warmup=0 # the count is exact: --pairs pairs, no time-bounded warm-up
command -v valgrind >/dev/null || { echo '{"driver":"fencelock","workload":"INSTR","errors":1,"error":"valgrind not installed"}'; exit 1; }
port() { echo $((base + 10 * ($1 - 1) + $2)); }
pids=()
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop EXIT
fail() {
  printf '{"driver":"fencelock","workload":"INSTR","errors":1,"error":"%s"}\n' "$1"
  exit 1
}
health() {
  (exec 3<>"/dev/tcp/127.0.0.1/$(port "$1" 2)" && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 &&
    timeout 5 cat <&3) 2>/dev/null | grep '^{' || true
}
# Sum of the "summary:" (or "totals:") lines of the callgrind dumps matching $1*.
ir_of() {
  local f s=0 v
  for f in "$1"*; do
    [ -f "$f" ] || continue
    v=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
    s=$((s + ${v:-0}))
  done
  echo "$s"
}
rm -rf "$top"
mkdir -p "$top"
# Node 1 (under callgrind) starts as a cluster of one, so it leads; nodes 2 and 3 then join it
# (--join: the leader adds each as a voter), and it stays the leader of three. (A leadership
# transfer to the slowed node does not complete in time.)
start() { # node extra-args...
  local i=$1 pre=()
  shift
  mkdir -p "$top/n$i"
  [ "$i" = 1 ] && pre=(valgrind --tool=callgrind --callgrind-out-file="$top/cg.%p")
  "${pre[@]}" "$bin" --id "$i" --data-dir "$top/n$i" \
    --listen "127.0.0.1:$(port "$i" 0)" --raft-listen "127.0.0.1:$(port "$i" 1)" \
    --http-listen "127.0.0.1:$(port "$i" 2)" --election-ms "$election_ms" $extra "$@" \
    >"$top/n$i.log" 2>&1 </dev/null &
  pids+=($!)
}
start 1 --initial-cluster "1=127.0.0.1:$(port 1 1)"
vg=${pids[0]}
leads() { case "$(health "$1")" in *'"status":"ok","role":"leader"'*) return 0 ;; esac; return 1; }
for _ in $(seq 1 600); do leads 1 && break; sleep 0.1; done # up to 60 s: valgrind starts slowly
leads 1 || fail "node 1 did not lead within 60 s"
start 2 --join "127.0.0.1:$(port 1 0)"
start 3 --join "127.0.0.1:$(port 1 0)"
ok=0
for _ in $(seq 1 600); do # joined: both answer /health "ok" (a voter that follows node 1)
  ok=0
  for i in 2 3; do case "$(health "$i")" in *'"status":"ok"'*) ok=$((ok + 1)) ;; esac; done
  [ "$ok" = 2 ] && break
  sleep 0.1
done
[ "$ok" = 2 ] || fail "nodes 2 and 3 did not join within 60 s"
leads 1 || fail "node 1 lost the leadership while the others joined"
sleep 1 # followers caught up, the new term's first entry committed
# idle
callgrind_control -z "$vg" >/dev/null 2>&1
t0=$(date +%s.%N)
sleep "$idle_s"
callgrind_control -d idle "$vg" >/dev/null 2>&1
t1=$(date +%s.%N)
idle_ir=$(ir_of "$top/cg.$vg.1")
# load
callgrind_control -z "$vg" >/dev/null 2>&1
t2=$(date +%s.%N)
line=$("$LB" --driver fencelock --endpoints "127.0.0.1:$(port 1 0)" --workload W1 \
  --pairs "$pairs" --seconds 600 --warmup "$warmup") || fail "lockbench W1 failed: $line"
t3=$(date +%s.%N)
callgrind_control -d load "$vg" >/dev/null 2>&1
load_ir=$(ir_of "$top/cg.$vg.2")
case "$(health 1)" in *'"role":"leader"'*) ;; *) fail "node 1 lost the leadership during the run" ;; esac
python3 - "$idle_ir" "$t0" "$t1" "$load_ir" "$t2" "$t3" "$pairs" "$warmup" "$bin" <<'EOF'
import json, sys
idle_ir, t0, t1, load_ir, t2, t3, pairs, warmup, binary = sys.argv[1:]
idle_ir, load_ir, pairs, warmup = int(idle_ir), int(load_ir), int(pairs), int(warmup)
idle_rate = idle_ir / (float(t1) - float(t0))
secs = float(t3) - float(t2)
n = pairs + warmup
per = (load_ir - idle_rate * secs) / n
print(json.dumps({"driver": "fencelock", "workload": "INSTR", "binary": binary,
                  "pairs": n, "instructions": load_ir, "seconds": round(secs, 3),
                  "idle_per_s": round(idle_rate), "per_pair": round(per)},
                 separators=(",", ":")))
EOF
