#!/usr/bin/env bash
# Start, stop or inspect a local N-node fencelock cluster on loopback.
#   scripts/cluster.sh start N    (N = 1..9; default 3)
#   scripts/cluster.sh stop  [N]
#   scripts/cluster.sh status [N]
# Node i listens for clients on 7480+10*(i-1), Raft on +1, HTTP on +2; data in ./var/node<i>,
# log in ./var/node<i>.log, pid in ./var/node<i>.pid. BIN overrides the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-status}
n=${2:-3}
BIN=${BIN:-build/release/fencelockd}
[[ "$n" =~ ^[1-9]$ ]] || { echo "N must be 1..9" >&2; exit 2; }
port() { echo $((7480 + 10 * ($1 - 1) + $2)); }
members() {
  local m="" i
  for i in $(seq 1 "$n"); do m+="${m:+,}$i=127.0.0.1:$(port "$i" 1)"; done
  echo "$m"
}
# Running and not a zombie (a killed node whose parent never reaps it still answers kill -0).
alive() {
  local pid
  [ -f "var/node$1.pid" ] && pid=$(cat "var/node$1.pid") && kill -0 "$pid" 2>/dev/null &&
    ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null
}
case "$cmd" in
start)
  [ -x "$BIN" ] || { echo "no $BIN: run make first" >&2; exit 1; }
  mkdir -p var
  for i in $(seq 1 "$n"); do
    if alive "$i"; then echo "node $i already running (pid $(cat "var/node$i.pid"))"; continue; fi
    "$BIN" --id "$i" --data-dir "var/node$i" --initial-cluster "$(members)" \
      --listen "127.0.0.1:$(port "$i" 0)" --http-listen "127.0.0.1:$(port "$i" 2)" \
      >>"var/node$i.log" 2>&1 &
    echo $! >"var/node$i.pid"
    echo "node $i: pid $!, clients 127.0.0.1:$(port "$i" 0), log var/node$i.log"
  done
  ;;
stop)
  for i in $(seq 1 "$n"); do
    if alive "$i"; then kill "$(cat "var/node$i.pid")"; echo "node $i stopped"; fi
    rm -f "var/node$i.pid"
  done
  ;;
status)
  for i in $(seq 1 "$n"); do
    if alive "$i"; then
      role=$( (exec 3<>"/dev/tcp/127.0.0.1/$(port "$i" 2)" &&
               printf 'GET /health HTTP/1.0\r\n\r\n' >&3 && timeout 2 cat <&3) 2>/dev/null |
             grep -o '"role":"[a-z]*"' || true)
      echo "node $i: pid $(cat "var/node$i.pid") ${role:-role:unknown}"
    else
      echo "node $i: not running"
    fi
  done
  ;;
*) echo "usage: $0 start|stop|status [N]" >&2; exit 2 ;;
esac
