#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/run.sh — one side-by-side run of the lock benchmark: for each system
# (fencelock, redis, redlock, redsync, etcd, etcd-go, zookeeper) start its servers
# (bench/servers/NAME.sh), run workloads W1, W2, W3 with build/release/bench/lockbench (the C
# drivers) or build/release/bench/gobench (etcd-go and redsync: the anchors through their own Go
# clients, bench/go; same command line, same JSON lines), stop them; W4 (held-lock footprint)
# for fencelock. On the zookeeper and redis servers the Java clients run too, in the same run
# (bench/java, one JVM per client: curator, redisson, redisson-fenced; same JSON lines; W8 of
# Redisson on a Sentinel set-up of its own, bench/servers/redis-sentinel.sh). Writes
# bench/results/RESULTS-<date>.md and bench/results/latest.md; every row is labelled with its
# client library and version, one way for all: the Go and Java rows carry a "client" field, the
# C drivers' labels are build/bench/run/clients.json.
#   bench/run.sh [SYSTEM...]        (default: all seven; `make bench` builds and runs this)
#   bench/run.sh --report           (only rewrite the report from the last run's raw results)
# Environment: BENCH_SECONDS (measured seconds per workload, default 10), BENCH_PAIRS (count
# bound per workload, default 1000000), BENCH_W4 (0 skips W4; default 1), BENCH_W4_SESSIONS
# (default 100000), BENCH_W4_LOCKS (locks per session, default 10), BENCH_W5 (0 skips W5: reads
# vs PUT on 3 nodes and on 1 node), BENCH_W5_COUNT (commands per kind, default 5000), BENCH_W6
# (0 skips W6: sessions kept alive), BENCH_W6_SESSIONS (default 100000), BENCH_W6_SECONDS
# (default 60), BENCH_W7 (0 skips W7: 10,000 client connections, 100 active; BENCH_W7_CONNS),
# BENCH_W8 (0 skips W8: fail-over of fencelock, etcd, ZooKeeper (leader killed), Redlock (one of
# its five servers killed), Redisson (the Sentinels' primary killed); C, Go and Java clients),
# BENCH_W8_TRIALS (kills per system, default 10), BENCH_W9 (0 skips W9: read-write locks, every system; a system
# without shared mode runs its readers on the mutex), BENCH_W9_READERS (16), BENCH_W9_HOLD_MS (1),
# BENCH_W9_PAUSE_MS (the writer's pause between writes, 10), BENCH_W10 (0 skips W10: watch,
# fencelock and etcd; fencelock also with one XREAD and one HTTP GET /v1/events watcher), BENCH_W10_WATCHERS (the watcher counts, "1 10 100"), BENCH_W10_PUTS
# (PUTs of the latency phase, default 300; the fan-out phase does 5x), BENCH_W10_GAP_MS (the
# pause after every watcher got a latency PUT's event before the next PUT, 10), BENCH_W10_RATES
# (the fixed offered loads, PUTs/s, "500 5000": each with every watcher count, open loop),
# BENCH_W10_RATE_SECONDS (each such run's length, 5), BENCH_OUT (the report's
# path, default bench/results/RESULTS-<date>.md), BENCH_LATEST (0: leave latest.md alone),
# BENCH_W11 (0 skips W11: semaphores, fencelock and etcd-go; Curator and Redisson beside them),
# BENCH_W11_CLIENTS (16), BENCH_W11_LIMIT (4), BENCH_W11_HOLD_MS (1), BENCH_W12 (0 skips W12:
# election fail-over, fencelock, etcd, etcd-go and Curator), BENCH_W12_ROUNDS (10),
# BENCH_W12_OBSERVERS (4), BENCH_JAVA (0 skips the Java clients' rows: ZooKeeper through Apache
# Curator, Redis through Redisson, build/java from bench/java), BENCH_JAVA_WARMUP (seconds of
# each workload the JVM runs unrecorded before measuring, 5), BENCH_W13 (0 skips W13: multi-lock
# under contention, bench/README.md "W13": fencelock LOCK.MULTI and one by one in sorted order,
# etcd-go's Mutexes in sorted order, Redisson's RedissonMultiLock, Curator's
# InterProcessMultiLock), BENCH_W13_SECONDS (measured seconds per row, default BENCH_SECONDS),
# BENCH_W13_K (the set sizes, "2 4 8"), BENCH_W13_CLIENTS (8), BENCH_W13_HOLD_MS (1), BENCH_W14
# (0 skips W14: the coordination primitives, fencelock only: INCR, k permits, a reentrant
# re-LOCK, LOCK with VALUE, LOCK.HISTORY, a latch's and a barrier's rounds; BENCH_SECONDS per
# row), BENCH_INSTR (0 skips the instruction count: bench/instr.sh, the leader under callgrind,
# after fencelock's workloads; about a minute), BENCH_INSTR_PAIRS (its W1 pairs, default 2000).
# Owns build/bench/run/ (the raw JSON lines of the last run). Every server it started is
# stopped at the end, also on failure or interrupt.
set -uo pipefail
cd "$(dirname "$0")/.."
LB=build/release/bench/lockbench
GB=build/release/bench/gobench # the Go drivers (scripts/gobench.sh)
secs=${BENCH_SECONDS:-10}
pairs=${BENCH_PAIRS:-1000000}
w4=${BENCH_W4:-1}
w4_sessions=${BENCH_W4_SESSIONS:-100000}
w4_locks=${BENCH_W4_LOCKS:-10}
w5=${BENCH_W5:-1}
w5_count=${BENCH_W5_COUNT:-5000}
w6=${BENCH_W6:-1}
w6_sessions=${BENCH_W6_SESSIONS:-100000}
w6_secs=${BENCH_W6_SECONDS:-60}
w7=${BENCH_W7:-1}
w7_conns=${BENCH_W7_CONNS:-10000}
w8=${BENCH_W8:-1}
w8_trials=${BENCH_W8_TRIALS:-10}
w9=${BENCH_W9:-1}
w9_readers=${BENCH_W9_READERS:-16}
w9_hold=${BENCH_W9_HOLD_MS:-1}
w9_pause=${BENCH_W9_PAUSE_MS:-10}
w10=${BENCH_W10:-1}
instr=${BENCH_INSTR:-1}
instr_pairs=${BENCH_INSTR_PAIRS:-2000}
w10_watchers=${BENCH_W10_WATCHERS:-1 10 100}
w10_puts=${BENCH_W10_PUTS:-300}
w10_gap=${BENCH_W10_GAP_MS:-10}
w10_rates=${BENCH_W10_RATES:-500 5000}
w10_rate_secs=${BENCH_W10_RATE_SECONDS:-5}
w11=${BENCH_W11:-1}
w11_clients=${BENCH_W11_CLIENTS:-16}
w11_limit=${BENCH_W11_LIMIT:-4}
w11_hold=${BENCH_W11_HOLD_MS:-1}
w12=${BENCH_W12:-1}
w12_rounds=${BENCH_W12_ROUNDS:-10}
w12_observers=${BENCH_W12_OBSERVERS:-4}
w13=${BENCH_W13:-1}
w13_secs=${BENCH_W13_SECONDS:-$secs}
w13_ks=${BENCH_W13_K:-2 4 8}
w13_clients=${BENCH_W13_CLIENTS:-8}
w13_hold=${BENCH_W13_HOLD_MS:-1}
w14=${BENCH_W14:-1}
java_on=${BENCH_JAVA:-1}
java_warm=${BENCH_JAVA_WARMUP:-5}
JAR=build/java/fencelock-bench.jar
load_start=$(uptime)
report_only=0
[ "${1:-}" = --report ] && { report_only=1; shift; }
systems=("$@")
[ ${#systems[@]} -gt 0 ] || systems=(fencelock redis redlock redsync etcd etcd-go zookeeper)
raw=build/bench/run
json="$raw/results.jsonl"
if [ "$report_only" = 0 ]; then
  rm -rf "$raw" && mkdir -p "$raw"
  : >"$json"
fi
[ -x "$LB" ] || { echo "no $LB: run make SAN=0 $LB (or make bench)" >&2; exit 1; }

running=""
cleanup() {
  ! declare -F java_stop >/dev/null || java_stop
  [ "${sentinel_up:-0}" = 0 ] || bench/servers/redis-sentinel.sh stop >/dev/null 2>&1 || true
  if [ -n "$running" ]; then
    echo "stopping $running"
    "bench/servers/$running.sh" stop >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM

# The harness of system $1: gobench for the Go clients, lockbench for the C drivers.
runner() { case $1 in etcd-go | redsync) echo "$GB" ;; *) echo "$LB" ;; esac; }

# The client library and version of each C driver's rows, into $raw/clients.json (the Go
# drivers' rows carry their own, from gobench's build information). Debian's package versions of
# the libraries lockbench links.
client_versions() {
  local hi cu zk rev
  hi=$(dpkg-query -W -f='${Version}' libhiredis-dev 2>/dev/null || echo '?')
  cu=$(dpkg-query -W -f='${Version}' libcurl4-openssl-dev 2>/dev/null || echo '?')
  zk=$(dpkg-query -W -f='${Version}' libzookeeper-mt-dev 2>/dev/null || echo '?')
  rev=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
  printf '{"fencelock":"libfencelock; W5-W14 raw RESP on hiredis %s (this tree, %s)","redis":"hiredis %s (C; polling)","redlock":"hiredis %s (C; polling, 1-5 ms retry)","etcd":"libcurl %s over the JSON gateway (C; v3lock, v3election)","zookeeper":"ZooKeeper C client libzookeeper-mt %s"}\n' \
    "$hi" "$rev" "$hi" "$hi" "$cu" "$zk" >"$raw/clients.json"
}

note() { # system workload note: a row that was not measured
  printf '{"driver":"%s","workload":"%s","skipped":"%s"}\n' "$1" "$2" "$3" >>"$json"
}

http_health() { # port -> the /health JSON line
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 &&
    timeout 2 cat <&3) 2>/dev/null | grep '^{' || true
}

# Newest snapshot index of fencelock node $1 (files snapshot-TERM-INDEX-STAMP.meta), or 0.
snap_index() {
  find "build/bench/fencelock/node$1" -maxdepth 1 -name 'snapshot-*.meta' -printf '%f\n' |
    awk -F- '{i = $3 + 0; if (i > m) m = i} END {print m + 0}'
}

# "role applied_index" of fencelock node $1 from /health (empty if it does not answer).
node_state() {
  sed -n 's/.*"role":"\([a-z]*\)".*"applied_index":\([0-9]*\).*/\1 \2/p' \
    <<<"$(http_health $((${FL_BASE_PORT:-17480} + 2 + 10 * ($1 - 1))))"
}

# One PUT to fencelock node $1 (a new log entry; the reply is not checked).
put_one() {
  (exec 3<>"/dev/tcp/127.0.0.1/$((17480 + 10 * ($1 - 1)))" &&
    printf '*3\r\n$3\r\nPUT\r\n$6\r\nw4snap\r\n$1\r\nx\r\n' >&3 && timeout 2 head -c 5 <&3) \
    >/dev/null 2>&1 || true
}

