#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Start or stop the etcd cluster of the "etcd-go" rows (etcd through its own Go client,
# bench/go): the cluster of bench/servers/etcd.sh, same ports and flags, its state in
# build/bench/etcd-go/ so that these rows start from empty data too.
#   bench/servers/etcd-go.sh start|stop|status
set -euo pipefail
cd "$(dirname "$0")/../.."
ETCD_BENCH_TOP=build/bench/etcd-go exec bench/servers/etcd.sh "$@"
