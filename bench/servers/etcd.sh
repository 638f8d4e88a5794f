#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start or stop the 3-member etcd 3.4 cluster the lock benchmark runs against, on loopback.
#   bench/servers/etcd.sh start|stop|status
# Owns build/bench/etcd/: per member N (1..3) the data directory N/data, the log N/etcd.log and
# the pid file N/pid.
# Recipe: Debian's `etcd` binary, member eN serving clients on http://127.0.0.1:12379/12389/12399
# and peers on http://127.0.0.1:12380/12390/12400, static bootstrap (--initial-cluster, token
# fencelock-bench). etcd defaults otherwise (fsync of the WAL on every commit, 100 ms heartbeat,
# 1000 ms election timeout), so the figures are those users get.
# ETCD_BENCH_TOP moves the state directory (bench/servers/etcd-go.sh: the same cluster on the
# same ports for the Go client's rows, started empty in a directory of its own).
# `start` is idempotent (running members are left alone; a member with data restarts from it)
# and returns once `etcdctl endpoint health` (API v3) passes on all three endpoints; it then
# prints the client endpoints. `stop` sends SIGTERM to one member after the other, waiting up to
# 10 s for each before SIGKILL.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=${ETCD_BENCH_TOP:-build/bench/etcd}
n=3
cport() { echo $((12369 + 10 * $1)); }
pport() { echo $((12370 + 10 * $1)); }
endpoints() {
  local e="" i
  for i in $(seq 1 "$n"); do e+="${e:+,}127.0.0.1:$(cport "$i")"; done
  echo "$e"
}
cluster() {
  local c="" i
  for i in $(seq 1 "$n"); do c+="${c:+,}e$i=http://127.0.0.1:$(pport "$i")"; done
  echo "$c"
}
# Running and not a zombie.
alive() {
  local pid
  [ -f "$top/$1/pid" ] && pid=$(cat "$top/$1/pid") && kill -0 "$pid" 2>/dev/null &&
    ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null
}
healthy() {
  ETCDCTL_API=3 etcdctl --endpoints="$(endpoints)" --dial-timeout=1s --command-timeout=2s \
    endpoint health >/dev/null 2>&1
}
case "${1:-}" in
start)
  command -v etcd >/dev/null && command -v etcdctl >/dev/null ||
    { echo "etcd not installed: run scripts/deps.sh bench" >&2; exit 1; }
  for i in $(seq 1 "$n"); do
    alive "$i" && continue
    d="$top/$i"
    mkdir -p "$d"
    state=new
    [ -d "$d/data/member" ] && state=existing
    setsid env -u ETCD_DATA_DIR -u ETCD_NAME etcd --name "e$i" --data-dir "$d/data" \
      --listen-client-urls "http://127.0.0.1:$(cport "$i")" \
      --advertise-client-urls "http://127.0.0.1:$(cport "$i")" \
      --listen-peer-urls "http://127.0.0.1:$(pport "$i")" \
      --initial-advertise-peer-urls "http://127.0.0.1:$(pport "$i")" \
      --initial-cluster "$(cluster)" --initial-cluster-token fencelock-bench \
      --initial-cluster-state "$state" --logger zap --log-outputs stderr \
      >>"$d/etcd.log" 2>&1 </dev/null &
    echo $! >"$d/pid"
  done
  for _ in $(seq 1 60); do
    if healthy; then endpoints; exit 0; fi
    for i in $(seq 1 "$n"); do
      alive "$i" || { echo "etcd $i died: see $top/$i/etcd.log" >&2; exit 1; }
    done
    sleep 0.5
  done
  echo "etcd cluster not healthy after 30 s: see $top/*/etcd.log" >&2
  exit 1
  ;;
stop)
  # One at a time: a leader hands leadership to a live member on SIGTERM (about 0.1 s); stopped
  # all at once, the last leader waits for a transfer that cannot happen (about 7 s).
  for i in $(seq 1 "$n"); do
    alive "$i" && kill "$(cat "$top/$i/pid")" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$i" || break; sleep 0.1; done
    alive "$i" && kill -9 "$(cat "$top/$i/pid")" 2>/dev/null || true
    rm -f "$top/$i/pid"
  done
  ;;
status)
  for i in $(seq 1 "$n"); do
    if alive "$i"; then echo "etcd $i: pid $(cat "$top/$i/pid")"; else echo "etcd $i: not running"; fi
  done
  ETCDCTL_API=3 etcdctl --endpoints="$(endpoints)" --dial-timeout=1s endpoint status -w table \
    2>/dev/null || true
  ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