# Kill -9 follower $1 and restart it (flags as shipped); print the seconds until its /health is
# ok and it has applied index $2, or null after 30 s.
restart_follower() {
  local node=$1 target=$2 t0 t1 h ai out=null
  kill -9 "$(cat "build/bench/fencelock/node$node.pid")"
  sleep 0.5
  t0=$(date +%s.%N)
  bench/servers/fencelock.sh start >/dev/null 2>&1 &
  for _ in $(seq 1 600); do
    h=$(http_health $((${FL_BASE_PORT:-17480} + 2 + 10 * (node - 1))))
    ai=$(sed -n 's/.*"status":"ok".*"applied_index":\([0-9]*\).*/\1/p' <<<"$h")
    if [ -n "$ai" ] && [ "$ai" -ge "$target" ]; then
      t1=$(date +%s.%N)
      out=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
      break
    fi
    sleep 0.05
  done
  wait
  echo "$out"
}

# Make follower $1's newest snapshot cover the whole log (bounded: 60 s): restart it (SIGTERM)
# with --snapshot-threshold 2, so it snapshots as it applies, then write one entry at a time to
# leader $2 until a snapshot reaches the leader's applied index, then give it back the default
# threshold with a plain SIGTERM restart (no entry is written meanwhile but the new term's
# barrier, if any). 0 once covered, 1 if not.
snapshot_everything() {
  local node=$1 leader=$2 pidf="build/bench/fencelock/node$1.pid" st ai
  kill "$(cat "$pidf")"
  for _ in $(seq 1 100); do kill -0 "$(cat "$pidf")" 2>/dev/null || break; sleep 0.1; done
  FL_ARGS="--snapshot-threshold 2" timeout 60 bench/servers/fencelock.sh start >/dev/null 2>&1 ||
    return 1
  for _ in $(seq 1 300); do
    st=$(node_state "$leader")
    ai=${st#* }
    if [ -n "$st" ] && [ "$(snap_index "$node")" -ge "$ai" ]; then
      kill "$(cat "$pidf")"
      for _ in $(seq 1 100); do kill -0 "$(cat "$pidf")" 2>/dev/null || break; sleep 0.1; done
      timeout 60 bench/servers/fencelock.sh start >/dev/null 2>&1 || return 1
      return 0
    fi
    put_one "$leader"
    sleep 0.2
  done
  return 1
}

# W4 for fencelock: load sessions x locks, then RSS per node, snapshot size, and the restart
# time of a follower killed with -9 (until its /health is ok and it has applied the leader's
# index), twice: first as the load left it (the tail since its last automatic snapshot, every
# --snapshot-threshold entries or --snapshot-log-bytes, to replay: the realistic worst case),
# then right after a snapshot that covers the whole load (snapshot_everything).
w4_fencelock() {
  local eps=$1 line rss="" snap="" i node leader st pid
  echo "  W4: loading $w4_sessions sessions x $w4_locks locks"
  line=$(timeout 300 "$LB" --driver fencelock --endpoints "$eps" --workload W4 \
    --sessions "$w4_sessions" --locks-per-session "$w4_locks" --ttl 3600000)
  echo "  $line"
  case "$line" in '{'*) ;; *) note fencelock W4 "loader failed"; return ;; esac
  sleep 2 # let followers apply and snapshots settle
  for i in 1 2 3; do
    pid=$(cat "build/bench/fencelock/node$i.pid")
    rss+="${rss:+,}$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")"
    snap+="${snap:+,}$(find "build/bench/fencelock/node$i" -maxdepth 1 -name 'snapshot-*' \
      ! -name '*.meta' -printf '%T@ %s\n' | sort -n | tail -1 | cut -d' ' -f2)"
  done
  # Restart: a follower (the leader would add an election to the figure).
  local leader_ai="" tail=null restart_s=null snap_tail=null snap_s=null
  node="" leader=""
  for i in 1 2 3; do
    st=$(node_state "$i")
    case "$st" in follower*) [ -n "$node" ] || node=$i ;; leader*) leader=$i leader_ai=${st#* } ;; esac
  done
  if [ -n "$node" ] && [ -n "$leader_ai" ]; then
    tail=$((leader_ai - $(snap_index "$node")))
    restart_s=$(restart_follower "$node" "$leader_ai")
    echo "  W4: restart with a tail of $tail entries: $restart_s s"
    if snapshot_everything "$node" "$leader"; then
      st=$(node_state "$leader")
      leader_ai=${st#* }
      snap_tail=$((leader_ai - $(snap_index "$node")))
      snap_s=$(restart_follower "$node" "$leader_ai")
      echo "  W4: restart after a snapshot at the end of the load ($snap_tail entries after it): $snap_s s"
    else
      echo "  W4: no snapshot covering the load within 60 s"
    fi
  fi
  printf '{"driver":"fencelock","workload":"W4","rss_kib":[%s],"snapshot_bytes":[%s],"restart_s":%s,"tail_entries":%s,"restart_after_snapshot_s":%s,"after_snapshot_entries":%s,"restarted_node":%s,"load":%s}\n' \
    "$rss" "$snap" "$restart_s" "$tail" "$snap_s" "$snap_tail" "${node:-0}" "$line" >>"$json"
  echo "  W4: RSS KiB [$rss], snapshot bytes [$snap]"
}

# W5 for fencelock on the running cluster ($1: endpoints, $2: node count for the JSON).
w5_fencelock() {
  local line
  line=$(timeout $((secs + 60)) "$LB" --driver fencelock --endpoints "$1" --workload W5 \
    --pairs "$w5_count" --seconds "$secs")
  [ -n "$line" ] || line='{"driver":"fencelock","workload":"W5","errors":1,"error":"lockbench failed"}'
  line="${line%\}},\"nodes\":$2}"
  echo "   $line"
  echo "$line" >>"$json"
}

# CPU ticks (user + system) of a pid so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# A counter or gauge from a node's /metrics page (HTTP port $1, metric name $2), or 0.
http_metric() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 &&
    timeout 2 cat <&3) 2>/dev/null | awk -v m="$2" '$1 == m {v = $2} END {printf "%d", v}'
}

# W6 for fencelock: sessions kept alive; the leader's CPU per keepalive and peak RSS, and what
# the machine spent on it (docs/performance.md, "W6 on this machine"): the CPU of every node and
# of lockbench, the leader's read barriers and Raft entries, the writes completed by the disk
# under build/bench (/proc/diskstats: all three nodes' log writes, and anything else on it). BENCH_W6_PERF=1 also samples the whole machine with perf for 20 s of the steady
# state (build/bench/run/w6.perf.data; perf report --sort pid,dso, or --pid LEADER --sort sym).
w6_fencelock() {
  local eps=$1 line i h leader="" pid c0 c1 hz hwm lport out lb lbpid
  local -a nc0 nc1
  for i in 1 2 3; do
    h=$(http_health $((${FL_BASE_PORT:-17480} + 2 + 10 * (i - 1))))
    case "$h" in *'"role":"leader"'*) leader=$i ;; esac
  done
  [ -n "$leader" ] || { note fencelock W6 "no leader"; return; }
  pid=$(cat "build/bench/fencelock/node$leader.pid")
  lport=$((${FL_BASE_PORT:-17480} + 2 + 10 * (leader - 1)))
  hz=$(getconf CLK_TCK)
  for i in 1 2 3; do nc0[i]=$(cpu_ticks "$(cat "build/bench/fencelock/node$i.pid")"); done
  local b0 r0 a0 b1 r1 a1 load0 load1 dev d0 d1
  dev=$(basename "$(df --output=source build/bench 2>/dev/null | tail -n 1)")
  d0=$(awk -v d="$dev" '$3 == d {print $8}' /proc/diskstats)
  b0=$(http_metric "$lport" fencelock_read_barriers_total)
  r0=$(http_metric "$lport" fencelock_reads_total)
  a0=$(http_metric "$lport" fencelock_applied_index)
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  local t0=0 t1=0 v # the highest term any node knows: each one begun without a kill is needless
  for i in 1 2 3; do
    v=$(http_metric $((${FL_BASE_PORT:-17480} + 2 + 10 * (i - 1))) fencelock_raft_term)
    [ "${v:-0}" -gt "$t0" ] && t0=$v
  done
  c0=$(cpu_ticks "$pid")
  echo "  W6: $w6_sessions sessions, TTL 10 s, keepalive every TTL/3, $w6_secs s (load average $load0)"
  out="$raw/w6.out"
  timeout $((w6_secs + 180)) /usr/bin/time -f '%U %S' -o "$raw/w6.time" "$LB" --driver fencelock \
    --endpoints "$eps" --workload W6 --sessions "$w6_sessions" --ttl 10000 --seconds "$w6_secs" >"$out" &
  lbpid=$!
  if [ "${BENCH_W6_PERF:-0}" = 1 ]; then
    sleep 15 # sessions opened; sample the steady state
    perf record -e cpu-clock -F 999 -a -o "$raw/w6.perf.data" -- sleep 20 >/dev/null 2>&1 || true
  fi
  wait "$lbpid"
  line=$(tail -n 1 "$out")
  c1=$(cpu_ticks "$pid")
  for i in 1 2 3; do nc1[i]=$(cpu_ticks "$(cat "build/bench/fencelock/node$i.pid")"); done
  b1=$(http_metric "$lport" fencelock_read_barriers_total)
  r1=$(http_metric "$lport" fencelock_reads_total)
  a1=$(http_metric "$lport" fencelock_applied_index)
  load1=$(cut -d' ' -f1-3 /proc/loadavg)
  for i in 1 2 3; do
    v=$(http_metric $((${FL_BASE_PORT:-17480} + 2 + 10 * (i - 1))) fencelock_raft_term)
    [ "${v:-0}" -gt "$t1" ] && t1=$v
  done
  d1=$(awk -v d="$dev" '$3 == d {print $8}' /proc/diskstats)
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
  lb=$(awk '{printf "%.2f", $1 + $2}' "$raw/w6.time" 2>/dev/null || echo null)
  local ncpu=""
  for i in 1 2 3; do
    ncpu+="${ncpu:+,}$(awk -v a="${nc0[i]}" -v b="${nc1[i]}" -v h="$hz" 'BEGIN {printf "%.2f", (b - a) / h}')"
  done
  [ -n "$line" ] || line='{"driver":"fencelock","workload":"W6","errors":1,"error":"lockbench failed"}'
  line="${line%\}},\"leader_cpu_s\":$(awk -v a="$c0" -v b="$c1" -v h="$hz" 'BEGIN {printf "%.2f", (b - a) / h}'),\"leader_hwm_kib\":${hwm:-0}"
  line+=",\"leader\":$leader,\"nodes_cpu_s\":[$ncpu],\"lockbench_cpu_s\":${lb:-null}"
  line+=",\"read_barriers\":$((b1 - b0)),\"reads\":$((r1 - r0)),\"raft_entries\":$((a1 - a0))"
  line+=",\"disk_writes\":$((${d1:-0} - ${d0:-0})),\"terms_begun\":$((t1 - t0))"
  line+=",\"loadavg_before\":\"$load0\",\"loadavg_after\":\"$load1\"}"
  echo "  $line"
  echo "$line" >>"$json"
}

# W7 for fencelock: many open connections, a few active, a W1 client measuring beside them.
w7_fencelock() {
  local eps=$1 line pid
  pid=$(leader_pid fencelock)
  echo "  W7: $w7_conns connections (100 active) to the leader (pid ${pid:-?}); ulimit -n $(ulimit -n)"
  line=$(timeout $((secs * 3 + 120)) "$LB" --driver fencelock --endpoints "$eps" --workload W7 \
    --sessions "$w7_conns" --clients 100 --seconds $((secs * 3)) --server-pid "${pid:-1}")
  [ -n "$line" ] || line='{"driver":"fencelock","workload":"W7","errors":1,"error":"lockbench failed"}'
  echo "  $line"
  echo "$line" >>"$json"
}

