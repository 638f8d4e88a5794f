#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start or stop the 3-node fencelock cluster of the lock benchmark, on loopback.
#   bench/servers/fencelock.sh start|stop|status|pids
# Owns build/bench/fencelock/: per node N (1..3) the data directory nodeN, the log nodeN.log
# and the pid file nodeN.pid.
# Recipe: the release build (build/release/fencelockd; BIN overrides), as shipped: fsync on
# (libraft's O_DIRECT log writes), default settings. Node N serves clients on
# 127.0.0.1:17480+10*(N-1), Raft on +1, HTTP (/health, /metrics) on +2.
# `start` is idempotent (running nodes are left alone; a node with data restarts from it) and
# returns once a leader reports ready (/health "ok" with role leader) and every node answers
# /health; it then prints the client endpoints. `stop` sends SIGTERM, waits up to 10 s, then
# SIGKILL. `pids` prints the running nodes' pids, one per line (for W4's RSS figures).
# FL_NODES=1 (for start and stop alike) runs a single node instead: W5's one-node figures.
# FL_ARGS adds flags to the nodes this `start` starts (W4: --snapshot-threshold 2 on one node).
# BENCH_PEER_TLS=1: mutual TLS on the Raft port (--peer-tls-cert/-key/-ca) with a CA and one
# node certificate (EC P-256) made by the openssl command in $top/pki on first use.
# FL_BASE_PORT moves the ports (default 17480), e.g. beside another run on the same machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=build/bench/fencelock
n=${FL_NODES:-3}
BIN=${BIN:-build/release/fencelockd}
base=${FL_BASE_PORT:-17480}
port() { echo $((base + 10 * ($1 - 1) + $2)); }
# The --peer-tls-* flags (BENCH_PEER_TLS=1), making the certificates once.
peer_tls() {
  [ "${BENCH_PEER_TLS:-0}" = 1 ] || return 0
  local d=$top/pki ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  if [ ! -f "$d/node.pem" ]; then
    mkdir -p "$d"
    openssl req -x509 "${ec[@]}" -keyout "$d/ca.key" -out "$d/ca.pem" -days 30 \
      -subj "/CN=bench CA" >/dev/null 2>&1
    openssl req "${ec[@]}" -keyout "$d/node.key" -out "$d/node.csr" -subj "/CN=bench node" \
      >/dev/null 2>&1
    openssl x509 -req -in "$d/node.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
      -out "$d/node.pem" -days 30 >/dev/null 2>&1
  fi
  echo "--peer-tls-cert $d/node.pem --peer-tls-key $d/node.key --peer-tls-ca $d/ca.pem"
}
members() {
  local m="" i
  for i in $(seq 1 "$n"); do m+="${m:+,}$i=127.0.0.1:$(port "$i" 1)"; done
  echo "$m"
}
endpoints() {
  local e="" i
  for i in $(seq 1 "$n"); do e+="${e:+,}127.0.0.1:$(port "$i" 0)"; done
  echo "$e"
}
# Running and not a zombie.
alive() {
  local pid
  [ -f "$top/node$1.pid" ] && pid=$(cat "$top/node$1.pid") && kill -0 "$pid" 2>/dev/null &&
    ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null
}
health() {
  (exec 3<>"/dev/tcp/127.0.0.1/$(port "$1" 2)" && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 &&
    timeout 2 cat <&3) 2>/dev/null | grep '^{' || true
}
case "${1:-}" in
start)
  [ -x "$BIN" ] || { echo "no $BIN: run make SAN=0 $BIN first" >&2; exit 1; }
  mkdir -p "$top"
  for i in $(seq 1 "$n"); do
    alive "$i" && continue
    setsid "$BIN" --id "$i" --data-dir "$top/node$i" --initial-cluster "$(members)" \
      --listen "127.0.0.1:$(port "$i" 0)" --raft-listen "127.0.0.1:$(port "$i" 1)" \
      --http-listen "127.0.0.1:$(port "$i" 2)" $(peer_tls) ${FL_ARGS:-} \
      >>"$top/node$i.log" 2>&1 </dev/null &
    echo $! >"$top/node$i.pid"
  done
  for _ in $(seq 1 200); do
    ok=0 leader=0
    for i in $(seq 1 "$n"); do
      h=$(health "$i")
      case "$h" in *'"status":"ok"'*) ok=$((ok + 1)) ;; esac
      case "$h" in *'"status":"ok","role":"leader"'*) leader=1 ;; esac
    done
    if [ "$ok" -eq "$n" ] && [ "$leader" -eq 1 ]; then endpoints; exit 0; fi
    for i in $(seq 1 "$n"); do
      alive "$i" || { echo "fencelockd $i died: see $top/node$i.log" >&2; exit 1; }
    done
    sleep 0.1
  done
  echo "fencelock cluster has no ready leader after 20 s: see $top/node*.log" >&2
  exit 1
  ;;
stop)
  for i in $(seq 1 "$n"); do
    alive "$i" && kill "$(cat "$top/node$i.pid")" 2>/dev/null || true
  done
  for i in $(seq 1 "$n"); do
    for _ in $(seq 1 100); do alive "$i" || break; sleep 0.1; done
    alive "$i" && kill -9 "$(cat "$top/node$i.pid")" 2>/dev/null || true
    rm -f "$top/node$i.pid"
  done
  ;;
status)
  for i in $(seq 1 "$n"); do
    if alive "$i"; then
      echo "node $i: pid $(cat "$top/node$i.pid") $(health "$i")"
    else
      echo "node $i: not running"
    fi
  done
  ;;
pids)
  for i in $(seq 1 "$n"); do alive "$i" && cat "$top/node$i.pid"; done
  ;;
*) echo "usage: $0 start|stop|status|pids" >&2; exit 2 ;;
esac
