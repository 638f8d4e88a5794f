#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages a target needs, only those `dpkg -s` reports missing.
# Usage: scripts/deps.sh build|run|test|fuzz|bench|deb|pyvenv
#   pyvenv: only build/pyvenv (below); test makes it too.
set -euo pipefail

# build/pyvenv: the Python client's checks and tests (clients/python, scripts/run-tests.sh, the
# conformance agent tests/conformance/agents/python.json): a venv that sees Debian's packages
# (pytest) with these exact versions from PyPI on top. redis-py >= 5 for fencelock.aio (Debian
# 12 has 4.3); mypy for `mypy --strict`. Remade when the pins change (build/pyvenv/pins).
# --no-deps: every one is pinned here.
py_pins=(redis==6.4.0 async-timeout==5.0.1 mypy==1.18.2 mypy_extensions==1.2.0 pathspec==1.1.1
         typing_extensions==4.16.0)
pyvenv() {
  local root dir want
  root=$(cd "$(dirname "$0")/.." && pwd); dir=$root/build/pyvenv; want="${py_pins[*]}"
  [ -x "$dir/bin/python" ] && [ "$(cat "$dir/pins" 2>/dev/null)" = "$want" ] && return 0
  echo "deps: making build/pyvenv (${py_pins[*]})"
  rm -rf "$dir"
  /usr/bin/python3 -m venv --system-site-packages "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check --no-deps "${py_pins[@]}"
  echo "$want" >"$dir/pins"
}
if [ "${1:-build}" = pyvenv ]; then pyvenv; exit 0; fi
pkgs=(build-essential pkg-config libuv1-dev libhiredis-dev libsodium-dev libssl-dev) # libraft-dev: below
# make deb (debian/): dpkg-buildpackage, dh, lintian; systemd for `systemd-analyze verify`;
# dh-python and pybuild's pyproject plugin for python3-fencelock; logrotate for the packaged
# rotation rules (test_packages.py runs them).
deb_pkgs=(debhelper dpkg-dev fakeroot lintian systemd adduser dh-python python3-all
          pybuild-plugin-pyproject python3-setuptools logrotate)
case "${1:-build}" in
build) ;;
run) pkgs+=(redis-tools) ;; # the README's quick start: redis-cli beside the fencelock CLI
test)
  pkgs+=(clang-format) # make check-format (Debian 12's clang-format 14 defines the format)
  pkgs+=(cppcheck) # make check-static (its checks were chosen with Debian 12's 2.10: below)
  pkgs+=(python3 redis-tools openssl faketime libfaketime iproute2 procps iptables python3-redis nodejs)
  pkgs+=(postgresql postgresql-contrib perl) # tests/integration/test_postgres.py (pgcrypto)
  # tests/fencing (the fencing adapters' suite): Debian's nginx with njs for contrib/nginx, and
  # MariaDB for contrib/mariadb. The tests start their own instances (temp dirs, loopback or
  # Unix socket only); Debian's packages would also start the system services where
  # policy-rc.d allows it (a container's usually does not).
  pkgs+=(nginx libnginx-mod-http-js mariadb-server mariadb-client)
  # Debian's nodejs has no npm; NodeSource's nodejs provides it and conflicts with Debian's npm.
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
  pkgs+=(python3-pytest python3-venv python3-setuptools) # clients/python: tests, offline install
  pkgs+=(chromium) # tests/console: the web console in headless Chromium (playwright-core)
  pkgs+=(openjdk-17-jdk-headless maven) # clients/java: Java 17 and Maven (java_deps below)
  pkgs+=("${deb_pkgs[@]}") # test_packages.py builds, lints and installs the packages
  # tests/porcupine (the torture runs' second judge, scripts/porcupine.sh): Go >= 1.19, Debian
  # 12's golang-go unless a Go toolchain is installed already
  command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || pkgs+=(golang-go)
  ;;