# The pid of the current leader of system $1 (fencelock, etcd, etcd-go, zookeeper, or the primary
# of redis-sentinel), or of the first Redis server of Redlock (redlock, redsync), or nothing.
leader_pid() {
  local i h
  case $1 in
  fencelock)
    for i in 1 2 3; do
      h=$(http_health $((${FL_BASE_PORT:-17480} + 2 + 10 * (i - 1))))
      case "$h" in *'"status":"ok","role":"leader"'*) cat "build/bench/fencelock/node$i.pid"; return ;; esac
    done ;;
  etcd | etcd-go)
    for i in 1 2 3; do
      h=$(ETCDCTL_API=3 timeout 3 etcdctl --endpoints="127.0.0.1:$((12369 + 10 * i))" \
        endpoint status -w json 2>/dev/null) || continue
      if python3 -c 'import json,sys; s=json.loads(sys.argv[1])[0]["Status"]; sys.exit(s["header"]["member_id"] != s["leader"])' "$h" 2>/dev/null; then
        cat "build/bench/$1/$i/pid"; return
      fi
    done ;;
  zookeeper)
    for i in 1 2 3; do
      h=$( (exec 3<>"/dev/tcp/127.0.0.1/$((12180 + i))" && printf srvr >&3 && timeout 2 cat <&3) 2>/dev/null)
      case "$h" in *'Mode: leader'*) cat "build/bench/zookeeper/$i/pid"; return ;; esac
    done ;;
  redis-sentinel) # the primary the Sentinels name
    i=$(bench/servers/redis-sentinel.sh primary 2>/dev/null)
    [ -n "$i" ] && cat "build/bench/redis-sentinel/$i.pid" 2>/dev/null ;;
  redlock | redsync) # no leader: the first of the five independent servers
    cat "build/bench/$1/16380.pid" 2>/dev/null ;;
  esac
}

# W8 for system $1 (servers running, endpoints $2): $w8_trials times, kill -9 the leader while
# 8 clients contend for one lock; then bring the killed member back (start is idempotent).
# With $3 (a Java client: curator), the clients are that JVM's (java_cmd), the rows its own.
w8_system() {
  local s=$1 eps=$2 js=${3:-} trial pid line d=${3:-$1}
  for trial in $(seq 1 "$w8_trials"); do
    for _ in $(seq 1 100); do pid=$(leader_pid "$s"); [ -n "$pid" ] && break; sleep 0.2; done
    if [ -z "$pid" ]; then note "$d" W8 "no leader found (trial $trial)"; break; fi
    if [ -n "$js" ]; then
      line=""
      java_cmd 150 --workload W8 --kill-cmd "kill -9 $pid" && line=$JLINE
    else
      line=$(timeout 150 "$(runner "$s")" --driver "$s" --endpoints "$eps" --workload W8 \
        --kill-cmd "kill -9 $pid" 2>>"$raw/w8-$s.stderr")
    fi
    [ -n "$line" ] || line=$(printf '{"driver":"%s","workload":"W8","errors":1,"error":"lockbench failed"}' "$d")
    if [ "$d" = fencelock ]; then # detection, election, readiness, reconnect from the nodes' logs
      line=$(bench/w8_parts.py build/bench/fencelock/node{1,2,3}.log <<<"$line")
    fi
    line="${line%\}},\"trial\":$trial}"
    echo "   $line"
    echo "$line" >>"$json"
    timeout 120 "bench/servers/$s.sh" start >/dev/null 2>&1 || { note "$d" W8 "restart failed"; break; }
  done
}

# ---- the Java clients (bench/java: fencelock.bench.Bench) ----
# One JVM per client library and system, started once for its whole workload set as a
# coprocess: lockbench's options go to it a line at a time, and each comes back as one JSON line
# of the same form (plus "client": the library and version). Before the first measured workload
# the JVM runs W1, W2, W3 (and W9, W11) for $java_warm s each, unrecorded, so that the JIT has
# compiled the clients' paths; each workload then has lockbench's own warm-up besides.
# The coprocess's pid and pipe descriptors are copied at its start: bash unsets JB and JB_PID
# once the JVM has exited, and under set -u a later "${JB[1]}" would end the whole run.
JPID=""
JB_IN=""
JB_OUT=""
JLINE=""
java_start() { # java-system endpoints [extra Bench args...]: 0 once the JVM runs
  local js=$1 eps=$2
  shift 2
  coproc JB { exec java -Xms256m -Xmx512m -cp "$JAR:build/java/lib/*" fencelock.bench.Bench \
    --system "$js" --endpoints "$eps" "$@" 2>>"$raw/java-$js.stderr"; }
  JPID=$!
  JB_OUT=${JB[0]:-}
  JB_IN=${JB[1]:-}
  sleep 0.2
  [ -n "$JB_IN" ] && kill -0 "$JPID" 2>/dev/null
}
java_stop() { # the JVM asked to quit; killed after 20 s
  [ -n "${JPID:-}" ] || return 0
  local pid=$JPID
  [ -z "$JB_IN" ] || { printf 'quit\n' >&"$JB_IN"; } 2>/dev/null || true
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  JPID=""
  JB_IN=""
  JB_OUT=""
}
# java_cmd TIMEOUT_S OPTIONS...: one command; its JSON line in JLINE (1: no answer in time, and
# the JVM is stopped: the next workload set starts a new one).
java_cmd() {
  local t=$1
  shift
  JLINE=""
  [ -n "${JPID:-}" ] && kill -0 "$JPID" 2>/dev/null || return 1
  { printf '%s\n' "$*" >&"$JB_IN"; } 2>/dev/null || { java_stop; return 1; }
  if ! IFS= read -r -t "$t" JLINE <&"$JB_OUT"; then
    JLINE=""
    java_stop
    return 1
  fi
}
java_run() { # java-system workload timeout_s options...: one row into the results
  local js=$1 w=$2 t=$3 line=""
  shift 3
  java_cmd "$t" --workload "$w" "$@" && line=$JLINE
  [ -n "$line" ] || line=$(printf '{"driver":"%s","workload":"%s","errors":1,"error":"the JVM did not answer within %d s (see %s)"}' "$js" "$w" "$t" "$raw/java-$js.stderr")
  echo "   $line"
  echo "$line" >>"$json"
}
# The workload set of one Java client on system $2's running servers (endpoints $3): W1-W3, W8
# (ZooKeeper), W9 and W11 where the client has them, W12 (Curator's LeaderLatch).
java_set() { # java-system system endpoints
  local js=$1 s=$2 eps=$3 w
  if [ ! -f "$JAR" ]; then
    echo "== $js: SKIPPED (no $JAR: make bench builds it from bench/java)"
    for w in W1 W2 W3; do note "$js" "$w" "not built (no $JAR)"; done
    return
  fi
  echo "== $js (Java client on the $s servers)"
  if ! java_start "$js" "$eps"; then
    for w in W1 W2 W3; do note "$js" "$w" "the JVM did not start (see $raw/java-$js.stderr)"; done
    return
  fi
  echo "   warm-up: W1, W2, W3$([ "$js" = redisson-fenced ] || echo ", W9, W11, W13") for $java_warm s each, not recorded"
  java_cmd $((java_warm * 5 + 120)) --workload warmup --seconds "$java_warm" --pairs "$pairs" ||
    JLINE="(no answer)"
  echo "   $JLINE"
  for w in W1 W2 W3; do
    [ "${BENCH_W123:-1}" = 1 ] || break
    java_run "$js" "$w" $((secs + 30)) --seconds "$secs" --pairs "$pairs"
  done
  [ "$js" = curator ] && [ "$w8" = 1 ] && w8_system "$s" "$eps" "$js"
  if [ "$js" != redisson-fenced ]; then
    [ "$w9" = 1 ] && java_run "$js" W9 $((secs + 60)) --clients "$w9_readers" --seconds "$secs" \
      --pairs "$pairs" --hold "$w9_hold" --writer-pause "$w9_pause"
    [ "$w11" = 1 ] && java_run "$js" W11 $((secs + 60)) --clients "$w11_clients" --limit "$w11_limit" \
      --hold "$w11_hold" --seconds "$secs" --pairs "$pairs"
  fi
  [ "$js" = curator ] && [ "$w12" = 1 ] && java_run "$js" W12 $((w12_rounds * 10 + 60)) \
    --clients "$w12_observers" --rounds "$w12_rounds" --seconds $((w12_rounds * 10 + 30))
  if [ "$js" != redisson-fenced ] && [ "$w13" = 1 ]; then # RedissonMultiLock, InterProcessMultiLock
    for k in $w13_ks; do
      java_run "$js" W13 $((w13_secs + 60)) --k "$k" --way multi --clients "$w13_clients" \
        --hold "$w13_hold" --seconds "$w13_secs" --pairs "$pairs"
    done
  fi
  # W14: RSemaphore.tryAcquire(n) and RCountDownLatch; InterProcessSemaphoreV2.acquire(qty) and
  # DistributedDoubleBarrier (the primitives each client has)
  [ "$js" != redisson-fenced ] && [ "$w14" = 1 ] &&
    java_run "$js" W14 $((secs * 3 + 60)) --seconds "$secs" --pairs "$pairs"
  java_stop
}

# W8 for Redisson (RLock and RFencedLock): the one Redis of W1-W3 has nothing to fail over to,
# so a primary, a replica and three Sentinels (bench/servers/redis-sentinel.sh) are started for
# it, and Redisson runs in its Sentinel mode; each trial kills the primary with -9.
sentinel_up=0
java_w8_sentinel() {
  local js eps w
  [ -f "$JAR" ] || return 0
  echo "== redis-sentinel: starting a primary, a replica and 3 Sentinels (W8 for Redisson)"
  bench/servers/redis-sentinel.sh stop >/dev/null 2>&1 || true
  rm -rf build/bench/redis-sentinel
  sentinel_up=1
  if ! eps=$(timeout 120 bench/servers/redis-sentinel.sh start | tail -n 1) || [ -z "$eps" ]; then
    for js in redisson redisson-fenced; do note "$js" W8 "the Sentinel set-up did not start (build/bench/redis-sentinel/)"; done
  else
    echo "   Sentinels $eps"
    for js in redisson redisson-fenced; do
      echo "== $js W8 (Sentinel mode)"
      if java_start "$js" "$eps" --sentinel-master bench; then
        w8_system redis-sentinel "$eps" "$js"
        java_stop
      else
        note "$js" W8 "the JVM did not start (see $raw/java-$js.stderr)"
      fi
    done
  fi
  bench/servers/redis-sentinel.sh stop >/dev/null 2>&1
  sentinel_up=0
}

# One lockbench line into the results (a failed run gets an error line of its own).
run_line() { # system workload timeout_s lockbench-args...
  local s=$1 w=$2 t=$3 line
  shift 3
  line=$(timeout "$t" "$(runner "$s")" --driver "$s" --workload "$w" "$@")
  [ -n "$line" ] || line=$(printf '{"driver":"%s","workload":"%s","errors":1,"error":"lockbench failed"}' "$s" "$w")
  echo "   $line"
  echo "$line" >>"$json"
}

# W9 for system $1 (endpoints $2): 16 readers and a writer on one lock; fencelock and etcd-go
# (its client's recipes.RWMutex) twice, with shared readers and with exclusive ones (the same
# loop on a mutex: the baseline).
w9_system() {
  local s=$1 eps=$2
  run_line "$s" W9 $((secs + 60)) --endpoints "$eps" --clients "$w9_readers" --seconds "$secs" \
    --pairs "$pairs" --hold "$w9_hold" --writer-pause "$w9_pause"
  case "$s" in fencelock | etcd-go) ;; *) return 0 ;; esac
  run_line "$s" W9 $((secs + 60)) --endpoints "$eps" --clients "$w9_readers" --seconds "$secs" \
    --pairs "$pairs" --hold "$w9_hold" --writer-pause "$w9_pause" --exclusive-readers
}

