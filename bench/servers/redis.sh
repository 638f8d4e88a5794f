#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start or stop the single Redis server of the lock benchmark ("SET NX PX" locks), on loopback.
#   bench/servers/redis.sh start|stop|status
# Owns build/bench/redis/: the pid file <port>.pid and the log <port>.log (no data is written).
# Recipe: Debian's redis-server as users run it for locks: defaults (no fsync, no replica), with
# persistence off (--save '' --appendonly no), port 16379 on 127.0.0.1.
# `start` is idempotent and returns once the server answers PING; it then prints the endpoint.
# `stop` sends SIGTERM, waits up to 10 s, then SIGKILL.
# bench/servers/redlock.sh runs this script for its five servers with REDIS_BENCH_TOP and
# REDIS_BENCH_PORTS set (the state directory and the space-separated ports).
set -euo pipefail
cd "$(dirname "$0")/../.."
top=${REDIS_BENCH_TOP:-build/bench/redis}
read -r -a ports <<<"${REDIS_BENCH_PORTS:-16379}"
pidf() { echo "$top/$1.pid"; }
alive() {
  local pid
  [ -f "$(pidf "$1")" ] && pid=$(cat "$(pidf "$1")") && kill -0 "$pid" 2>/dev/null &&
    ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null
}
pong() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'PING\r\n' >&3 && timeout 1 head -c 7 <&3) \
    2>/dev/null | grep -q PONG
}
endpoints() {
  local e="" p
  for p in "${ports[@]}"; do e+="${e:+,}127.0.0.1:$p"; done
  echo "$e"
}
p=""
ok=0
case "${1:-}" in
start)
  command -v redis-server >/dev/null ||
    { echo "redis-server not installed: run scripts/deps.sh bench" >&2; exit 1; }
  mkdir -p "$top"
  for p in "${ports[@]}"; do
    alive "$p" && continue
    # Not daemonized: the pid we record is the server's own.
    setsid redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$PWD/$top" --logfile "$PWD/$top/$p.log" --daemonize no \
      </dev/null >/dev/null 2>&1 &
    echo $! >"$(pidf "$p")"
  done
  for _ in $(seq 1 100); do
    ok=0
    for p in "${ports[@]}"; do pong "$p" && ok=$((ok + 1)); done
    if [ "$ok" -eq "${#ports[@]}" ]; then endpoints; exit 0; fi
    for p in "${ports[@]}"; do
      alive "$p" || { echo "redis-server $p died: see $top/$p.log" >&2; exit 1; }
    done
    sleep 0.1
  done
  echo "redis-server not answering after 10 s: see $top/*.log" >&2
  exit 1
  ;;
stop)
  for p in "${ports[@]}"; do alive "$p" && kill "$(cat "$(pidf "$p")")" 2>/dev/null || true; done
  for p in "${ports[@]}"; do
    for _ in $(seq 1 100); do alive "$p" || break; sleep 0.1; done
    alive "$p" && kill -9 "$(cat "$(pidf "$p")")" 2>/dev/null || true
    rm -f "$(pidf "$p")"
  done
  ;;
status)
  for p in "${ports[@]}"; do
    if alive "$p"; then echo "redis $p: pid $(cat "$(pidf "$p")")"; else echo "redis $p: not running"; fi
  done
  ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
