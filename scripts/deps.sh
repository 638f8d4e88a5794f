#!/usr/bin/env bash
# Install the Debian packages a target needs, only those `dpkg -s` reports missing.
# Usage: scripts/deps.sh build|test|fuzz|bench
set -euo pipefail
pkgs=(build-essential pkg-config libraft-dev libuv1-dev libhiredis-dev)
case "${1:-build}" in
build) ;;
test)
  pkgs+=(python3 redis-tools faketime libfaketime iproute2 procps iptables python3-redis nodejs)
  # Debian's nodejs has no npm; NodeSource's nodejs provides it and conflicts with Debian's npm.
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
  ;;
fuzz) pkgs+=(clang libclang-rt-14-dev) ;;
bench) pkgs+=(python3 redis-server etcd-server etcd-client zookeeper libzookeeper-mt-dev
              libcurl4-openssl-dev procps) ;;
*) echo "usage: $0 build|test|fuzz|bench" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
