#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The static analyser: cppcheck (Debian's package; scripts/deps.sh test installs it, at least
# the version these checks were chosen with) over the C that ships (src/, include/), with zero
# findings. `make check-static` (part of `make test`) runs it; exit status 1 on any finding,
# printed as FILE:LINE: SEVERITY ID: MESSAGE. `--root DIR` checks another tree
# (tests/integration/test_static.py proves the check bites on a scratch tree).
#
#   scripts/check-static.sh [--root DIR]
#
# It takes 10-15 s on two loaded cores (one configuration, two jobs); results are cached in
# build/cppcheck, so a run after a small change re-reads only what changed (under 2 s).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ "${1:-}" = --root ] && root=$(cd "$2" && pwd)
cd "$root"
command -v cppcheck >/dev/null || { echo "check-static: cppcheck is missing (scripts/deps.sh test)"; exit 1; }
mkdir -p build/cppcheck

args=(
  -q --error-exitcode=1 --inline-suppr -j2 --cppcheck-build-dir=build/cppcheck
  --template='{file}:{line}: {severity} {id}: {message}'
  # One configuration, the one the Makefile builds: C11 with the GNU extensions, the version
  # macros the Makefile and libraft's header provide. Checking every #ifdef combination would
  # be slower and report code no build compiles.
  --std=c11 --platform=unix64 -D_GNU_SOURCE -DFENCELOCK_VERSION='"0.0.0"'
  -DRAFT_VERSION_NUMBER=2201 -Isrc -Iinclude
  # What the POSIX functions promise (buffer sizes of read/write, fds that must be closed, NULL
  # returns): the server and the client library are POSIX programs.
  --library=posix
  # The checks. "error" is always on: undefined behaviour, out-of-bounds access, an
  # uninitialised read, a leak, a NULL dereference; the sanitizers find these only on the paths
  # the tests run, this finds them on every path.
  #  warning:     likely bugs: a printf format that disagrees with its argument, a NULL check
  #               after a dereference, an ignored return of a function that must be checked.
  #  portability: assumptions about sizes and signedness (pointer in an int, shift past the
  #               width): the wire and disk formats are bytes, the code must not depend on them.
  #  style:       conditions always true or false, assignments never read, duplicated
  #               branches: dead code that usually hides a mistake. Its opinions on taste are
  #               suppressed below.
  # Not on: "performance" (about C++ copies; nothing for C that the compiler misses),
  # "information" (cppcheck's own configuration notes), unusedFunction (needs a whole-program
  # pass, and the client library exports functions no file in the tree calls).
  --enable=warning,portability,style
  # Suppressions, each with its reason:
  #  variableScope: "declare it in the inner block" is taste; a variable declared where the
  #    function's state is introduced is clearer in several places, and moving it fixes nothing.
  --suppress=variableScope
  #  constParameter / constVariable: const on a pointer argument or a local array is taste here;
  #    it changes no code and would churn signatures other layers call.
  --suppress=constParameter --suppress=constVariable
  #  readdirCalled: readdir_r is deprecated by glibc and POSIX itself; readdir is safe per
  #    directory stream, and the only callers (/proc/self/fd, the CLI's tree) own their stream.
  --suppress=readdirCalled
  #  missingIncludeSystem: system headers are not read (libuv, OpenSSL, libsodium, libraft):
  #    the compiler checks their use; reading them would multiply the run time.
  --suppress=missingIncludeSystem
)
if ! cppcheck "${args[@]}" src include; then
  echo "static check failed: fix the finding, or suppress it next to the code with its reason"
  exit 1
fi
echo "static check: cppcheck $(cppcheck --version | sed 's/^Cppcheck //') finds nothing in src/ and include/"
