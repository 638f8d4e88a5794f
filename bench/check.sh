#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/check.sh — a self-check of lockbench's W5's HTTP rows (LOCK.INFO beside GET
# /v1/locks/{name}, linearizable and ?stale: every one answered), W9 (read-write locks), W10
# (watch; fencelock also with one XREAD and one GET /v1/events watcher: every event to each), W11
# (semaphores), W12 (election fail-over) and W13 (multi-lock), run by
# `make bench-check` on the sanitizer build (build/asan: fencelockd, bench/lockbench and
# bench/w3floor; LB, BIN and W3F override). W3's floor (bench/w3floor.c) runs first. It judges what the workloads report, never how fast: every run ends without
# an error; W9's shared readers overlap (some moment with more than one reader holding, with a
# 20 ms hold) while exclusive readers never do, and neither the writer nor a reader timed out
# (a 5 s wait: starvation); W10's watchers received every PUT's event (missed 0, and events =
# PUTs x watchers in both phases, and at a fixed offered rate); W11 never has more than `limit` clients holding a permit
# (and more than one at some moment, with a 20 ms hold), nobody timed out; W12 observed every
# round (each observer saw the candidate lead, with a newer token); W13 (8 clients on overlapping
# sets of 4 names, LOCK.MULTI and one by one) acquired whole sets and none timed out; W14 (the
# coordination primitives) has every row measured and well formed; no
# sanitizer report from lockbench or the servers. The same for etcd when Debian's etcd is installed (W9 on its
# mutex, W10 on its watch, W12 on its election).
# The Go drivers (gobench, bench/go; GB overrides build/release/bench/gobench), when built: etcd
# through its Go client (etcd-go: W1-W3, W9 with the client's RWMutex, W11 on the semaphore
# recipe, W12, W13 with its Mutexes in sorted order, W8 with a member killed) and Redlock through redsync (W1-W3, W8 with a server
# killed), each a tiny load: every row is well formed (the fields lockbench's row of the same
# workload has, the same workload, a "client" label with the library's version), without an
# error, and W9/W11/W12 keep the rules above. Then the Java clients (build/java, bench/java:
# JAR overrides): ZooKeeper through Curator and Redis through Redisson (RLock, RFencedLock) run
# a tiny load of each of their workloads (W1-W3, W9, W11, W13, W12 for Curator; W8 once each, Redisson
# on its Sentinel set-up) in one JVM per client; every row must be well formed (the fields the
# report reads, the client's label, no error) and W9/W11/W12/fenced tokens must hold the same
# properties as above (no figure is judged). BENCH_CHECK_JAVA_ONLY=1 runs the Java part alone
# (no lockbench needed). Prints "ok NAME" / "not ok NAME: the JSON line", then
# "tests: N passed, N failed"; exit 1 on any failure. Short and bounded: each lockbench run is
# bounded by its counts and --seconds and killed after 120 s; the servers it starts (the
# bench's own ports and build/bench/NAME/ data) are stopped on exit.
set -uo pipefail
cd "$(dirname "$0")/.."
LB=${LB:-build/asan/bench/lockbench}
GB=${GB:-build/release/bench/gobench}
export BIN=${BIN:-build/asan/fencelockd}
pass=0 fail=0 running=""
only_java=${BENCH_CHECK_JAVA_ONLY:-0} # 1: the Java clients' checks alone (no lockbench needed)
[ "$only_java" = 1 ] || { [ -x "$LB" ] && [ -x "$BIN" ]; } ||
  { echo "no $LB or $BIN: make SAN=1 $LB $BIN" >&2; exit 1; }
