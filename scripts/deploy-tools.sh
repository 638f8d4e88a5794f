#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The validators of the container and Kubernetes examples (tests/integration/test_containers.py,
# docs/operations.md "Containers"), into OUT_DIR (default build/deploy-tools):
#   composecheck  tests/deploy/composecheck: compose-go, the Compose specification's reference
#                 loader (its JSON schema and the model's checks), pinned by go.mod and go.sum
#                 and fetched from the Go module proxy on first use;
#   venv/         kubernetes-validate, which carries the Kubernetes API's JSON schemas per
#                 release, with its dependencies, exact versions from PyPI (k8s_pins below).
# Each is remade only when missing or when its pins changed.
#
#   scripts/deploy-tools.sh [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-build/deploy-tools}
case "$out" in /*) ;; *) out=$root/$out ;; esac
mkdir -p "$out"

k8s_pins=(kubernetes-validate==1.37.0 attrs==26.1.0 importlib_resources==7.1.0 jsonschema==4.26.0
          jsonschema-specifications==2025.9.1 packaging==26.4 PyYAML==6.0.4 referencing==0.37.0
          rpds-py==2026.9.1 typing_extensions==4.16.0)
venv=$out/venv
want="${k8s_pins[*]}"
if ! [ -x "$venv/bin/kubernetes-validate" ] || [ "$(cat "$venv/pins" 2>/dev/null)" != "$want" ]; then
  echo "deploy-tools: making $venv (${k8s_pins[*]})"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "${k8s_pins[@]}"
  echo "$want" >"$venv/pins"
fi

export GOFLAGS=-mod=readonly
. "$root/scripts/go-env.sh" # GO, GOTOOLCHAIN=local
if [ -z "$GO" ]; then
  echo "deploy-tools: no Go toolchain (scripts/deps.sh test installs golang-go)" >&2
  exit 1
fi
# compose-go v2.16 needs Go >= 1.24 (its go.mod); the machine's /usr/local/go has it, Debian 12's
# golang-go (1.19) does not.
have=$("$GO" env GOVERSION | sed 's/^go//')
if ! printf '%s\n%s\n' 1.24 "$have" | sort -V -C; then
  echo "deploy-tools: composecheck needs Go >= 1.24 (have $have at $GO)" >&2
  exit 1
fi
src=$root/tests/deploy/composecheck
if ! [ -x "$out/composecheck" ] || [ "$src/go.sum" -nt "$out/composecheck" ] ||
  [ "$src/main.go" -nt "$out/composecheck" ]; then
  (cd "$src" && "$GO" build -o "$out/composecheck" .)
  echo "deploy-tools: built $out/composecheck"
fi
