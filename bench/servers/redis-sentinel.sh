#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start or stop the Redis set-up with fail-over that W8 (kill -9 of the primary) runs Redisson
# against, on loopback: a primary and one replica (asynchronous replication, as Redis has), and
# three Sentinels watching them under the name "bench".
#   bench/servers/redis-sentinel.sh start|stop|status|primary
# Owns build/bench/redis-sentinel/: per instance (by port) <port>.pid, <port>.log, and each
# Sentinel's config <port>.conf (Sentinel rewrites it as it learns the set-up).
# Recipe: Debian's redis-server as redis.sh runs it (persistence off: --save '' --appendonly no;
# no fsync), data instances on 16390 (first primary) and 16391; Sentinels (redis-server
# --sentinel) on 16395-16397, quorum 2, down-after-milliseconds 5000 (Redis's documented
# example; the default is 30 s), failover-timeout 60000. `start` is idempotent: an instance that
# is not running is started as a replica of the primary the Sentinels name (the first start:
# 16390 primary, 16391 its replica); it returns once the Sentinels agree on the primary, each
# knows the other two, and the primary has a replica online; it then prints the Sentinels'
# endpoints. `primary` prints the current primary's port. `stop` sends SIGTERM, waits up to
# 10 s, then SIGKILL. A killed primary comes back empty and is made a replica by the Sentinels.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=build/bench/redis-sentinel
data=(16390 16391)
sent=(16395 16396 16397)
pidf() { echo "$top/$1.pid"; }
alive() {
  local pid
  [ -f "$(pidf "$1")" ] && pid=$(cat "$(pidf "$1")") && kill -0 "$pid" 2>/dev/null &&
    ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null
}
cli() { timeout 2 redis-cli -h 127.0.0.1 -p "$@" 2>/dev/null || true; }
# The primary's port as Sentinel $1 names it, or nothing.
primary_of() { cli "$1" SENTINEL get-master-addr-by-name bench | sed -n 2p; }
primary() {
  local s p
  for s in "${sent[@]}"; do
    p=$(primary_of "$s")
    [ -n "$p" ] && { echo "$p"; return 0; }
  done
  return 0
}
endpoints() {
  local e="" p
  for p in "${sent[@]}"; do e+="${e:+,}127.0.0.1:$p"; done
  echo "$e"
}
start_data() { # port primary-port (empty: start as the primary)
  local p=$1 m=$2
  local role=()
  [ -n "$m" ] && [ "$m" != "$p" ] && role=(--replicaof 127.0.0.1 "$m")
  setsid redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$PWD/$top" --logfile "$PWD/$top/$p.log" --daemonize no "${role[@]}" \
    </dev/null >/dev/null 2>&1 &
  echo $! >"$(pidf "$p")"
}
start_sentinel() { # port
  local p=$1 f="$top/$1.conf"
  [ -f "$f" ] || printf '%s\n' "port $p" "bind 127.0.0.1" "dir $PWD/$top" \
    "sentinel monitor bench 127.0.0.1 ${data[0]} 2" \
    "sentinel down-after-milliseconds bench 5000" \
    "sentinel failover-timeout bench 60000" \
    "sentinel parallel-syncs bench 1" >"$f"
  setsid redis-server "$PWD/$f" --sentinel --daemonize no --logfile "$PWD/$top/$p.log" \
    </dev/null >/dev/null 2>&1 &
  echo $! >"$(pidf "$p")"
}
# Ready: every Sentinel names primary $1 and knows 2 others and the replica; $1 has a replica
# online.
ready() {
  local s m=$1 info
  for s in "${sent[@]}"; do
    [ "$(primary_of "$s")" = "$m" ] || return 1
    info=$(cli "$s" SENTINEL master bench)
    grep -A1 -x 'num-other-sentinels' <<<"$info" | tail -n 1 | grep -qx 2 || return 1
    grep -A1 -x 'num-slaves' <<<"$info" | tail -n 1 | grep -qx 1 || return 1
  done
  cli "$m" INFO replication | grep -q '^slave0:.*state=online'
}
case "${1:-}" in
start)
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
    { echo "redis-server/redis-cli not installed: run scripts/deps.sh bench" >&2; exit 1; }
  mkdir -p "$top"
  m=$(primary)
  for p in "${data[@]}"; do
    alive "$p" && continue
    start_data "$p" "${m:-$([ "$p" = "${data[0]}" ] || echo "${data[0]}")}"
  done
  for p in "${sent[@]}"; do alive "$p" || start_sentinel "$p"; done
  for _ in $(seq 1 300); do
    m=$(primary)
    if [ -n "$m" ] && ready "$m"; then endpoints; exit 0; fi
    for p in "${data[@]}" "${sent[@]}"; do
      alive "$p" || { echo "redis $p died: see $top/$p.log" >&2; exit 1; }
    done
    sleep 0.2
  done
  echo "redis-sentinel set-up not ready after 60 s: see $top/*.log" >&2
  exit 1
  ;;
primary) primary ;;
stop)
  for p in "${sent[@]}" "${data[@]}"; do alive "$p" && kill "$(cat "$(pidf "$p")")" 2>/dev/null || true; done
  for p in "${sent[@]}" "${data[@]}"; do
    for _ in $(seq 1 100); do alive "$p" || break; sleep 0.1; done
    alive "$p" && kill -9 "$(cat "$(pidf "$p")")" 2>/dev/null || true
    rm -f "$(pidf "$p")"
  done
  ;;
status)
  for p in "${data[@]}" "${sent[@]}"; do
    if alive "$p"; then echo "redis $p: pid $(cat "$(pidf "$p")")"; else echo "redis $p: not running"; fi
  done
  echo "primary: $(primary)"
  ;;
*) echo "usage: $0 start|stop|status|primary" >&2; exit 2 ;;
esac
