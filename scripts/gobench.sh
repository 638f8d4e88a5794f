#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the benchmark's Go drivers, bench/go (gobench: etcd through go.etcd.io/etcd/client/v3,
# Redlock through redsync; bench/README.md), into OUT_DIR.
#
#   scripts/gobench.sh [OUT_DIR]        (default build/release/bench)
#   scripts/gobench.sh --download       (only fetch the pinned modules: scripts/deps.sh bench)
#
# The client libraries are pinned by bench/go/go.mod and go.sum: the first run downloads them
# from the Go module proxy (verified against go.sum), later runs use the module cache.
# -mod=readonly: a build never edits go.mod or go.sum. GOTOOLCHAIN=local: the installed Go
# builds it, none is downloaded; go.mod's `go` line is the oldest Go that can (the libraries'
# own requirement). Exit 1 (and a message) when no such Go is installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export GOFLAGS="-mod=readonly -buildvcs=false"
. "$root/scripts/go-env.sh" # GO, GOTOOLCHAIN=local
if [ -z "$GO" ]; then
  echo "gobench: no Go toolchain (bench/go needs the Go of its go.mod)" >&2
  exit 1
fi
cd "$root/bench/go"
need=$(sed -n 's/^go \([0-9.]*\)$/\1/p' go.mod)
have=$("$GO" env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" != "$need" ]; then
  echo "gobench: bench/go needs Go >= $need, $GO is $have" >&2
  exit 1
fi
"$GO" mod download
[ "${1:-}" = --download ] && exit 0
out=${1:-build/release/bench}
case "$out" in /*) ;; *) out=$root/$out ;; esac
mkdir -p "$out"
"$GO" build -o "$out/gobench" .
echo "gobench: built $out/gobench"
