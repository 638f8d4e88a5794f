#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start, stop or inspect a local N-node fencelock cluster on loopback.
#   scripts/cluster.sh [--base-port P] start N    (N = 1..9; default 3)
#   scripts/cluster.sh [--base-port P] stop  [N]
#   scripts/cluster.sh [--base-port P] status [N]
# Node i listens for clients on P+10*(i-1), Raft on +1, HTTP on +2; P is --base-port, else
# $BASE_PORT, else 7480. Data in $DATA_ROOT/node<i> (log node<i>.log, pid node<i>.pid), where
# DATA_ROOT defaults to ./var for the base port 7480 and ./var/port<P> for any other, so two
# clusters on different ports never share a data directory. BIN overrides the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: $0 [--base-port P] start|stop|status [N]" >&2; exit 2; }
base=${BASE_PORT:-7480}
args=()
while [ $# -gt 0 ]; do
  case "$1" in
  --base-port) [ $# -ge 2 ] || usage; base=$2; shift 2 ;;
  --base-port=*) base=${1#--base-port=}; shift ;;
  -h | --help) usage ;;
  *) args+=("$1"); shift ;;
  esac
done
cmd=${args[0]:-status}
n=${args[1]:-3}
BIN=${BIN:-build/release/fencelockd}
[[ "$n" =~ ^[1-9]$ ]] || { echo "N must be 1..9" >&2; exit 2; }
# The highest port used is base + 10*(N-1) + 2, for the largest N.
[[ "$base" =~ ^[0-9]+$ ]] && [ "$base" -ge 1024 ] && [ "$base" -le 65440 ] ||
  { echo "base port must be a number from 1024 to 65440 (got '$base')" >&2; exit 2; }
if [ "$base" = 7480 ]; then DATA_ROOT=${DATA_ROOT:-var}; else DATA_ROOT=${DATA_ROOT:-var/port$base}; fi
port() { echo $((base + 10 * ($1 - 1) + $2)); }
members() {
  local m="" i
  for i in $(seq 1 "$n"); do m+="${m:+,}$i=127.0.0.1:$(port "$i" 1)"; done
  echo "$m"
}
# Running and not a zombie (a killed node whose parent never reaps it still answers kill -0).
alive() {
  local pid
  [ -f "$DATA_ROOT/node$1.pid" ] && pid=$(cat "$DATA_ROOT/node$1.pid") && kill -0 "$pid" 2>/dev/null &&
    ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null
}
case "$cmd" in
start)
  [ -x "$BIN" ] || { echo "no $BIN: run make first" >&2; exit 1; }
  mkdir -p "$DATA_ROOT"
  for i in $(seq 1 "$n"); do
    if alive "$i"; then echo "node $i already running (pid $(cat "$DATA_ROOT/node$i.pid"))"; continue; fi
    "$BIN" --id "$i" --data-dir "$DATA_ROOT/node$i" --initial-cluster "$(members)" \
      --listen "127.0.0.1:$(port "$i" 0)" \
      --raft-listen "127.0.0.1:$(port "$i" 1)" --http-listen "127.0.0.1:$(port "$i" 2)" \
      >>"$DATA_ROOT/node$i.log" 2>&1 &
    echo $! >"$DATA_ROOT/node$i.pid"
    echo "node $i: pid $!, clients 127.0.0.1:$(port "$i" 0), log $DATA_ROOT/node$i.log"
  done
  ;;
stop)
  for i in $(seq 1 "$n"); do
    if alive "$i"; then kill "$(cat "$DATA_ROOT/node$i.pid")"; echo "node $i stopped"; fi
    rm -f "$DATA_ROOT/node$i.pid"
  done
  ;;
status)
  for i in $(seq 1 "$n"); do
    if alive "$i"; then
      role=$( (exec 3<>"/dev/tcp/127.0.0.1/$(port "$i" 2)" &&
               printf 'GET /health HTTP/1.0\r\n\r\n' >&3 && timeout 2 cat <&3) 2>/dev/null |
             grep -o '"role":"[a-z]*"' || true)
      echo "node $i: pid $(cat "$DATA_ROOT/node$i.pid") ${role:-role:unknown}"
    else
      echo "node $i: not running"
    fi
  done
  ;;
*) usage ;;
esac