deb) pkgs+=("${deb_pkgs[@]}") ;;
fuzz) pkgs+=(clang libclang-rt-14-dev) ;;
bench) pkgs+=(python3 redis-server etcd-server etcd-client zookeeper libzookeeper-mt-dev
              libcurl4-openssl-dev procps valgrind) # valgrind: bench/instr.sh (callgrind)
  # bench/java (ZooKeeper through Curator, Redis through Redisson): a JDK 17 and Maven, Debian's
  # unless installed; their artifacts below.
  command -v javac >/dev/null 2>&1 || pkgs+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
  ;;
*) echo "usage: $0 build|run|test|fuzz|bench|deb|pyvenv" >&2; exit 2 ;;
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

# fuzz: libraft's own source (its decoders run behind fuzz_raft_msg's validator), the upstream
# tarball of the installed version from Debian's source archive, unpacked into build/libraft-src.
libraft_source() {
  local dest=build/libraft-src ver codename tmp
  [ -d "$dest/src" ] && return 0
  ver=$(dpkg-query -W -f='${Version}' libraft-dev | sed -E 's/-[^-]*$//')
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deps: adding Debian's deb-src entries for libraft's source"
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s %s-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$codename" "$codename" | $SUDO tee /etc/apt/sources.list.d/fencelock-src.sources >/dev/null
    $SUDO apt-get update -qq
  fi
  tmp=$(mktemp -d)
  # Only the upstream tarball is needed; the Debian parts of a backport may be gone already.
  (cd "$tmp" && apt-get source -qq --download-only "raft=$(dpkg-query -W -f='${Version}' libraft-dev)" >/dev/null 2>&1 || true)
  if [ ! -f "$tmp/raft_${ver}.orig.tar.gz" ]; then
    echo "deps: libraft ${ver}'s source is not available; fuzz_raft_msg cannot be built" >&2
    rm -rf "$tmp"; return 1
  fi
  mkdir -p "$dest"
  tar -xzf "$tmp/raft_${ver}.orig.tar.gz" -C "$dest" --strip-components=1
  rm -rf "$tmp"
}

# cppcheck: make check-static's checks and suppressions were chosen with 2.10 (Debian 12's); an
# older one misses some of them, a newer one may add findings to fix or suppress with a reason.
cppcheck_min=2.10
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# promtool (tests of the alert rules and of /metrics) and prometheus (the dashboard's queries
# evaluated on TSDB blocks a test makes, served on a test port by a prometheus it starts and
# stops itself): Debian's prometheus package, without the exporters and web assets it
# recommends; the tests never use its packaged service.
if [ "${1:-build}" = test ] && ! dpkg -s prometheus >/dev/null 2>&1; then
  echo "deps: installing prometheus (promtool)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus \
    >/dev/null
fi
if [ "${1:-build}" = test ]; then
  cppcheck_have=$(dpkg-query -W -f='${Version}' cppcheck 2>/dev/null || true)
  if [ -z "$cppcheck_have" ] || dpkg --compare-versions "$cppcheck_have" lt "$cppcheck_min"; then
    echo "deps: cppcheck >= $cppcheck_min is needed by make check-static (have: ${cppcheck_have:-none})" >&2
    exit 1
  fi
