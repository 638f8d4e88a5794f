#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start or stop the five independent Redis servers of the Redlock benchmark, on loopback.
#   bench/servers/redlock.sh start|stop|status
# Owns build/bench/redlock/: per server the pid file <port>.pid and the log <port>.log.
# Recipe: five Debian redis-servers with the defaults (no fsync), persistence off
# (--save '' --appendonly no), ports 16380-16384 on 127.0.0.1; independent (no replication),
# as the Redlock algorithm requires.
# `start` is idempotent and returns once all five answer PING; it then prints the endpoints.
# `stop` sends SIGTERM, waits up to 10 s, then SIGKILL.
set -euo pipefail
cd "$(dirname "$0")/../.."
REDIS_BENCH_TOP=build/bench/redlock REDIS_BENCH_PORTS="16380 16381 16382 16383 16384" \
  exec bench/servers/redis.sh "$@"