cleanup() { [ -z "$running" ] || "bench/servers/$running.sh" stop >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM PIPE

# check NAME PYTHON-CONDITION JSON-LINE: the condition over r (the parsed line).
check() {
  if python3 -c 'import json, sys; r = json.loads(sys.argv[2]); sys.exit(0 if eval(sys.argv[1]) else 1)' \
    "$2" "$3" 2>/dev/null; then
    echo "ok $1"
    pass=$((pass + 1))
  else
    echo "not ok $1: ${3:-no output}"
    fail=$((fail + 1))
  fi
}

mkdir -p build/bench
errlog=build/bench/check-lockbench.stderr
: >"$errlog"
lb() { timeout 120 "$LB" "$@" 2>>"$errlog" | tail -n 1; }
gb() { timeout 120 "$GB" "$@" 2>>"$errlog" | tail -n 1; }

# Sanitizer reports of lockbench (its stderr) or of the servers (their logs) fail the check.
sanitizers() { # system
  local f bad=""
  for f in "$errlog" build/bench/"$1"/*.log build/bench/"$1"/*/*.log; do
    [ -f "$f" ] && grep -qE 'Sanitizer|runtime error:' "$f" && bad+=" $f"
  done
  if [ -z "$bad" ]; then echo "ok $1: no sanitizer report"; pass=$((pass + 1))
  else echo "not ok $1: sanitizer report in$bad"; fail=$((fail + 1)); fi
}

start() { # system -> endpoints (empty data); called in $(...): the caller sets `running`
  "bench/servers/$1.sh" stop >/dev/null 2>&1 || true
  rm -rf "build/bench/$1"
  timeout 120 "bench/servers/$1.sh" start | tail -n 1
}

ran='r.get("errors") == 0 and "error" not in r'
# The ZooKeeper leader's pid (bench/servers/zookeeper.sh's servers), or nothing.
leader_pid_zk() {
  local i h
  for i in 1 2 3; do
    h=$( (exec 3<>"/dev/tcp/127.0.0.1/$((12180 + i))" && printf srvr >&3 && timeout 2 cat <&3) 2>/dev/null)
    case "$h" in *'Mode: leader'*) cat "build/bench/zookeeper/$i/pid"; return ;; esac
  done
}
w9_common="$ran"' and r["reader_grants"] > 0 and r["writer_grants"] > 0 and r["writer_timeouts"] == 0 and r["reader_timeouts"] == 0'
w10_ok="$ran"' and r["latency"]["puts"] > 0 and r["fanout"]["puts"] > 0 and r["dropped"] == 0
and all(r[p]["missed"] == 0 and r[p]["events"] == r[p]["puts"] * r["watchers"] for p in ("latency", "fanout"))'
w10_ok=${w10_ok//$'\n'/ }
# W10's fencelock-sse (one XREAD and one GET /v1/events watcher of the same PUTs): W10's rule,
# and the latency phase per kind: each kind got every PUT's event.
w10_sse_ok="$w10_ok"' and r["driver"] == "fencelock-sse" and sorted(r["by_kind"]) == ["sse", "xread"]
and all(k["missed"] == 0 and k["events"] == r["latency"]["puts"] for k in r["by_kind"].values())'
w10_sse_ok=${w10_sse_ok//$'\n'/ }
# W5's rows of LOCK.INFO and of GET /v1/locks/{name} (linearizable and ?stale): every one
# answered (a non-200 is an error of the run), each command's count the same.
w5_http_ok="$ran"' and all(r[k]["n"] == r["LOCK.INFO"]["n"] > 0 and r[k]["p50_ms"] > 0
for k in ("LOCK.INFO", "HTTP /v1/locks/{name}", "HTTP /v1/locks/{name}?stale"))'
w5_http_ok=${w5_http_ok//$'\n'/ }
# W10 at a fixed offered rate (--rate): the PUTs it asked for, every event delivered, no figure judged
w10r_ok="$ran"' and r["workload"] == "W10R" and r["rate"] == 200 and r["puts"] == 200 and r["dropped"] == 0 and r["missed"] == 0 and r["events"] == r["puts"] * r["watchers"] and r["achieved_per_s"] > 0'
w11_ok="$ran"' and r["grants"] > 0 and r["timeouts"] == 0 and 1 < r["max_holding"] <= r["limit"] == 4'
w12_ok="$ran"' and r["rounds"] == 3 and r["observed"] == 3 and r["token_newer"] == 3'
# W13 (multi-lock, 8 clients on overlapping sets of 4 of 16 names): a well-formed row of the way
# asked, whole sets acquired, none timed out (5 s: starvation).
w13_ok() { # way
  echo "$ran"' and r["workload"] == "W13" and r["way"] == "'"$1"'" and r["k"] == 4 and r["pool"] == 16 and r["clients"] == 8
and all(isinstance(r.get(x), (int, float)) for x in ("seconds", "sets", "sets_per_s", "p50_ms", "p99_ms", "max_ms"))
and r["sets"] > 0 and r["timeouts"] == 0 and 0 < r["p50_ms"] <= r["p99_ms"] <= r["max_ms"]' | tr '\n' ' '
}
w13_args="--workload W13 --k 4 --clients 8 --hold 1 --seconds 2 --pairs 400"
# W14 (the coordination primitives, fencelock): every row of the JSON line present and well
# formed, each measured at least once (n > 0, 0 <= p50 <= p99), no error.
w14_ok="$ran"' and r["workload"] == "W14" and all(isinstance(r.get(k), dict) and r[k]["n"] > 0
and 0 <= r[k]["p50_ms"] <= r[k]["p99_ms"] and r[k]["per_s"] > 0 for k in ("INCR", "SEM_PERMITS",
"LOCK_REENTRANT", "LOCK_VALUE", "LOCK_HISTORY", "LATCH", "BARRIER"))
and 0 <= r["LATCH"]["round_p50_ms"] <= r["LATCH"]["round_p99_ms"]
and 0 <= r["BARRIER"]["leave_p50_ms"] <= r["BARRIER"]["leave_p99_ms"]'
w14_ok=${w14_ok//$'\n'/ }

w11w12() { # system endpoints
  local s=$1 eps=$2 line
  if [ "$s" = fencelock ]; then
    line=$(lb --driver "$s" --endpoints "$eps" --workload W11 --seconds 3 --pairs 2000 --hold 20 --limit 4)
    check "$s W11: at most limit permits held, more than one at once, nobody starves" "$w11_ok" "$line"
  fi
  line=$(lb --driver "$s" --endpoints "$eps" --workload W12 --rounds 3 --seconds 60)
  check "$s W12: every round's fail-over seen by every observer" "$w12_ok" "$line"
  if [ "$s" = fencelock ]; then
    local way
    for way in multi sequential; do
      # shellcheck disable=SC2086 # w13_args: several words
      line=$(lb --driver "$s" --endpoints "$eps" $w13_args --way "$way")
      check "$s W13 $way: whole sets of 4 taken by 8 clients, nobody starves" "$(w13_ok "$way")" "$line"
    done
    line=$(lb --driver "$s" --endpoints "$eps" --workload W14 --seconds 1 --pairs 50)
    check "$s W14: every primitive's row measured and well formed" "$w14_ok" "$line"
  fi
}

w9w10() { # system endpoints
  local s=$1 eps=$2 line n
  line=$(lb --driver "$s" --endpoints "$eps" --workload W9 --seconds 3 --pairs 3000 --hold 20)
  if [ "$s" = fencelock ]; then
    check "$s W9: shared readers overlap, nobody starves" \
      "$w9_common"' and r["reader_mode"] == "shared" and r["max_readers_holding"] > 1' "$line"
    line=$(lb --driver "$s" --endpoints "$eps" --workload W9 --seconds 3 --pairs 3000 --hold 20 \
      --exclusive-readers)
  fi
  check "$s W9: exclusive readers never overlap, nobody starves" \
    "$w9_common"' and r["reader_mode"] == "exclusive" and r["max_readers_holding"] == 1' "$line"
  for n in 1 7; do
    line=$(lb --driver "$s" --endpoints "$eps" --workload W10 --clients "$n" --pairs 40 --seconds 30)
    check "$s W10 with $n watcher(s): every event delivered" "$w10_ok" "$line"
    line=$(lb --driver "$s" --endpoints "$eps" --workload W10 --clients "$n" --rate 200 --seconds 1)
    check "$s W10 at 200 PUTs/s with $n watcher(s): every event delivered" "$w10r_ok" "$line"
  done
  if [ "$s" = fencelock ]; then
    line=$(lb --driver fencelock-sse --endpoints "$eps" --workload W10 --clients 2 --pairs 40 --seconds 30)
    check "$s W10 SSE beside XREAD: every event delivered to each kind" "$w10_sse_ok" "$line"
    line=$(lb --driver "$s" --endpoints "$eps" --workload W5 --pairs 30 --seconds 10)
    check "$s W5: LOCK.INFO and its HTTP twin (linearizable and ?stale) answered" "$w5_http_ok" "$line"
  fi
}

# W3's floor on this machine (bench/w3floor.c, no server of ours): a short run each way; every
# LOCK was granted and every UNLOCK matched its token (errors 0), and the leader applied each
# pair's two commands (at most one pair per client still in flight when counted).
W3F=${W3F:-build/asan/bench/w3floor}
w3f_ok="$ran"' and r["driver"] == "w3floor" and r["ops"] > 0 and r["entries"] > 0
and 2 * r["ops"] <= r["commands"] <= 2 * (r["ops"] + r["clients"]) and r["commands_per_entry"] >= 1
and 0 < r["p50_ms"] <= r["p99_ms"] <= r["max_ms"]'
w3f_ok=${w3f_ok//$'\n'/ }
if [ "$only_java" = 0 ] && [ -x "$W3F" ]; then
  for mode in "" --no-sync; do
    line=$(timeout 120 "$W3F" --seconds 1 --dir build/bench/w3floor-check $mode 2>>"$errlog" | tail -n 1)
    check "w3floor W3${mode:+ $mode}: every pair granted, released and applied" \
      "$w3f_ok"' and r["workload"] == "W3'"${mode:+-nosync}"'"' "$line"
  done
fi

if [ "$only_java" = 0 ]; then
running=fencelock
eps=$(start fencelock) && [ -n "$eps" ] && w9w10 fencelock "$eps" && w11w12 fencelock "$eps" ||
  check "fencelock servers start" "False" ""
bench/servers/fencelock.sh stop >/dev/null 2>&1
running=""
sanitizers fencelock
: >"$errlog"
if command -v etcd >/dev/null; then
  running=etcd
  eps=$(start etcd) && [ -n "$eps" ] && w9w10 etcd "$eps" && w11w12 etcd "$eps" || check "etcd servers start" "False" ""
  bench/servers/etcd.sh stop >/dev/null 2>&1
  running=""
  sanitizers etcd
else
  echo "# etcd not installed (scripts/deps.sh bench): its checks not run"
fi
# same_keys NAME GO-LINE C-LINE: the Go row has the C row's fields (and "client"), no others.
same_keys() {
  if python3 -c 'import json, sys
g, c = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.exit(0 if set(g) == set(c) | {"client"} and g["workload"] == c["workload"] else 1)' "$2" "$3" 2>/dev/null; then
    echo "ok $1"
    pass=$((pass + 1))
  else
    echo "not ok $1: ${2:-no output} vs ${3:-no output}"
    fail=$((fail + 1))
  fi
}

labelled='__import__("re").search(r" v[0-9]+[.][0-9]+[.][0-9]+", r.get("client", ""))'
w123_ok="$ran"' and r["ops"] > 0 and '"$labelled"
# W8: a call that fails while the member is down is counted in "errors" and retried (the
# workload's rule, a "note" names the first); only an "error" (no grant after the kill) fails.
w8_ok='"error" not in r and isinstance(r.get("errors"), int) and r["failover_ms"] >= 0 and '"$labelled"

# go_rows SYSTEM C-DRIVER ENDPOINTS KILL-CMD: W1-W3 of gobench's SYSTEM (each against lockbench's
# row of C-DRIVER on the same servers), the rest for etcd-go, W8 last (it kills a server).
go_rows() {
  local s=$1 c=$2 eps=$3 kill=$4 w line cline
  for w in W1 W2 W3; do
    line=$(gb --driver "$s" --endpoints "$eps" --workload "$w" --seconds 1 --pairs 200 --warmup 20)
    check "$s $w: a row without errors, labelled with its client" "$w123_ok" "$line"
    cline=$(lb --driver "$c" --endpoints "$eps" --workload "$w" --seconds 1 --pairs 50 --warmup 5)
    same_keys "$s $w: the fields of lockbench's $c row" "$line" "$cline"
  done
  if [ "$s" = etcd-go ]; then
    line=$(gb --driver "$s" --endpoints "$eps" --workload W9 --seconds 3 --pairs 300 --hold 20)
    check "$s W9: shared readers (recipes.RWMutex) overlap, nobody starves" \
      "$w9_common"' and r["reader_mode"] == "shared" and r["max_readers_holding"] > 1' "$line"
    line=$(gb --driver "$s" --endpoints "$eps" --workload W9 --seconds 2 --pairs 200 --hold 20 --exclusive-readers)
    check "$s W9: exclusive readers never overlap, nobody starves" \
      "$w9_common"' and r["reader_mode"] == "exclusive" and r["max_readers_holding"] == 1' "$line"
    line=$(gb --driver "$s" --endpoints "$eps" --workload W11 --seconds 3 --pairs 300 --hold 20 --limit 4)
    check "$s W11: at most limit permits held, more than one at once, nobody starves" "$w11_ok" "$line"
    line=$(gb --driver "$s" --endpoints "$eps" --workload W12 --rounds 3 --seconds 60)
    check "$s W12: every round's fail-over seen by every observer" "$w12_ok" "$line"
    # shellcheck disable=SC2086 # w13_args: several words
    line=$(gb --driver "$s" --endpoints "$eps" $w13_args --way sequential)
    check "$s W13 sequential (concurrency.Mutex per name): whole sets, nobody starves" \
      "$(w13_ok sequential)"' and '"$labelled" "$line"
  fi
  line=$(gb --driver "$s" --endpoints "$eps" --workload W8 --kill-cmd "$kill")
  check "$s W8: a grant after the kill, a row labelled with its client" "$w8_ok" "$line"
}

if [ -x "$GB" ] && command -v etcd >/dev/null; then
  running=etcd-go
  eps=$(start etcd-go) && [ -n "$eps" ] &&
    go_rows etcd-go etcd "$eps" "kill -9 \$(cat build/bench/etcd-go/1/pid)" ||
    check "etcd-go servers start" "False" ""
  bench/servers/etcd-go.sh stop >/dev/null 2>&1
  running=""
else
  echo "# $GB or etcd not built/installed (scripts/gobench.sh, scripts/deps.sh bench): etcd-go not checked"
fi
if [ -x "$GB" ] && command -v redis-server >/dev/null; then
  running=redsync
  eps=$(start redsync) && [ -n "$eps" ] &&
    go_rows redsync redlock "$eps" "kill -9 \$(cat build/bench/redsync/16380.pid)" ||
    check "redsync servers start" "False" ""
  bench/servers/redsync.sh stop >/dev/null 2>&1
  running=""
else
  echo "# $GB or redis-server not built/installed: redsync not checked"
fi
fi # the lockbench and gobench checks

# ---- the Java clients ----
JAR=${JAR:-build/java/fencelock-bench.jar}
# Every row names its client library with a version (x.y.z), as the Go rows do.
jlabelled='__import__("re").search(r"[0-9]+[.][0-9]+[.][0-9]+", r.get("client") or "")'
jrow="$jlabelled"' and "error" not in r and r.get("errors") == 0'
jw1="$jrow"' and all(isinstance(r.get(k), (int, float)) for k in ("clients", "seconds", "ops", "ops_per_s", "p50_ms", "p99_ms", "max_ms", "timeouts")) and r["ops"] > 0'
jw2="$jw1"' and all(isinstance(r.get(k), (int, float)) for k in ("grants_per_s", "handoffs_per_s", "fair_min", "fair_max", "fairness"))'
# W8: calls that fail while the leader is down are counted in "errors" and retried (a "note"
# says the first); only an "error" (no grant after the kill) fails the row.
jw8="$jlabelled"' and "error" not in r and isinstance(r.get("errors"), int) and r["workload"] == "W8" and r["clients"] == 8 and r["failover_ms"] > 0'
jw9="$jrow"' and '"${w9_common#"$ran and "}"' and r["reader_mode"] == "shared" and r["max_readers_holding"] > 1'
jw11="$jrow"' and '"${w11_ok#"$ran and "}"
jw12="$jrow"' and '"${w12_ok#"$ran and "}"
jw13="$jrow"' and '"$(w13_ok multi)"
# W14: the rows the client has a recipe for (keys), each measured and well formed as lockbench's.
jw14() { # row keys...
  local k cond="$jrow"' and r["workload"] == "W14"'
  for k in "$@"; do
    cond+=' and r["'"$k"'"]["n"] > 0 and 0 <= r["'"$k"'"]["p50_ms"] <= r["'"$k"'"]["p99_ms"] and r["'"$k"'"]["per_s"] > 0'
  done
  echo "$cond"
}
# jvm SYSTEM ENDPOINTS [Bench args] <<< commands: the JVM's JSON lines, in order.
jvm() {
  local js=$1 eps=$2
  shift 2
  timeout 300 java -Xmx512m -cp "$JAR:build/java/lib/*" fencelock.bench.Bench --system "$js" \
    --endpoints "$eps" "$@" 2>>build/bench/check-java.stderr
}
# jcheck SYSTEM LINES "NAME|CONDITION"...: line i against condition i.
jcheck() {
  local js=$1 lines=$2 i=0 spec line
  shift 2
  for spec in "$@"; do
    i=$((i + 1))
    line=$(sed -n "${i}p" <<<"$lines")
    check "$js ${spec%%|*}" "${spec#*|}"' and r["driver"] == "'"$js"'"' "$line"
  done
}
if [ -f "$JAR" ] && command -v java >/dev/null; then
  : >build/bench/check-java.stderr
  running=zookeeper
  if eps=$(start zookeeper) && [ -n "$eps" ]; then
    # W8 last: its kill leaves one ZooKeeper server down.
    lines=$(printf '%s\n' "--workload W1 --seconds 1 --pairs 50" "--workload W2 --seconds 1 --pairs 50" \
      "--workload W3 --seconds 1 --pairs 50" "--workload W9 --seconds 3 --pairs 300 --hold 20" \
      "--workload W11 --seconds 3 --pairs 200 --hold 20 --limit 4" "--workload W12 --rounds 3 --seconds 60" \
      "$w13_args --way multi" "--workload W14 --seconds 1 --pairs 20" \
      "--workload W8 --kill-cmd kill -9 $(leader_pid_zk)" quit | jvm curator "$eps")
    jcheck curator "$lines" "W1 row well formed|$jw1" "W2 row well formed|$jw2" "W3 row well formed|$jw1" \
      "W9 InterProcessReadWriteLock: readers overlap, nobody starves|$jw9" \
      "W11 InterProcessSemaphoreV2: at most limit held, more than one at once|$jw11" \
      "W12 LeaderLatch: every round seen by every observer|$jw12" \
      "W13 InterProcessMultiLock: whole sets, nobody starves|$jw13" \
      "W14 InterProcessSemaphoreV2.acquire(qty), DistributedDoubleBarrier: rows well formed|$(jw14 SEM_PERMITS BARRIER)" \
      "W8 fail-over row well formed|$jw8"
  else
    check "zookeeper servers start" "False" ""
  fi
  bench/servers/zookeeper.sh stop >/dev/null 2>&1
  running=redis
  if eps=$(start redis) && [ -n "$eps" ]; then
    lines=$(printf '%s\n' "--workload W1 --seconds 1 --pairs 50" "--workload W2 --seconds 1 --pairs 50" \
      "--workload W3 --seconds 1 --pairs 50" "--workload W9 --seconds 3 --pairs 300 --hold 20" \
      "--workload W11 --seconds 3 --pairs 200 --hold 20 --limit 4" "$w13_args --way multi" \
      "--workload W14 --seconds 1 --pairs 20" quit | jvm redisson "$eps")
    jcheck redisson "$lines" "W1 row well formed|$jw1" "W2 row well formed|$jw2" "W3 row well formed|$jw1" \
      "W9 RReadWriteLock: readers overlap, nobody starves|$jw9" \
      "W11 RSemaphore: at most limit held, more than one at once|$jw11" \
      "W13 RedissonMultiLock: whole sets, nobody starves|$jw13" \
      "W14 RSemaphore.tryAcquire(n), RCountDownLatch: rows well formed|$(jw14 SEM_PERMITS LATCH)"
    lines=$(printf '%s\n' "--workload W1 --seconds 1 --pairs 50" "--workload W2 --seconds 1 --pairs 50" \
      "--workload W3 --seconds 1 --pairs 50" quit | jvm redisson-fenced "$eps")
    fenced=' and r["tokens_increasing"] is True'
    jcheck redisson-fenced "$lines" "W1 row well formed, tokens increase|$jw1$fenced" \
      "W2 row well formed, tokens increase|$jw2$fenced" "W3 row well formed, tokens increase|$jw1$fenced"
  else
    check "redis server starts" "False" ""
  fi
  bench/servers/redis.sh stop >/dev/null 2>&1
  running=redis-sentinel
  if eps=$(start redis-sentinel) && [ -n "$eps" ]; then
    line=$(printf '%s\n' "--workload W8 --kill-cmd kill -9 $(cat "build/bench/redis-sentinel/$(bench/servers/redis-sentinel.sh primary).pid")" quit |
      jvm redisson "$eps" --sentinel-master bench)
    jcheck redisson "$line" "W8 (Sentinel mode) fail-over row well formed|$jw8"
  else
    check "redis-sentinel set-up starts" "False" ""
  fi
  bench/servers/redis-sentinel.sh stop >/dev/null 2>&1
  running=""
else
  echo "# no $JAR or java (make bench-check builds it): the Java clients' checks not run"
fi
echo "tests: $pass passed, $fail failed"
[ "$fail" = 0 ]
