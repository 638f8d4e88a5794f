#!/usr/bin/env bash
# Install the Debian packages a target needs, only those `dpkg -s` reports missing.
# Usage: scripts/deps.sh build|test|fuzz|bench
set -euo pipefail
pkgs=(build-essential pkg-config libuv1-dev libhiredis-dev) # libraft-dev: below
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
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo

# libraft >= 0.22: 0.15 (bookworm's own) SEGVs when it rolls back a configuration change whose
# committed predecessor a snapshot compacted (found by `make torture`). Bookworm gets 0.22 from
# Debian's bookworm-backports; newer releases have it in main.
raft_min=0.22
raft_have=$(dpkg-query -W -f='${Version}' libraft-dev 2>/dev/null || true)
if [ -z "$raft_have" ] || dpkg --compare-versions "$raft_have" lt "$raft_min"; then
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  $SUDO apt-get update -qq
  cand=$(apt-cache policy libraft-dev | awk '/Candidate:/ {print $2}')
  target=()
  if [ -z "$cand" ] || [ "$cand" = "(none)" ] || dpkg --compare-versions "$cand" lt "$raft_min"; then
    src=/etc/apt/sources.list.d/${codename}-backports.sources
    if ! grep -rqs "${codename}-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
      echo "deps: adding Debian's ${codename}-backports for libraft-dev >= $raft_min"
      printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$codename" | $SUDO tee "$src" >/dev/null
      $SUDO apt-get update -qq
    fi
    target=(-t "${codename}-backports")
  fi
  echo "deps: installing libraft-dev >= $raft_min ${target[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${target[@]}" libraft-dev >/dev/null
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