# W10 for system $1 (endpoints $2): for each watcher count, latency and fan-out.
w10_system() {
  local s=$1 eps=$2 n
  for n in $w10_watchers; do
    run_line "$s" W10 $((secs + 90)) --endpoints "$eps" --clients "$n" --pairs "$w10_puts" \
      --seconds "$secs" --gap "$w10_gap"
  done
  # the same offered loads for every system: a fixed PUT rate, open loop (lockbench --rate)
  local rt
  for rt in $w10_rates; do
    for n in $w10_watchers; do
      run_line "$s" W10 $((w10_rate_secs + 90)) --endpoints "$eps" --clients "$n" --rate "$rt" \
        --seconds "$w10_rate_secs"
    done
  done
  # fencelock: one XREAD and one GET /v1/events (SSE) watcher of the same PUTs
  [ "$s" = fencelock ] && run_line fencelock-sse W10 $((secs + 90)) --endpoints "$eps" \
    --clients 2 --pairs "$w10_puts" --seconds "$secs" --gap "$w10_gap"
  return 0
}

# W11 (fencelock, etcd-go): clients on one semaphore of limit permits. W12 (fencelock, etcd,
# etcd-go): rounds of an election whose leader's session (lease) is ended from outside;
# observers see the next.
w11_system() {
  run_line "$1" W11 $((secs + 60)) --endpoints "$2" --clients "$w11_clients" --limit "$w11_limit" \
    --hold "$w11_hold" --seconds "$secs" --pairs "$pairs"
}
# W13 (fencelock: LOCK.MULTI and one by one in sorted order; etcd-go: its Mutexes in sorted
# order): clients on overlapping sets of k names out of 16, per set size.
w13_system() {
  local s=$1 eps=$2 k way ways=sequential
  [ "$s" = fencelock ] && ways="multi sequential"
  for k in $w13_ks; do
    for way in $ways; do
      run_line "$s" W13 $((w13_secs + 60)) --endpoints "$eps" --k "$k" --way "$way" \
        --clients "$w13_clients" --hold "$w13_hold" --seconds "$w13_secs" --pairs "$pairs"
    done
  done
}
# W14 (fencelock): the coordination primitives, each row for BENCH_SECONDS (7 rows).
w14_system() {
  run_line "$1" W14 $((secs * 7 + 60)) --endpoints "$2" --seconds "$secs" --pairs "$pairs"
}
w12_system() {
  run_line "$1" W12 $((w12_rounds * 10 + 60)) --endpoints "$2" --clients "$w12_observers" \
    --rounds "$w12_rounds" --seconds $((w12_rounds * 10 + 30))
}

# The markdown report from the JSON lines ($1) and the machine's description.
report() {
  local disk dev
  dev=$(df --output=source build/bench 2>/dev/null | tail -n 1)
  disk="$(df --output=fstype build/bench 2>/dev/null | tail -n 1) on $dev"
  local pk
  pk=$(lsblk -no PKNAME "$dev" 2>/dev/null | head -n 1)
  [ -n "$pk" ] || pk=$(basename "$dev")
  if [ -r "/sys/block/$pk/queue/rotational" ]; then
    case $(cat "/sys/block/$pk/queue/rotational") in 0) disk+=" (non-rotational: SSD/virtual)" ;;
      1) disk+=" (the kernel reports it rotational; virtio disks often do)" ;; esac
  fi
  MACHINE_NPROC=$(nproc) \
  MACHINE_CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1) \
  MACHINE_MEM=$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) \
  MACHINE_KERNEL=$(uname -sr) MACHINE_DISK=$disk MACHINE_OS=$(. /etc/os-release && echo "$PRETTY_NAME") \
  BENCH_SECS=$secs LOAD_START=$load_start LOAD_END=$(uptime) python3 - "$1" <<'PY'
import json, os, sys, datetime
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
order = ["fencelock", "redis", "redisson", "redisson-fenced", "redlock", "redsync", "etcd", "etcd-go",
         "zookeeper", "curator"]
# The servers behind each row; the client that drove them is added by lab() below.
desc = {"fencelock": "fencelock, 3 nodes, fsync on", "redis": "Redis SET NX PX, 1 server, no fsync",
        "redisson": "Redis, 1 server, no fsync", "redisson-fenced": "Redis, 1 server, no fsync",
        "redlock": "Redlock, 5 Redis servers, no fsync", "redsync": "Redlock, 5 Redis servers, no fsync",
        "etcd": "etcd lock recipe, 3 members, fsync on", "etcd-go": "etcd lock recipe, 3 members, fsync on",
        "zookeeper": "ZooKeeper lock recipe, 3 servers, fsync on", "curator": "ZooKeeper, 3 servers, fsync on"}
# W8 of Redisson runs on a Sentinel set-up: the one Redis of W1-W3 has nothing to fail over to.
desc_w8 = {s: "Redis primary + 1 replica, 3 Sentinels (down-after 5 s), no fsync" for s in ("redisson", "redisson-fenced")}
# The anchors through their users' own client libraries (bench/go, bench/java): on the servers
# of another row, so no server footprint (W4) of their own.
own_clients = {"redisson", "redisson-fenced", "redsync", "etcd-go", "curator"}
# Every row is labelled with its client library and version, one way for all: the Go and Java
# drivers' rows carry it ("client": gobench's build information, bench/java's pinned versions),
# the C drivers' come from clients.json (run.sh: Debian's versions of what lockbench links).
clients = {}
try:
    clients = json.load(open(os.path.join(os.path.dirname(sys.argv[1]), "clients.json")))
except (OSError, ValueError):
    pass
for r in rows:
    if r.get("client"):
        clients.setdefault(r["driver"], r["client"])
# The recipe of the client library a row used, where the library has several ("mutex": W1-W3, W8).
recipe = {("curator", "mutex"): "InterProcessMutex", ("curator", "W9"): "InterProcessReadWriteLock",
          ("curator", "W11"): "InterProcessSemaphoreV2", ("curator", "W12"): "LeaderLatch",
          ("redisson", "mutex"): "RLock", ("redisson", "W9"): "RReadWriteLock", ("redisson", "W11"): "RSemaphore",
          ("redisson-fenced", "mutex"): "RFencedLock",
          ("etcd-go", "mutex"): "concurrency.Mutex", ("etcd-go", "W9"): "recipes.RWMutex",
          ("etcd-go", "W11"): "a semaphore recipe on concurrency (bench/go)", ("etcd-go", "W12"): "concurrency.Election",
          ("fencelock", "W13multi"): "LOCK.MULTI", ("fencelock", "W13sequential"): "LOCK per name, in sorted order",
          ("etcd-go", "W13sequential"): "concurrency.Mutex per name, in sorted order",
          ("redisson", "W13multi"): "RedissonMultiLock", ("curator", "W13multi"): "InterProcessMultiLock"}
def lab(s, w, r=None):
    """The label of system s's row of workload w (r: the row): servers · client library and version · recipe."""
    key = "mutex" if w in ("W1", "W2", "W3", "W8") else w
    if w == "W9" and r is not None and r.get("reader_mode") == "exclusive":
        key = "mutex"  # readers on the mutex: the baseline (or no shared mode)
    if w == "W13" and r is not None:
        key = "W13" + str(r.get("way"))
    base = desc_w8.get(s) if w == "W8" and s in desc_w8 else desc.get(s, s)
    rc = recipe.get((s, key))
    return f"{base} · client: {clients.get(s, '?')}" + (f" · {rc}" if rc else "")
def get(sysname, w):
    for r in rows:
        if r.get("driver") == sysname and r.get("workload") == w:
            return r
    return None
def fmt(v, d=2):
    if v is None: return "–"
    return f"{v:.{d}f}" if isinstance(v, float) else str(v)
def rate(v):
    return "–" if v is None else f"{v:,.0f}"
def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "–"
def pratio(a, b):  # latencies near zero or negative (event before ack) give no ratio
    return f"{a / b:.2f}" if a and b and a > 0.05 and b > 0.05 else "–"
env = os.environ
out = []
p = out.append
p(f"# Lock benchmark: {datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M')} UTC")
p("")
p("Generated by `make bench` (bench/run.sh); how to read it: docs/performance.md.")
p("")
p("## Machine")
p("")
p(f"- CPUs: {env['MACHINE_NPROC']} × {env['MACHINE_CPU']}")
p(f"- memory: {env['MACHINE_MEM']}; kernel {env['MACHINE_KERNEL']}; {env['MACHINE_OS']}")
p(f"- disk under build/bench: {env['MACHINE_DISK']}")
p(f"- all servers and clients on this one machine, loopback; each workload measured for at most {env['BENCH_SECS']} s after a warm-up")
p(f"- `uptime` at the start: {env['LOAD_START'].strip()}; at the end: {env['LOAD_END'].strip()}")
p("- clients (every row names its own): " + "; ".join(f"{s}: {clients[s]}" for s in order if s in clients))
p("")
fl = {w: get("fencelock", w) for w in ("W1", "W2", "W3")}
def status(r):
    if r is None: return "not run"
    if "skipped" in r: return "skipped: " + r["skipped"]
    if r.get("errors"): return "error: " + r.get("error", "?")
    return ""
def ok(r):
    return r is not None and "skipped" not in r and not r.get("errors") and r.get("ops")