fi
# clients/java: the pinned artifacts of its pom (plugins, JUnit, spring-integration-core) in
# Maven's default local repository (~/.m2/repository, shared by every checkout and kept across
# `make clean`), so that `mvn -o` works afterwards. Offline first: once they are there this
# costs one quick offline build. Running CodecTest (no server) resolves Surefire's JUnit
# provider, which only a test run asks for; `package` fetches the jar plugin (the agent's jar).
java_deps() {
  local m=(mvn -q -B -f clients/java/pom.xml -Dtest=CodecTest -Dsurefire.failIfNoSpecifiedTests=false package)
  "${m[0]}" -o "${m[@]:1}" >/dev/null 2>&1 && return 0
  echo "deps: fetching clients/java's Maven artifacts into ~/.m2/repository"
  "${m[@]}" >/dev/null || { echo "deps: mvn could not fetch clients/java's artifacts" >&2; return 1; }
}
if [ "${1:-build}" = test ]; then java_deps; fi
# The Go client (clients/go, scripts/go-client-tests.sh): Go >= 1.26, which the pinned
# staticcheck (clients/go/tools/go.mod) needs; the modules both go.mod files pin, downloaded
# from the Go module proxy and verified against their go.sum (the client itself has none).
go_client_min=1.26
go_client_deps() {
  local go_bin have GO
  . "$(dirname "$0")/go-env.sh"
  go_bin=$GO
  have=$([ -n "$go_bin" ] && "$go_bin" env GOVERSION 2>/dev/null | sed 's/^go//' || true)
  if [ -z "$have" ] || dpkg --compare-versions "$have" lt "$go_client_min"; then
    # Debian 12 has no such Go; the Go client's part of the tests then fails and says so.
    echo "deps: warning: the Go client's checks need Go >= $go_client_min (have: ${have:-none})" >&2
    return 0
  fi
  local root; root=$(cd "$(dirname "$0")/.." && pwd)
  (cd "$root/clients/go" && GOFLAGS=-mod=readonly GOTOOLCHAIN=local "$go_bin" mod download) &&
    (cd "$root/clients/go/tools" && GOFLAGS=-mod=readonly GOTOOLCHAIN=local "$go_bin" mod download)
}
[ "${1:-build}" = test ] && { go_client_deps || exit 1; }  # a failed module download
[ "${1:-build}" = fuzz ] && libraft_source
# bench/java: the pom's pinned artifacts and plugins into Maven's local repository (~/.m2), by
# one build, online only when an offline one fails (so once); make then builds with mvn -o.
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-build}" = bench ] && ! mvn -B -q -o -f "$top/bench/java/pom.xml" package >/dev/null 2>&1; then
  echo "deps: fetching bench/java's Maven artifacts (Curator, ZooKeeper client, Redisson)"
  rm -rf "$top/build/java/lib"
  mvn -B -q -f "$top/bench/java/pom.xml" package
fi
# bench: the Go drivers' client libraries (etcd's Go client, redsync, go-redis), pinned by
# bench/go/go.sum, from the Go module proxy into the module cache. They need the Go of
# bench/go/go.mod (the machine's /usr/local/go); without it their rows are skipped, with a note.
if [ "${1:-build}" = bench ]; then
  "$(dirname "$0")/gobench.sh" --download ||
    echo "deps: bench/go's modules not fetched: the etcd-go and redsync rows will be skipped" >&2
fi
[ "${1:-build}" = test ] && pyvenv
# The container and Kubernetes examples' validators (tests/integration/test_containers.py):
# compose-go pinned by tests/deploy/composecheck/go.sum, kubernetes-validate pinned from PyPI.
# Without them test_containers.py fails and says why; the other tests still run.
if [ "${1:-build}" = test ]; then
  "$(dirname "$0")/deploy-tools.sh" >/dev/null ||
    echo "deps: warning: scripts/deploy-tools.sh failed: test_containers.py will fail" >&2
fi
# clients/node: ioredis and the TypeScript toolchain; tests/console: playwright-core (the
# driver only: it drives Debian's chromium above and downloads no browser of its own). Each
# exactly as its package-lock.json pins them (npm ci), when node_modules is missing or older
# than the lock file.
if [ "${1:-build}" = test ]; then
  for node_dir in clients/node tests/console; do
    node_dir=$(cd "$(dirname "$0")/.." && pwd)/$node_dir
    nm=$node_dir/node_modules/.package-lock.json
    if [ ! -f "$nm" ] || [ "$node_dir/package-lock.json" -nt "$nm" ]; then
      echo "deps: npm ci in ${node_dir#"$(cd "$(dirname "$0")/.." && pwd)/"}"
      (cd "$node_dir" && npm ci --no-audit --no-fund >/dev/null)
    fi
  done
fi
exit 0
