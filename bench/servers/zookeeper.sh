#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start or stop the 3-server ZooKeeper 3.8 ensemble the lock benchmark runs against, on loopback.
#   bench/servers/zookeeper.sh start|stop|status
# Owns build/bench/zookeeper/: per server N (1..3) a generated N/zoo.cfg, the data directory
# N/data (with its myid file), the log N/server.log and the pid file N/pid.
# Recipe: Debian's `zookeeper` package has no per-instance launcher we can use, so each server
# is started by hand as zkServer.sh does: java -cp zookeeper.jar (its manifest lists the other
# jars) org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg, with slf4j-simple for logs
# (to the log file) and a modest heap (-Xmx256m). Server N serves clients on 127.0.0.1:1218N,
# quorum on 127.0.0.1:1288(7+N), elections on 127.0.0.1:1388(7+N); the admin server is off and
# the four-letter words srvr/ruok/mntr are allowed. ZooKeeper defaults otherwise (tickTime 2000,
# forceSync on, so every write is fsynced), except maxClientCnxns=0: the benchmark opens many
# sessions from the one loopback address and the default cap of 60 per IP would refuse them.
# `start` is idempotent (running servers are left alone) and returns once all three answer
# `srvr` with a Mode and one of them is the leader; it then prints the client endpoints.
# `stop` sends SIGTERM, waits up to 10 s, then SIGKILL. Data is kept across restarts.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=build/bench/zookeeper
n=3
heap=${ZK_HEAP:-256m}
cport() { echo $((12180 + $1)); }
endpoints() {
  local e="" i
  for i in $(seq 1 "$n"); do e+="${e:+,}127.0.0.1:$(cport "$i")"; done
  echo "$e"
}
# Running and not a zombie.
alive() {
  local pid
  [ -f "$top/$1/pid" ] && pid=$(cat "$top/$1/pid") && kill -0 "$pid" 2>/dev/null &&
    ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null
}
# The reply to a four-letter word, or nothing.
fourletter() {
  (exec 3<>"/dev/tcp/127.0.0.1/$(cport "$1")" && printf '%s' "$2" >&3 && timeout 2 cat <&3) \
    2>/dev/null || true
}
mode() { fourletter "$1" srvr | sed -n 's/^Mode: //p'; }
writecfg() {
  local i=$1 d="$top/$1" j
  mkdir -p "$d/data"
  echo "$i" >"$d/data/myid"
  {
    echo "tickTime=2000"
    echo "initLimit=10"
    echo "syncLimit=5"
    echo "dataDir=$PWD/$d/data"
    echo "clientPort=$(cport "$i")"
    echo "clientPortAddress=127.0.0.1"
    echo "maxClientCnxns=0"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=srvr,ruok,mntr"
    for j in $(seq 1 "$n"); do
      echo "server.$j=127.0.0.1:$((12887 + j)):$((13887 + j))"
    done
  } >"$d/zoo.cfg"
}
case "${1:-}" in
start)
  command -v java >/dev/null && [ -f /usr/share/java/zookeeper.jar ] ||
    { echo "zookeeper not installed: run scripts/deps.sh bench" >&2; exit 1; }
  for i in $(seq 1 "$n"); do
    alive "$i" && continue
    writecfg "$i"
    setsid java "-Xmx$heap" -Xms32m -XX:+UseSerialGC -Dzookeeper.jmx.log4j.disable=true \
      -Dorg.slf4j.simpleLogger.showDateTime=true \
      -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$top/$i/zoo.cfg" \
      >>"$top/$i/server.log" 2>&1 </dev/null &
    echo $! >"$top/$i/pid"
  done
  for _ in $(seq 1 120); do
    ok=0 leader=0
    for i in $(seq 1 "$n"); do
      m=$(mode "$i")
      case "$m" in leader) ok=$((ok + 1)); leader=1 ;; follower) ok=$((ok + 1)) ;; esac
    done
    if [ "$ok" -eq "$n" ] && [ "$leader" -eq 1 ]; then endpoints; exit 0; fi
    for i in $(seq 1 "$n"); do
      alive "$i" || { echo "zookeeper $i died: see $top/$i/server.log" >&2; exit 1; }
    done
    sleep 0.5
  done
  echo "zookeeper ensemble not ready after 60 s: see $top/*/server.log" >&2
  exit 1
  ;;
stop)
  for i in $(seq 1 "$n"); do
    alive "$i" && kill "$(cat "$top/$i/pid")" 2>/dev/null || true
  done
  for i in $(seq 1 "$n"); do
    for _ in $(seq 1 100); do alive "$i" || break; sleep 0.1; done
    alive "$i" && kill -9 "$(cat "$top/$i/pid")" 2>/dev/null || true
    rm -f "$top/$i/pid"
  done
  ;;
status)
  for i in $(seq 1 "$n"); do
    if alive "$i"; then
      echo "zookeeper $i: pid $(cat "$top/$i/pid") mode $(mode "$i")"
    else
      echo "zookeeper $i: not running"
    fi
  done
  ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