if any(r.get("workload") in ("W1", "W2", "W3", "W4") for r in rows):
    p("## W1 — uncontended: 1 client, acquire + release of its own lock")
    p("")
    p("| system | pairs/s | pair p50 ms | pair p99 ms | fencelock p50 / this p50 | fencelock pairs/s / this | note |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for s in order:
        r = get(s, "W1")
        if ok(r):
            f = fl["W1"] if ok(fl["W1"]) else None
            p(f"| {lab(s, 'W1')} | {rate(r['ops_per_s'])} | {fmt(r['p50_ms'], 3)} | {fmt(r['p99_ms'], 3)} | "
              f"{ratio(f and f['p50_ms'], r['p50_ms'])} | {ratio(f and f['ops_per_s'], r['ops_per_s'])} | {status(r) or ''} |")
        else:
            p(f"| {lab(s, 'W1')} | – | – | – | – | – | {status(r)} |")
    p("")
    p("## W2 — contended: 8 clients on one lock, acquire with a wait")
    p("")
    p("Grants/s counts every grant; hand-offs/s only grants to another client than the previous holder. "
      "Wait = time from the acquire call to the grant. Fairness = fewest / most grants of one client.")
    p("")
    p("| system | grants/s | hand-offs/s | wait p50 ms | wait p99 ms | fairness (min/max) | fencelock grants/s / this | fencelock hand-offs/s / this | note |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for s in order:
        r = get(s, "W2")
        if ok(r):
            f = fl["W2"] if ok(fl["W2"]) else None
            note = status(r) or (f"{r['timeouts']} timeouts" if r.get("timeouts") else "")
            if r.get("tokens_increasing") is False: note = (note + "; fencing tokens went backwards").lstrip("; ")
            p(f"| {lab(s, 'W2')} | {rate(r['grants_per_s'])} | {rate(r['handoffs_per_s'])} | {fmt(r['p50_ms'], 3)} | "
              f"{fmt(r['p99_ms'], 3)} | {r['fairness']:.2f} ({r['fair_min']}/{r['fair_max']}) | "
              f"{ratio(f and f['grants_per_s'], r['grants_per_s'])} | {ratio(f and f['handoffs_per_s'], r['handoffs_per_s'])} | {note} |")
        else:
            p(f"| {lab(s, 'W2')} | – | – | – | – | – | – | – | {status(r)} |")
    p("")
    p("## W3 — parallel: 16 clients, each on its own lock")
    p("")
    disk, ceiling = get("disk", "fsync"), None
    if disk and not disk.get("errors") and disk.get("p50_ms") and ok(fl["W3"]):
        c = disk["p50_ms"]
        ceiling = 16 / (2 * c / 1000.0)
        p(f"Little's-law ceiling: 16 clients, each pair two commits of at least one fdatasync "
          f"(this disk: p50 {c:.3f} ms, p90 {disk['p90_ms']:.3f} ms over {disk['n']} 4 KiB appends, "
          f"measured before the first system started): 16 / (2 × {c:.3f} ms) = {rate(ceiling)} pairs/s. "
          f"fencelock reaches {rate(fl['W3']['ops_per_s'])} pairs/s = **{fl['W3']['ops_per_s'] / ceiling:.2f}× the ceiling**.")
        p("")
    floor, nosync = get("w3floor", "W3"), get("w3floor", "W3-nosync")
    if floor and not floor.get("errors") and ok(fl["W3"]):
        p(f"This machine's floor (bench/w3floor.c, before the first system started): W3's pairs through "
          f"three processes that do only what any three-node Raft lock service with synced logs must "
          f"(loopback TCP, one entry per loop turn, 4 KiB direct RWF_DSYNC writes, one in flight per "
          f"node, a commit on the leader's and one follower's write; no parsing, sessions or fencing): "
          f"**{rate(floor['ops_per_s'])} pairs/s** (p50 {fmt(floor['p50_ms'], 3)} ms, "
          f"{floor['commands_per_entry']:.1f} commands per entry, CPUs {floor['cpu_busy'] * 100:.0f} % busy)"
          + (f"; with no sync at all {rate(nosync['ops_per_s'])} pairs/s ({nosync['ops_per_s'] / ceiling:.2f}× the ceiling)"
             if nosync and not nosync.get("errors") and ceiling else "")
          + f". fencelock reaches **{fl['W3']['ops_per_s'] / floor['ops_per_s']:.2f}× the floor**.")
        p("")
    p("| system | pairs/s | pair p50 ms | pair p99 ms | fencelock pairs/s / this | CPUs busy | note |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for s in order:
        r = get(s, "W3")
        if ok(r):
            f = fl["W3"] if ok(fl["W3"]) else None
            busy = f"{r['cpu_busy'] * 100:.0f} %" if r.get("cpu_busy") is not None else "–"
            p(f"| {lab(s, 'W3')} | {rate(r['ops_per_s'])} | {fmt(r['p50_ms'], 3)} | {fmt(r['p99_ms'], 3)} | "
              f"{ratio(f and f['ops_per_s'], r['ops_per_s'])} | {busy} | {status(r) or ''} |")
        else:
            p(f"| {lab(s, 'W3')} | – | – | – | – | – | {status(r)} |")
    p("")
    p("CPUs busy: the share of the machine's CPU time (all processes) not idle during the run.")
    p("")
    p("## W4 — held locks: footprint and restart")
    p("")
    p("Restart: a follower killed with -9, from the restart until it serves (/health ok) and has applied the leader's index; "
      "first with the entries since its last automatic snapshot to replay (what a crash finds: up to --snapshot-threshold entries), then right after a "
      "snapshot that covers the whole load (the node restarted once with --snapshot-threshold 2 and back).")
    p("")
    p("| system | locks held | sessions | RSS per node MiB | snapshot per node MiB | restart s, tail to replay (entries) | restart s, after a snapshot at the end of the load (entries after it) | note |")
    p("| --- | ---: | ---: | --- | --- | ---: | ---: | --- |")
    for s in order:
        if s in own_clients: continue  # W4 is a server footprint: no client's concern
        r = get(s, "W4")
        if r and "rss_kib" in r:
            rss = " / ".join(f"{k / 1024:.0f}" for k in r["rss_kib"])
            snap = " / ".join(f"{b / 1048576:.0f}" if b else "–" for b in r["snapshot_bytes"])
            rs = "–" if r["restart_s"] is None else f"{r['restart_s']:.2f}"
            if r.get("tail_entries") is not None: rs += f" ({r['tail_entries']:,})"
            ra = "–" if r.get("restart_after_snapshot_s") is None else f"{r['restart_after_snapshot_s']:.2f}"
            if r.get("after_snapshot_entries") is not None: ra += f" ({r['after_snapshot_entries']:,})"
            ld = r["load"]
            note = f"loaded in {ld['seconds']:.0f} s ({ld['locks_per_s']:,.0f} locks/s)"
            if ld.get("retried"): note += f"; {ld['retried']:,} commands resent ({ld.get('note') or ld.get('error')})"
            if ld.get("errors"): note += f"; load incomplete: {ld.get('error')}"
            note += f"; node {r['restarted_node']} restarted"
            p(f"| {lab(s, 'W4')} | {ld['locks']:,} | {ld['sessions']:,} | {rss} | {snap} | {rs} | {ra} | {note} |")
        elif s == "fencelock":
            p(f"| {lab(s, 'W4')} | – | – | – | – | – | – | {status(r) if r else 'not run (BENCH_W4=0)'} |")
        else:
            p(f"| {lab(s, 'W4')} | – | – | – | – | – | – | not measured: W4 is implemented for fencelock only |")
    p("")
w5rows = [r for r in rows if r.get("driver") == "fencelock" and r.get("workload") == "W5"]
if w5rows:
    p("## W5 — reads and keepalives vs PUT (fencelock; one connection)")
    p("")
    p("One command at a time (p50 / p99 ms, and the ratio to PUT's), then pipelined on one connection.")
    p("")
    p("| nodes | command | p50 ms | p99 ms | p50 / PUT p50 | p99 / PUT p99 |")
    p("| ---: | --- | ---: | ---: | ---: | ---: |")
    for r in w5rows:
        for k in ("PUT", "GET", "KV.GET", "FENCE.CHECK", "LOCK.INFO", "HTTP /v1/locks/{name}",
                  "HTTP /v1/locks/{name}?stale", "SESSION.KEEPALIVE", "INCR", "LOCK.WAITS",
                  "SESSION.LIST", "LOCK.HISTORY", "LATCH.INFO", "TXN"):
            c = r.get(k) or {}
            p(f"| {r.get('nodes', '?')} | {k} | {fmt(c.get('p50_ms'), 3)} | {fmt(c.get('p99_ms'), 3)} | "
              f"{fmt(c.get('p50_vs_put'))} | {fmt(c.get('p99_vs_put'))} |")
    p("")
    p("| nodes | pipelined GET/s | pipelined SESSION.KEEPALIVE/s | note |")
    p("| ---: | ---: | ---: | --- |")
    for r in w5rows:
        pp = r.get("pipelined_per_s") or {}
        p(f"| {r.get('nodes', '?')} | {rate(pp.get('GET'))} | {rate(pp.get('SESSION.KEEPALIVE'))} | {r.get('error', '')} |")
    p("")
w14 = get("fencelock", "W14")
w14rows = [r for r in rows if r.get("workload") == "W14" and "skipped" not in r]
if w14:
    p("## W14 — coordination primitives (fencelock, 3 nodes; one connection, one at a time)")
    p("")
    p(f"Each row alone, BENCH_SECONDS each. LATCH: per round a latch of {w14.get('parts', '?')} counts, "
      f"{w14.get('parts', '?')} sessions join, {w14.get('waiters', '?')} connections park LATCH.WAIT, "
      "the sessions count down: the time from sending the last COUNTDOWN to every waiter's answer "
      f"(release); round: create to delete. BARRIER: {w14.get('parts', '?')} members, each on a "
      "connection of its own, send BARRIER.ENTER at once: from the last one sent to every OK read "
      "(release), then BARRIER.LEAVE likewise (leave). SEM_PERMITS: SEM.ACQUIRE of "
      f"{w14.get('sem_permits', '?')} of {w14.get('sem_limit', '?')} permits + SEM.RELEASE. "
      "LOCK_REENTRANT: the reentrant holder's LOCK (count up, the same token) + UNLOCK (count down). "
      "LOCK_VALUE: LOCK ... VALUE + UNLOCK. LOCK_HISTORY: the read of the kept grants. Beside "
      "fencelock, the anchors' own recipes for the same primitive (the same counts): Redisson's "
      "RSemaphore.tryAcquire(3) and RCountDownLatch, Curator's InterProcessSemaphoreV2.acquire(3) "
      "and DistributedDoubleBarrier; etcd's Go client has none of them.")
    p("")
    p("| primitive | system | n | per s | p50 ms | p99 ms | also | note |")
    p("| --- | --- | ---: | ---: | ---: | ---: | --- | --- |")
    for k in ("INCR", "SEM_PERMITS", "LOCK_REENTRANT", "LOCK_VALUE", "LOCK_HISTORY", "LATCH", "BARRIER"):
        for r in w14rows:
            c = r.get(k)
            if c is None and r is not w14:
                continue
            c = c or {}
            also = ""
            if k == "LATCH":
                also = f"round p50 {fmt(c.get('round_p50_ms'), 3)} / p99 {fmt(c.get('round_p99_ms'), 3)} ms"
            if k == "BARRIER":
                also = f"leave p50 {fmt(c.get('leave_p50_ms'), 3)} / p99 {fmt(c.get('leave_p99_ms'), 3)} ms"
            s = r.get("driver")
            p(f"| {k} | {lab(s, 'W14', r)} | {c.get('n', 0)} | {rate(c.get('per_s'))} | {fmt(c.get('p50_ms'), 3)} | "
              f"{fmt(c.get('p99_ms'), 3)} | {also} | {r.get('error', '')} |")
    p("")
w6 = get("fencelock", "W6")
if w6 and "sessions" in w6:
    p("## W6 — sessions kept alive (fencelock, 3 nodes)")
    p("")
    ka = w6["keepalives"]
    cpu = w6.get("leader_cpu_s")
    p("| sessions | TTL ms | s | keepalives sent | target/s | keepalive p50 ms | p99 ms | sessions lost | other errors | "
      "max send lag ms | W1 pair p50 idle → loaded ms (ratio) | leader CPU µs / keepalive | leader peak RSS MiB |")
    p("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    p(f"| {w6['sessions']:,} | {w6['ttl_ms']} | {w6['seconds']} | {ka:,} | {w6['target_per_s']:,.0f} | "
      f"{w6['keepalive_p50_ms']:.3f} | {w6['keepalive_p99_ms']:.3f} | {w6['lost_sessions']} | {w6['errors']} | "
      f"{w6['max_lag_ms']:.1f} | {w6['w1_idle_p50_ms']:.3f} → {w6['w1_load_p50_ms']:.3f} ({w6['w1_p50_ratio']:.2f}) | "
      f"{(cpu * 1e6 / ka) if cpu is not None and ka else 0:.1f} | {w6.get('leader_hwm_kib', 0) / 1024:.0f} |")
    p("")
    p("The leader's CPU covers the whole W6 run (opening and closing the sessions, the W1 client) divided by the keepalives sent.")
    p("")
    if "terms_begun" in w6:
        p(f"Needless elections during W6 (Raft terms begun with no node killed: the highest term any node reports, "
          f"after minus before): **{w6['terms_begun']}**.")
        p("")
    if "nodes_cpu_s" in w6:
        el = w6.get("elapsed_s") or w6["seconds"]
        tot = sum(w6["nodes_cpu_s"]) + (w6.get("lockbench_cpu_s") or 0)
        p(f"Where the machine's CPU went (load average {w6.get('loadavg_before')} before, {w6.get('loadavg_after')} after): "
          f"nodes {' / '.join(f'{c:.1f}' for c in w6['nodes_cpu_s'])} s (leader: node {w6.get('leader')}), "
          f"lockbench {w6.get('lockbench_cpu_s')} s; together {tot:.1f} CPU-s in {el:.1f} s = "
          f"{tot / el:.2f} of the machine's {os.environ['MACHINE_NPROC']} CPUs. The leader issued "
          f"{w6['read_barriers']:,} read barriers ({w6['read_barriers'] / el:,.0f}/s, "
          f"{w6['reads'] / max(w6['read_barriers'], 1):.0f} reads each) among {w6['raft_entries']:,} Raft entries "
          f"({w6['raft_entries'] / el:,.0f}/s)"
          + (f"; the disk completed {w6['disk_writes']:,} writes ({w6['disk_writes'] / el:,.0f}/s)." if "disk_writes" in w6 else "."))
        p("")
w7 = get("fencelock", "W7")
if w7 and "opened" in w7:
    p("## W7 — connections (fencelock, 3 nodes)")
    p("")
    p("| connections asked | opened | refused | active (one GET in flight each) | active GETs/s | leader RSS before → after MiB | RSS per connection KiB | W1 pair p50 / p99 ms, idle | with the connections open | note |")
    p("| ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- | --- |")
    p(f"| {w7['conns']:,} | {w7['opened']:,} | {w7['refused']} | {w7['active']} | {w7['active_gets_per_s']:,.0f} | "
      f"{w7['rss0_kib'] / 1024:.1f} → {w7['rss1_kib'] / 1024:.1f} | {w7['rss_per_conn_bytes'] / 1024:.1f} | "
      f"{w7['w1_idle_p50_ms']:.3f} / {w7['w1_idle_p99_ms']:.3f} | {w7['w1_p50_ms']:.3f} / {w7['w1_p99_ms']:.3f} | {w7.get('error', '')} |")
    p("")
w8rows = [r for r in rows if r.get("workload") == "W8"]
if w8rows:
    import statistics
    p("## W8 — fail-over: kill -9 of the leader while 8 clients wait on one lock")
    p("")
    p("Time from the kill to the next grant acknowledged to any client; one kill per trial, the killed member restarted between trials. "
      "Redlock has no leader: the first of its five servers is killed (a majority stays). "
      "Redisson runs in its Sentinel mode on a primary, a replica and three Sentinels: the primary is killed. "
      "Calls that fail while the leader is down are retried (Java rows count them in errors; only no grant after the kill fails a trial).")
    p("")
    p("| system | trials ok | median ms | min ms | max ms | fencelock median / this | failed trials |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    med = {}
    for s in order:
        ok_ = [r["failover_ms"] for r in w8rows if r.get("driver") == s and r.get("failover_ms", -1) >= 0 and not r.get("error")]
        if ok_:
            med[s] = statistics.median(ok_)
    for s in order:
        rs = [r for r in w8rows if r.get("driver") == s]
        if not rs: continue
        ok_ = sorted(r["failover_ms"] for r in rs if r.get("failover_ms", -1) >= 0 and not r.get("error"))
        bad = [r.get("error", r.get("skipped", "?")) for r in rs if r not in [x for x in rs if x.get("failover_ms", -1) >= 0 and not x.get("error")]]
        if ok_:
            p(f"| {lab(s, 'W8')} | {len(ok_)} | {med[s]:.0f} | {ok_[0]:.0f} | {ok_[-1]:.0f} | {ratio(med.get('fencelock'), med[s])} | {len(bad)}{(': ' + bad[0]) if bad else ''} |")
        else:
            p(f"| {lab(s, 'W8')} | 0 | – | – | – | – | {len(bad)}{(': ' + bad[0]) if bad else ''} |")
    p("")
    fp = [r for r in w8rows if r.get("driver") == "fencelock" and ("detect_ms" in r or "parts_note" in r)]
    if fp:
        keys = ("detect_ms", "elect_ms", "ready_ms", "reconnect_ms")
        p("fencelock's fail-over in its parts (bench/w8_parts.py: the client's kill and grant instants joined to the nodes' log lines): "
          "detection = kill → a follower's candidacy (its election timeout ran out), election → the new leader, "
          "readiness → its first entry of the term applied (\"leader ready\"), reconnect → the next grant to a client. "
          "Each instant is late by at most the nodes' 5 ms tick.")
        p("")
        p("| trial | total ms | detection | election | readiness | reconnect | candidacies | terms | note |")
        p("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        def f1(v):
            return "–" if v is None else f"{v:.0f}"
        for r in fp:
            p(f"| {r.get('trial', '?')} | {r['failover_ms']:.0f} | " + " | ".join(f1(r.get(k)) for k in keys) +
              f" | {r.get('candidacies', '–')} | {r.get('terms', '–')} | {r.get('parts_note', '')} |")
        meds = [statistics.median([r[k] for r in fp if k in r]) if any(k in r for r in fp) else None for k in keys]
        tot = [r["failover_ms"] for r in fp if r.get("failover_ms", -1) >= 0]
        p(f"| median | {statistics.median(tot) if tot else 0:.0f} | " + " | ".join(f1(v) for v in meds) + " | | | |")
        p("")
w9rows = [r for r in rows if r.get("workload") == "W9"]
if w9rows:
    p("## W9 — read-write locks: readers and one writer on one lock")
    p("")
    p("Each reader loops LOCK (shared) → hold → UNLOCK; the writer takes the lock exclusively after a pause each time. "
      "Wait = call to grant. A system without a shared mode in its lock service runs its readers on its mutex (etcd over the JSON gateway: the v3lock mutex; Redis: its SET NX lock). "
      "etcd-go runs the read-write lock of etcd's own Go client, experimental/recipes.RWMutex (readers RLock, the writer Lock), and the same loop on concurrency.Mutex as its baseline. "
      "ZooKeeper through Curator takes InterProcessReadWriteLock's read and write locks, Redis through Redisson RReadWriteLock's. "
      "Writer timeouts count waits over 5 s (starvation); 'most readers holding' is seen client-side (grant answered .. UNLOCK sent).")
    p("")
    p("| system | readers | reader mode | hold ms | writer pause ms | reader grants/s | reader wait p50 / p99 ms | most readers holding | writer grants | writer wait p50 / p99 / max ms | writer timeouts | note |")
    p("| --- | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | --- | ---: | --- |")
    for r in w9rows:
        s = r.get("driver")
        if "reader_grants" not in r:
            p(f"| {lab(s, 'W9')} | – | – | – | – | – | – | – | – | – | – | {status(r)} |")
            continue
        note = "" if r.get("errors") == 0 else "error: " + r.get("error", "?")
        if r.get("reader_mode") == "exclusive" and s not in ("fencelock", "etcd-go"):
            note = ("no shared mode: readers take the mutex; " + note).rstrip("; ")
        p(f"| {lab(s, 'W9', r)} | {r['readers']} | {r['reader_mode']} | {r['hold_ms']} | {r['writer_pause_ms']} | "
          f"{rate(r['reader_grants_per_s'])} | {r['reader_wait_p50_ms']:.2f} / {r['reader_wait_p99_ms']:.2f} | "
          f"{r['max_readers_holding']} | {r['writer_grants']} | {r['writer_wait_p50_ms']:.2f} / {r['writer_wait_p99_ms']:.2f} / "
          f"{r['writer_wait_max_ms']:.2f} | {r['writer_timeouts']} | {note} |")
    p("")
    sh = [r for r in w9rows if r.get("driver") == "fencelock" and r.get("reader_mode") == "shared" and r.get("reader_grants")]
    if sh:
        for r in w9rows:
            if r is sh[0] or not r.get("reader_grants_per_s"): continue
            p(f"- fencelock shared reader grants/s / {r['driver']} ({r['reader_mode']} readers): "
              f"{sh[0]['reader_grants_per_s'] / r['reader_grants_per_s']:.2f}; writer wait p50 ratio: "
              f"{ratio(sh[0]['writer_wait_p50_ms'], r['writer_wait_p50_ms'])}")
        p("")
ins = get("fencelock", "INSTR")
if ins:
    p("## Instructions per LOCK+UNLOCK pair on the leader (a count, not a time)")
    p("")
    p("bench/instr.sh: a 3-node cluster, the leader under valgrind's callgrind, one W1 client for a fixed number of pairs; "
      "the leader's instructions (every thread) over the run, less its idle rate over the run's length, divided by the pairs. "
      "A loaded machine does not change it: compare it across builds (bench/ab.sh prints it for both binaries).")
    p("")
    if "per_pair" in ins:
        p("| pairs | instructions per pair | leader's instructions in all | idle instructions/s | s under callgrind |")
        p("| ---: | ---: | ---: | ---: | ---: |")
        p(f"| {ins['pairs']:,} | **{ins['per_pair']:,}** | {ins['instructions']:,} | {ins['idle_per_s']:,} | {ins['seconds']} |")
    else:
        p(f"not measured: {status(ins)}")
    p("")
w10rows = [r for r in rows if r.get("workload") == "W10" and r.get("driver") != "fencelock-sse"]
sserows = [r for r in rows if r.get("workload") == "W10" and r.get("driver") == "fencelock-sse"]
if w10rows:
    p("## W10 — watch: PUT acknowledged → event received, and fan-out")
    p("")
    p("Latency: one PUT at a time, each awaited by every watcher, the next one a gap (ms, in the table) later so that every watcher waits again; "
      "ack → receipt per watcher and event (negative when the event "
      "overtook the PUT's reply). Fan-out: 5× as many PUTs, 32 unanswered; events delivered per second in all = watchers × PUTs "
      "over the span from the first PUT sent to the last event received. fencelock: XREAD BLOCK on fencelock:events:<prefix> "
      "at the leader; etcd: v3 watch (JSON gateway, streaming) at the leader member.")
    p("")
    p("| system | watchers | gap ms | latency PUTs | ack → event p50 ms | p99 ms | max ms | PUT sent → event p50 / p99 ms | fan-out PUTs | events/s delivered | PUTs/s | under load p50 / p99 ms | missed | note |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | --- |")
    for r in w10rows:
        s = r.get("driver")
        a, b = r.get("latency"), r.get("fanout")
        if not a:
            p(f"| {lab(s, 'W10')} | – | – | – | – | – | – | – | – | – | – | – | – | {status(r)} |")
            continue
        p(f"| {lab(s, 'W10')} | {r['watchers']} | {a.get('gap_ms', 0)} | {a['puts']} | {a['p50_ms']:.2f} | {a['p99_ms']:.2f} | {a['max_ms']:.2f} | "
          f"{a.get('from_send_p50_ms', 0):.2f} / {a.get('from_send_p99_ms', 0):.2f} | "
          f"{b['puts']} | {rate(b['events_per_s'])} | {rate(b['puts_per_s'])} | {b['p50_ms']:.1f} / {b['p99_ms']:.1f} | "
          f"{a['missed'] + b['missed']} | {r.get('error', '')} |")
    p("")
    for r in w10rows:
        if r.get("driver") != "etcd" or not r.get("latency"): continue
        f = next((x for x in w10rows if x.get("driver") == "fencelock" and x.get("watchers") == r["watchers"] and x.get("latency")), None)
        if f:
            fl_, et = f["latency"], r["latency"]
            p(f"- {r['watchers']} watcher(s), fencelock / etcd: PUT sent → event p50 {pratio(fl_.get('from_send_p50_ms'), et.get('from_send_p50_ms'))}, "
              f"p99 {pratio(fl_.get('from_send_p99_ms'), et.get('from_send_p99_ms'))}; ack → event p50 {pratio(fl_['p50_ms'], et['p50_ms'])}, "
              f"p99 {pratio(fl_['p99_ms'], et['p99_ms'])}; fan-out events/s {ratio(f['fanout']['events_per_s'], r['fanout']['events_per_s'])}")
    p("")
if sserows:
    p("## W10 — the HTTP API's event stream beside XREAD (fencelock)")
    p("")
    p("W10's latency phase with two watchers of the same PUTs at the leader: one `XREAD BLOCK` on "
      "fencelock:events:<prefix> (RESP), one `GET /v1/events?prefix=` Server-Sent Events stream on the HTTP port "
      "(receipt: when its `id:` line arrived); PUT acknowledged → event received and PUT sent → event received.")
    p("")
    p("| watcher | PUTs | events | ack → event p50 ms | p99 ms | max ms | PUT sent → event p50 / p99 ms | missed | note |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |")
    for r in sserows:
        a = r.get("latency") or {}
        for kind, label in (("xread", "XREAD BLOCK (RESP)"), ("sse", "GET /v1/events (SSE)")):
            k = (r.get("by_kind") or {}).get(kind)
            if not k:
                p(f"| {label} | – | – | – | – | – | – | – | {status(r)} |")
                continue
            p(f"| {label} | {a.get('puts', 0)} | {k['events']} | {k['p50_ms']:.2f} | {k['p99_ms']:.2f} | {k['max_ms']:.2f} | "
              f"{k['from_send_p50_ms']:.2f} / {k['from_send_p99_ms']:.2f} | {k['missed']} | {r.get('error', '')} |")
    p("")
w10r = [r for r in rows if r.get("workload") == "W10R"]
if w10r:
    p("## W10 at equal offered loads: a fixed PUT rate")
    p("")
    p("The same offered load for every system: PUTs at a fixed rate for a fixed time, open loop (PUT i is due at i / rate whatever the "
      "answers' pace; the PUTs due are sent pipelined, at most 32 unanswered, every millisecond), every watcher of the prefix receiving "
      "each event. Delivery latency per watcher and event: from the PUT's acknowledgement, and from its due time (its commit and any "
      "queueing behind a system that cannot keep the rate included). Achieved = PUTs / the time to the last answer: below the rate, "
      "the system fell behind, and the due-time latency grows with the backlog.")
    p("")
    p("| system | PUTs/s offered | watchers | achieved PUTs/s | PUTs | ack → event p50 / p99 ms | due → event p50 / p99 ms | max ms | missed | note |")
    p("| --- | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | --- |")
    for r in sorted(w10r, key=lambda x: (x.get("rate", 0), x.get("watchers", 0), x.get("driver") != "fencelock")):
        s = r.get("driver")
        if "rate" not in r:
            p(f"| {lab(s, 'W10')} | – | – | – | – | – | – | – | – | {status(r)} |")
            continue
        p(f"| {lab(s, 'W10')} | {r['rate']:,} | {r['watchers']} | {rate(r['achieved_per_s'])} | {r['puts']:,} | "
          f"{r['p50_ms']:.2f} / {r['p99_ms']:.2f} | {r['from_due_p50_ms']:.2f} / {r['from_due_p99_ms']:.2f} | {r['max_ms']:.1f} | "
          f"{r['missed']} | {r.get('error', '')} |")
    p("")
    for r in w10r:
        if r.get("driver") != "etcd" or "rate" not in r: continue
        f = next((x for x in w10r if x.get("driver") == "fencelock" and x.get("rate") == r["rate"] and x.get("watchers") == r["watchers"] and "rate" in x), None)
        if f:
            p(f"- {r['rate']:,} PUTs/s, {r['watchers']} watcher(s), fencelock / etcd: due → event p50 "
              f"{pratio(f['from_due_p50_ms'], r['from_due_p50_ms'])}, p99 {pratio(f['from_due_p99_ms'], r['from_due_p99_ms'])}; "
              f"ack → event p50 {pratio(f['p50_ms'], r['p50_ms'])}, p99 {pratio(f['p99_ms'], r['p99_ms'])}")
    p("")
w11rows = [r for r in rows if r.get("workload") == "W11"]
if w11rows:
    p("## W11 — semaphores: clients on one semaphore")
    p("")
    p("Each client loops SEM.ACQUIRE (WAIT 5 s) → hold → SEM.RELEASE on one semaphore; a hand-off is a permit granted. "
      "Wait = call to grant. 'Most holding' is seen client-side (grant answered .. SEM.RELEASE sent), so it can only "
      "undercount what the server granted; it must never exceed the limit. fencelock (SEM.ACQUIRE), ZooKeeper through Curator's InterProcessSemaphoreV2, "
      "Redis through Redisson's RSemaphore (permits not tied to a session: a dead holder's permit is never returned). "
      "etcd has no semaphore (its contrib recipe was removed): "
      "etcd-go is a recipe on its Go client (bench/go/etcd.go: the Mutex recipe with N holders, a key per session, the first N by "
      "create revision hold, waiters watch for deletions).")
    p("")
    p("| system | clients | limit | hold ms | hand-offs/s | wait p50 / p99 ms | most holding | timeouts | note |")
    p("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |")
    for r in w11rows:
        s = r.get("driver")
        if "grants" not in r:
            p(f"| {lab(s, 'W11')} | – | – | – | – | – | – | – | {status(r)} |")
            continue
        p(f"| {lab(s, 'W11')} | {r['clients']} | {r['limit']} | {r['hold_ms']} | {rate(r['handoffs_per_s'])} | "
          f"{r['wait_p50_ms']:.2f} / {r['wait_p99_ms']:.2f} | {r['max_holding']} | {r['timeouts']} | {r.get('error', '')} |")
    p("")
w12rows = [r for r in rows if r.get("workload") == "W12"]
if w12rows:
    p("## W12 — election fail-over: the leader's session ended → observers see the new leader")
    p("")
    p("Each round: a fresh election, leader L elected, candidate C campaigning (blocked), observers watching; then L's "
      "session is ended from outside (fencelock: SESSION.CLOSE on another connection; etcd: L's lease revoked) and the "
      "time from that call to each observer seeing C lead is taken. fencelock: ELECT.CAMPAIGN ... WAIT and ELECT.OBSERVE "
      "AFTER rev WAIT at the leader; etcd: v3election campaign and observe (streaming) over the JSON gateway; etcd-go: "
      "concurrency.Election Campaign and Observe of etcd's Go client over gRPC, L's lease revoked by another client; "
      "ZooKeeper through Curator: LeaderLatch for L and C, each on a session of its own, observers list the latch's children with a watch "
      "(the lowest sequence number leads), L's session ended by closing its ZooKeeper handle (the server deletes its ephemeral latch node). "
      "'all seen' = the slowest observer of a round, over the rounds.")
    p("")
    p("| system | observers | rounds | observed | all seen p50 / p99 / max ms | per observer p50 / p99 ms | note |")
    p("| --- | ---: | ---: | ---: | --- | --- | --- |")
    for r in w12rows:
        s = r.get("driver")
        if "rounds" not in r:
            p(f"| {lab(s, 'W12')} | – | – | – | – | – | {status(r)} |")
            continue
        p(f"| {lab(s, 'W12')} | {r['observers']} | {r['rounds']} | {r['observed']} | "
          f"{r['all_seen_p50_ms']:.1f} / {r['all_seen_p99_ms']:.1f} / {r['all_seen_max_ms']:.1f} | "
          f"{r['observer_p50_ms']:.1f} / {r['observer_p99_ms']:.1f} | {r.get('error', '')} |")
    p("")
    f = next((r for r in w12rows if r.get("driver") == "fencelock" and r.get("observed")), None)
    for other, what in (("etcd", "etcd"), ("etcd-go", "etcd-go"), ("curator", "ZooKeeper (Curator LeaderLatch)")):
        e = next((r for r in w12rows if r.get("driver") == other and r.get("observed")), None)
        if f and e:
            p(f"- fencelock / {what}, all seen p50: {pratio(f['all_seen_p50_ms'], e['all_seen_p50_ms'])}, "
              f"p99: {pratio(f['all_seen_p99_ms'], e['all_seen_p99_ms'])}")
    p("")
w13rows = [r for r in rows if r.get("workload") == "W13"]
if w13rows:
    p("## W13 — multi-lock: clients on overlapping sets of k names")
    p("")
    p("A pool of 16 lock names n00..n15; each client's t-th set is the k names n[(7c + 3t + j) mod 16], j < k (c: the client), "
      "windows of k neighbours on a ring that move by 3 each turn, the clients' starting points spread, so that sets overlap more "
      "the larger k is (bench/README.md, W13). A set is acquired whole (waiting at most 5 s), held, released whole; "
      "sets/s counts whole sets acquired and released, the latency is one set's acquire + release time (the hold left out). "
      "fencelock: LOCK.MULTI (one request, one log entry, granted at the head of every name's FIFO) and, against it, LOCK of each name "
      "in sorted order by the same client; etcd-go: a concurrency.Mutex per name in sorted order; Redis through Redisson's "
      "RedissonMultiLock (one by one in the order given: sorted, each waiting up to the rest of the 5 s, all released on a miss); ZooKeeper through Curator's "
      "InterProcessMultiLock (InterProcessMutex per name in the order given: sorted). Ratios: fencelock's LOCK.MULTI row of the "
      "same k against each row (sets/s: > 1 fencelock is faster; p50: < 1 fencelock is faster).")
    p("")
    p("| system | k | clients | hold ms | sets/s | set p50 ms | p99 ms | max ms | timeouts | fencelock LOCK.MULTI sets/s / this | fencelock LOCK.MULTI p50 / this p50 | note |")
    p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    def w13key(r):
        return (r.get("k", 0), order.index(r["driver"]) if r.get("driver") in order else 99, r.get("way") != "multi")
    for r in sorted(w13rows, key=w13key):
        s = r.get("driver")
        if "sets" not in r:
            p(f"| {lab(s, 'W13', r)} | {r.get('k', '–')} | – | – | – | – | – | – | – | – | – | {status(r)} |")
            continue
        f = next((x for x in w13rows if x.get("driver") == "fencelock" and x.get("way") == "multi"
                  and x.get("k") == r["k"] and x.get("sets") and not x.get("errors")), None)
        note = "" if not r.get("errors") else "error: " + r.get("error", "?")
        p(f"| {lab(s, 'W13', r)} | {r['k']} | {r['clients']} | {r['hold_ms']} | {rate(r['sets_per_s'])} | {r['p50_ms']:.2f} | "
          f"{r['p99_ms']:.2f} | {r['max_ms']:.2f} | {r['timeouts']} | {ratio(f and f['sets_per_s'], r['sets_per_s'])} | "
          f"{pratio(f and f['p50_ms'], r['p50_ms'])} | {note} |")
    p("")
# The anchors through their own clients beside the project's drivers of the same servers.
pairs_ = [("etcd", "etcd-go"), ("redlock", "redsync"), ("zookeeper", "curator"), ("redis", "redisson"),
          ("redis", "redisson-fenced")]
cmp_rows = []
for c_, g_ in pairs_:
    for w, key, what in (("W1", "ops_per_s", "pairs/s"), ("W1", "p50_ms", "pair p50 ms"),
                         ("W2", "grants_per_s", "grants/s"), ("W2", "handoffs_per_s", "hand-offs/s"),
                         ("W2", "p50_ms", "wait p50 ms"), ("W3", "ops_per_s", "pairs/s"), ("W3", "p50_ms", "pair p50 ms")):
        a, b = get(c_, w), get(g_, w)
        if ok(a) and ok(b):
            f_ = (lambda v: f"{v:.3f}") if key.endswith("_ms") else rate
            cmp_rows.append(f"| {c_} → {g_} | {w} {what} | {f_(a[key])} | {f_(b[key])} | {ratio(b[key], a[key])} |")
    # W8 only where both ran on the same servers (Redisson's W8 is on a Sentinel set-up).
    w8c = [r["failover_ms"] for r in rows if r.get("workload") == "W8" and r.get("driver") == c_ and r.get("failover_ms", -1) >= 0 and not r.get("error")]
    w8g = [r["failover_ms"] for r in rows if r.get("workload") == "W8" and r.get("driver") == g_ and r.get("failover_ms", -1) >= 0 and not r.get("error")]
    if w8c and w8g:
        import statistics
        a, b = statistics.median(w8c), statistics.median(w8g)
        cmp_rows.append(f"| {c_} → {g_} | W8 fail-over median ms | {a:,.1f} | {b:,.1f} | {ratio(b, a)} |")
if cmp_rows:
    p("## The anchors through their own clients beside the project's C drivers")
    p("")
    p("The same servers and workloads in the same run, driven first by the project's C driver (etcd: the JSON gateway over libcurl; "
      "Redlock and Redis: hiredis, SET NX with 1-5 ms retries; ZooKeeper: its C client) and then by the client library their users run "
      "(etcd: go.etcd.io/etcd/client/v3 concurrency over gRPC; Redlock: redsync with its defaults, 50-250 ms retries; "
      "ZooKeeper: Apache Curator's InterProcessMutex; Redis: Redisson's RLock and RFencedLock, waiters woken by pub/sub). "
      "Own client / C driver > 1: the own client is faster (rates) or slower (latencies).")
    p("")
    p("| servers: C driver → own client | measure | C driver | own client | own client / C driver |")
    p("| --- | --- | ---: | ---: | ---: |")
    for l in cmp_rows:
        p(l)
    p("")
p("Raw results (one JSON line per workload, from lockbench, gobench and the Java clients' JVMs, bench/java):")
p("")
p("```")
for r in rows:
    p(json.dumps(r, separators=(",", ":")))
p("```")
print("\n".join(out))
PY
}

# The data disk's commit latency, for W3's Little's-law ceiling (report): 4 KiB appended and
# fdatasync'ed, 300 times, in a file under build/bench, before any system runs (so nothing else
# writes). A Raft commit costs at least one such write on the leader and, in parallel, one on a
# follower; a LOCK + UNLOCK pair two commits.
fsync_probe() {
  mkdir -p build/bench
  python3 - build/bench/fsync-probe.dat <<'PY'
import json, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
buf, lat = b"\xa5" * 4096, []
try:
    for i in range(330):
        t0 = time.perf_counter()
        os.write(fd, buf)
        os.fdatasync(fd)
        if i >= 30:  # the first ones allocate the file's first blocks
            lat.append((time.perf_counter() - t0) * 1000.0)
finally:
    os.close(fd)
    os.unlink(sys.argv[1])
lat.sort()
print(json.dumps({"driver": "disk", "workload": "fsync", "n": len(lat),
                  "p50_ms": round(lat[len(lat) // 2], 4), "p90_ms": round(lat[len(lat) * 9 // 10], 4)}))
PY
}
# The share of CPU time not idle between two /proc/stat "cpu" lines ($1, $2), 0.00-1.00.
cpu_busy() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    na = split(a, x); split(b, y); tot = 0
    for (i = 2; i <= na; i++) tot += y[i] - x[i]
    idle = (y[5] - x[5]) + (y[6] - x[6])  # idle + iowait
    printf "%.2f", (tot > 0 ? 1 - idle / tot : 0) }'
}
if [ "$report_only" != 1 ] && [ "${BENCH_W123:-1}" = 1 ]; then
  line=$(fsync_probe) || line='{"driver":"disk","workload":"fsync","errors":1,"error":"probe failed"}'
  echo "== the data disk: $line"
  echo "$line" >>"$json"
  # W3's floor on this machine (bench/w3floor.c): W3's pairs through three processes that do
  # only what any three-node, synced Raft lock service must (loopback TCP, group commit, one
  # direct RWF_DSYNC write in flight per node), then the same without the sync. Before any
  # system starts, for W3's section of the report.
  for mode in "" --no-sync; do
    line=$(timeout $((secs + 60)) build/release/bench/w3floor --seconds "$secs" $mode 2>>"$raw/w3floor.stderr") ||
      line="{\"driver\":\"w3floor\",\"workload\":\"W3${mode:+-nosync}\",\"errors\":1,\"error\":\"w3floor failed\"}"
    echo "== W3's floor on this machine${mode:+ (no sync)}: $line"
    echo "$line" >>"$json"
  done
fi

[ "$report_only" = 1 ] && [ -f "$raw/clients.json" ] || client_versions
[ "$report_only" = 1 ] && systems=()
for s in "${systems[@]}"; do
  script="bench/servers/$s.sh"
  if [ ! -x "$script" ]; then
    echo "== $s: SKIPPED (no server script $script)"
    for w in W1 W2 W3; do note "$s" "$w" "no server script"; done
    continue
  fi
  # The list is read whole before it is searched: `--drivers | grep -q` closed the pipe at the
  # first match, and a driver listed before the last one (etcd-go) then died of SIGPIPE writing
  # the next line, which pipefail reported as "not built" in some runs.
  built_drivers=$("$(runner "$s")" --drivers 2>/dev/null) || built_drivers=""
  if ! grep -qx -- "$s" <<<"$built_drivers"; then
    echo "== $s: SKIPPED (driver not built: bench/drv_$s.c missing, or $GB not built: scripts/gobench.sh)"
    for w in W1 W2 W3; do note "$s" "$w" "driver not built"; done
    continue
  fi
  echo "== $s: starting servers (empty data)"
  # Every system starts empty: data left by an earlier run (fencelock's W4 holds 1M locks in
  # sessions with a 1 h TTL, restarted at full length by each new leader) would make W1-W3
  # run against a 50 MB state with a snapshot every few seconds.
  "$script" stop >/dev/null 2>&1 || true
  rm -rf "build/bench/$s"
  running=$s
  if ! eps=$(timeout 120 "$script" start | tail -n 1) || [ -z "$eps" ]; then
    echo "== $s: SKIPPED (servers did not start; see build/bench/$s/)"
    for w in W1 W2 W3; do note "$s" "$w" "servers did not start"; done
    "$script" stop >/dev/null 2>&1
    running=""
    continue
  fi
  echo "   endpoints $eps"
  for w in W1 W2 W3; do
    [ "${BENCH_W123:-1}" = 1 ] || break
    cpu0=$(head -n 1 /proc/stat)
    line=$(timeout $((secs + 30)) "$(runner "$s")" --driver "$s" --endpoints "$eps" --workload "$w" \
      --seconds "$secs" --pairs "$pairs")
    rc=$?
    [ -n "$line" ] || line=$(printf '{"driver":"%s","workload":"%s","errors":1,"error":"lockbench exit %d"}' "$s" "$w" "$rc")
    # how busy the machine's CPUs were over the run (servers, client and all): whether a
    # workload is bound by the CPUs or by the commit latency
    line="${line%\}},\"cpu_busy\":$(cpu_busy "$cpu0" "$(head -n 1 /proc/stat)")}"
    echo "   $line"
    echo "$line" >>"$json"
  done
  if [ "$s" = fencelock ] && [ "$w5" = 1 ]; then
    echo "  W5: reads vs PUT, 3 nodes"
    w5_fencelock "$eps" 3
  fi
  if [ "$s" = fencelock ] && [ "$w6" = 1 ]; then
    w6_fencelock "$eps"
  fi
  if [ "$s" = fencelock ] && [ "$w7" = 1 ]; then
    w7_fencelock "$eps"
  fi
  case "$s" in fencelock | etcd | etcd-go | zookeeper | redlock | redsync) [ "$w8" = 1 ] && w8_system "$s" "$eps" ;; esac
  [ "$w9" = 1 ] && w9_system "$s" "$eps"
  case "$s" in fencelock | etcd) [ "$w10" = 1 ] && w10_system "$s" "$eps" ;; esac
  case "$s" in fencelock | etcd-go) [ "$w11" = 1 ] && w11_system "$s" "$eps" ;; esac
  case "$s" in fencelock | etcd | etcd-go) [ "$w12" = 1 ] && w12_system "$s" "$eps" ;; esac
  case "$s" in fencelock | etcd-go) [ "$w13" = 1 ] && w13_system "$s" "$eps" ;; esac
  [ "$s" = fencelock ] && [ "$w14" = 1 ] && w14_system "$s" "$eps"
  if [ "$java_on" = 1 ]; then # the same servers through the Java clients, in the same run
    case "$s" in
    zookeeper) java_set curator "$s" "$eps" ;;
    redis)
      java_set redisson "$s" "$eps"
      java_set redisson-fenced "$s" "$eps"
      [ "$w8" = 1 ] && java_w8_sentinel
      ;;
    esac
  fi
  if [ "$s" = fencelock ] && [ "$w4" = 1 ]; then
    w4_fencelock "$eps"
  fi
  echo "== $s: stopping servers"
  "$script" stop >/dev/null 2>&1
  running=""
  if [ "$s" = fencelock ] && [ "$instr" = 1 ]; then
    echo "== fencelock: instructions per LOCK+UNLOCK pair on the leader (bench/instr.sh, callgrind)"
    line=$(timeout 900 bench/instr.sh "${BIN:-build/release/fencelockd}" "$instr_pairs" 2>>"$raw/instr.stderr")
    [ -n "$line" ] || line='{"driver":"fencelock","workload":"INSTR","errors":1,"error":"bench/instr.sh failed"}'
    echo "   $line"
    echo "$line" >>"$json"
  fi
  if [ "$s" = fencelock ] && [ "$w5" = 1 ]; then
    echo "== fencelock: W5 on one node (make run's setup)"
    rm -rf build/bench/fencelock
    running=fencelock
    if eps=$(FL_NODES=1 timeout 120 "$script" start | tail -n 1) && [ -n "$eps" ]; then
      w5_fencelock "$eps" 1
    else
      note fencelock W5 "1-node server did not start"
    fi
    FL_NODES=1 "$script" stop >/dev/null 2>&1
    running=""
  fi
done

date=$(date -u +%Y-%m-%d)
out=${BENCH_OUT:-bench/results/RESULTS-$date.md}
report "$json" >"$out.tmp" && mv "$out.tmp" "$out" ||
  { echo "report failed" >&2; rm -f "$out.tmp"; exit 1; }
if [ "${BENCH_LATEST:-1}" = 1 ]; then
  cp "$out" bench/results/latest.md
  echo "wrote $out and bench/results/latest.md"
else
  echo "wrote $out (latest.md left alone)"
fi
