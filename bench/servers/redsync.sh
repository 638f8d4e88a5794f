#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start or stop the five Redis servers of the "redsync" rows (Redlock through redsync, bench/go):
# those of bench/servers/redlock.sh, same ports and flags, their state in build/bench/redsync/.
#   bench/servers/redsync.sh start|stop|status
set -euo pipefail
cd "$(dirname "$0")/../.."
REDIS_BENCH_TOP=build/bench/redsync REDIS_BENCH_PORTS="16380 16381 16382 16383 16384" \
  exec bench/servers/redis.sh "$@"
