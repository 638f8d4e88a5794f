#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the torture suite's second judge, tests/porcupine (porcupine-check: Porcupine's
# linearizability checker on a torture history; tests/torture/HISTORY.md), into OUT_DIR.
#
#   scripts/porcupine.sh [OUT_DIR]        (default build/porcupine)
#   scripts/porcupine.sh --module-dir     (print where the pinned Porcupine module is unpacked)
#
# The module's one dependency, github.com/anishathalye/porcupine, is pinned by go.mod and
# go.sum: the first run downloads it from the Go module proxy (go mod download, verified
# against go.sum), later runs use the module cache. -mod=readonly: a build never edits go.mod
# or go.sum. GOTOOLCHAIN=local: the installed Go builds it (go.mod asks for 1.19, Debian 12's
# golang-go), none is downloaded.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export GOFLAGS=-mod=readonly
. "$root/scripts/go-env.sh" # GO, GOTOOLCHAIN=local
if [ -z "$GO" ]; then
  echo "porcupine: no Go toolchain (scripts/deps.sh test installs golang-go)" >&2
  exit 1
fi
cd "$root/tests/porcupine"
"$GO" mod download github.com/anishathalye/porcupine
if [ "${1:-}" = --module-dir ]; then
  "$GO" list -m -f '{{.Dir}}' github.com/anishathalye/porcupine
  exit 0
fi
out=${1:-build/porcupine}
case "$out" in /*) ;; *) out=$root/$out ;; esac
mkdir -p "$out"
"$GO" build -o "$out/porcupine-check" .
echo "porcupine: built $out/porcupine-check"
