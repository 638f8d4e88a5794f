#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run every test of a build directory: the unit-test binaries, then the integration tests
# against real fencelockd processes, the Python client's type check and tests, the Java, Go and
# Node.js clients' tests, the web console in a real browser (tests/console), the client
# conformance suite (tests/conformance), the fencing adapters' suite (tests/fencing) and three
# short torture runs (each judged by the checkers and by
# Porcupine: tests/porcupine).
# Each part prints "tests: N passed, N failed"; this script adds them up and prints the closing
# line CI reads.
#
#   scripts/run-tests.sh [--only PATTERN]... [--repeat N] [--jobs N] [BUILD_DIR]
#
# --only PATTERN: only the unit-test binaries and integration tests whose names contain PATTERN
#   (or match it as a glob: test_fifo, 'test_auth.*flood*'); no pytest, no conformance, no
#   torture.
# --repeat N: run each selected test N times (to hunt one that fails now and then).
# --jobs N: integration tests at once (default: the CPUs, at most 4; docs/testing.md).
set -uo pipefail
only=(); repeat=1; jobs=${FL_TEST_JOBS:-}
while [ $# -gt 0 ]; do
  case "$1" in
  --only) only+=("$2"); shift 2 ;;
  --repeat) repeat=$2; shift 2 ;;
  --jobs) jobs=$2; shift 2 ;;
  -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
  *) break ;;
  esac
done
B=${1:-build/asan}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
passed=0; failed=0; t0=$SECONDS
phase() { echo "== $* (at $((SECONDS - t0)) s)"; } # where the run's time goes, part by part
count() { # parse the last summary line of a part's output (a tool's output that ends without a
  # newline may have the appended summary glued to its last line: match at the line's end)
  local line; line=$(grep -aoE 'tests: [0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1)
  if [ -z "$line" ]; then failed=$((failed + 1)); echo "!! $2 printed no summary"; return; fi
  local p f; p=$(echo "$line" | sed -E 's/tests: ([0-9]+) passed.*/\1/')
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  passed=$((passed + p)); failed=$((failed + f))
}
selected() { # is this name selected by --only (every name is, without --only)?
  [ ${#only[@]} -eq 0 ] && return 0
  local p; for p in "${only[@]}"; do
    case "$1" in *$p*) return 0 ;; esac
  done
  return 1
}
log=$(mktemp)
# Three short torture schedules (tests/torture, docs/testing.md "Torture") on 3 nodes, each one
# test that passes when the checkers find no violation, run one after the other in the
# background while the other parts run (they take fixed wall time and little CPU); on their own
# slice of loopback ports. TORTURE=0 skips them.
#  - 60 s with every nemesis, membership changes included, every workload (--workloads all);
#  - 45 s of the snapshot-heavy mode: thresholds of 64..256 entries, leader pauses,
#    lagging followers, membership changes (a rejoined node asks again with PROMOTE); every
#    workload but deadlock (its judge needs the whole event stream: torture.py);
#  - 30 s of --secure: client TLS with client certificates, peer mTLS and ACLs on
#    every node, workers on TLS + AUTH. Only the workloads with no "nothing was tested" floor
#    that 30 s could miss (control, rw, sem, elect need luckier schedules; the 60 s run has them).
# Each run is judged twice: by the checkers (tests/torture/checkers*.py) and by Porcupine
# (tests/porcupine, built once here by scripts/porcupine.sh: the pinned module from the Go
# module proxy on a fresh machine).
PORCUPINE=build/porcupine/porcupine-check
torture_one() { # NAME SECONDS ARGS...: build/torture/NAME (its output in NAME.log)
  local name=$1 secs=$2; shift 2
  echo "$secs s $*" >"build/torture/$name.log.title"
  FL_TEST_PORTS=30000-32767 python3 tests/torture/torture.py --bin "$B/fencelockd" --nodes 3 \
    --seconds "$secs" "$@" --porcupine "$PORCUPINE" --out "build/torture/$name" \
    >"build/torture/$name.log" 2>&1
  echo "exit $?" >"build/torture/$name.log.status"
}
torture_all() {
  torture_one ci 60
  torture_one ci-snap 45 --snapshots
  torture_one ci-secure 30 --secure --workloads register,mutex,fenced-counter,watch
}
porcupine_built=1
if [ ${#only[@]} -eq 0 ]; then
  phase "porcupine: build the second judge (scripts/porcupine.sh)"
  scripts/porcupine.sh build/porcupine || { porcupine_built=0; failed=$((failed + 1)); }
fi
if [ ${#only[@]} -eq 0 ] && [ "${TORTURE:-1}" != 0 ]; then
  mkdir -p build/torture
  rm -f build/torture/ci*.log build/torture/ci*.log.status build/torture/ci*.log.title
  phase "torture: 3 schedules in the background (build/torture/ci*.log)"
  torture_all &
  torture_pid=$!
fi
phase "unit tests"
for t in "$B"/tests/test_*; do
  [ -x "$t" ] || continue
  selected "$(basename "$t")" || continue
  for r in $(seq 1 "$repeat"); do
  echo "== $t"
  "$t" >"$log" 2>&1; rc=$?
  grep -E '^(not ok|  FAIL)' "$log"; grep -E '^tests:' "$log"
  [ $rc -ne 0 ] && ! grep -q 'failed' "$log" && { echo "!! $t exited $rc"; cat "$log"; }
  count "$log" "$t"
  if [ $rc -ne 0 ] && grep -qE '^tests: [0-9]+ passed, 0 failed' "$log"; then
    echo "!! $t exited $rc after passing (sanitizer report?)"; tail -n 30 "$log"; failed=$((failed + 1))
  fi
  done
done
if [ ${#only[@]} -gt 0 ]; then
  ks=(); for p in "${only[@]}"; do ks+=(-k "$p"); done
  echo "== integration (${only[*]}, $repeat time(s))"
  python3 tests/integration/run.py --bin "$B/fencelockd" "${ks[@]}" --repeat "$repeat" \
    ${jobs:+--jobs "$jobs"} 2>&1 | tee "$log"
  count "$log" integration
  rm -f "$log"
  echo "tests: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]; exit
fi
phase "torture checkers"
python3 tests/torture/test_checkers.py >"$log" 2>&1
grep -E '^(not ok|FAIL)' "$log"; grep -E '^tests:' "$log"
count "$log" "torture checkers"
# The second judge against the first: negative controls flagged by both, Porcupine's labelled
# Jepsen etcd histories judged alike (tests/porcupine/test_porcupine.py).
phase "porcupine (second judge)"
if [ "$porcupine_built" = 1 ]; then
  python3 tests/porcupine/test_porcupine.py --bin "$PORCUPINE" >"$log" 2>&1
  grep -E '^(not ok|FAIL)' "$log"; grep -E '^tests:' "$log"
  count "$log" "porcupine"
else
  echo "!! porcupine-check was not built"
fi
phase "integration"
FL_TEST_PORTS=20000-29999 python3 tests/integration/run.py --bin "$B/fencelockd" \
  --repeat "$repeat" ${jobs:+--jobs "$jobs"} 2>&1 | tee "$log"
count "$log" integration
# The Python client (clients/python): build/pyvenv (scripts/deps.sh pyvenv: redis-py and mypy
# pinned from PyPI, Debian's pytest) runs `mypy --strict` over the package and the conformance
# agent (one check each), then the tests of the blocking client, of fencelock.aio and of the
# agent against real servers; pytest's summary ("12 passed, 1 failed, 1 skipped in 20s") becomes
# a "tests:" line.
PY=build/pyvenv/bin/python
scripts/deps.sh pyvenv >"$log" 2>&1 || { cat "$log"; echo "!! build/pyvenv could not be made"; }
phase "python client (mypy --strict)"
mp=0; mf=0
for target in fencelock conformance/agent.py; do
  if (cd clients/python && "../../$PY" -m mypy --strict "$target") >"$log" 2>&1; then
    mp=$((mp + 1))
  else
    mf=$((mf + 1)); echo "!! mypy --strict $target:"; tail -n 30 "$log"
  fi
done
echo "tests: $mp passed, $mf failed" | tee "$log"
count "$log" "python mypy"
phase "python client (pytest)"
FL_TEST_PORTS=20000-29999 "$PY" -m pytest -q -rfE -p no:cacheprovider \
  clients/python/tests --fencelockd "$B/fencelockd" >"$log" 2>&1
grep -E '^(FAILED|ERROR)' "$log"
sum=$(grep -aE '^=* *[0-9]+ (passed|failed|error)' "$log" | tail -n 1)
if [ -z "$sum" ]; then
  echo "!! pytest printed no summary (python3-pytest, build/pyvenv?)"; tail -n 20 "$log"
  echo "tests: 0 passed, 1 failed" >>"$log"
else
  n() { echo "$sum" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
  echo "tests: $(n passed) passed, $(( $(n failed) + $(n error) )) failed" | tee -a "$log"
fi
count "$log" "python client"
# The Java client (clients/java) against real servers, offline from ~/.m2 (scripts/deps.sh test
# fetched it); Surefire's per-class reports become this script's "tests:" line.
phase "java client (mvn -o test)"
rm -rf clients/java/target/surefire-reports
jbin=$(realpath "$B/fencelockd")
(cd clients/java && FL_TEST_PORTS=20000-29999 mvn -o -q -B test -Dfencelock.bin="$jbin") \
  >"$log" 2>&1
jrc=$?
grep -E '^\[ERROR\] +[A-Za-z]+Test\.' "$log"
jp=0; jf=0
for f in clients/java/target/surefire-reports/*.txt; do
  [ -f "$f" ] || continue
  l=$(grep -oE 'Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+' "$f" | head -n 1)
  read -r run fl er sk <<<"$(echo "$l" | grep -oE '[0-9]+' | tr '\n' ' ')"
  [ -n "${sk:-}" ] || continue
  jp=$((jp + run - fl - er - sk)); jf=$((jf + fl + er))
done
if [ "$jrc" -ne 0 ] && [ "$jf" -eq 0 ]; then
  echo "!! mvn -o test exited $jrc"; tail -n 20 "$log"; jf=1
elif [ "$jp" -eq 0 ] && [ "$jf" -eq 0 ]; then
  echo "!! the Java client ran no test"; jf=1
fi
echo "tests: $jp passed, $jf failed" | tee "$log" # (mvn output may not end with a newline)
count "$log" "java client"
# The client conformance suite (tests/conformance, docs/testing.md "Conformance"): every
# scenario against every client's agent (tests/conformance/agents/*.json), on 3-node clusters;
# one test per scenario and agent. After the integration tests and pytest, on their range (they
# are done; the torture runs in the background keep 30000-32767 to themselves).
phase "conformance (every client's agent)"
FL_TEST_PORTS=20000-29999 python3 tests/conformance/run.py --bin "$B/fencelockd" \
  ${jobs:+--jobs "$jobs"} 2>&1 | tee "$log"
count "$log" conformance
# The fencing adapters (tests/fencing, docs/testing.md "Fencing adapters"): every scenario
# against every resource that checks tokens (ADAPTERS in tests/fencing/adapters.py), each
# resource Debian's package, started by the suite; one test per scenario and adapter.
phase "fencing adapters (tests/fencing)"
FL_TEST_PORTS=20000-29999 python3 tests/fencing/run.py --bin "$B/fencelockd" 2>&1 | tee "$log"
count "$log" "fencing adapters"
# The Go client (clients/go): go vet, staticcheck and go test -race against real servers, its
# conformance agent included (scripts/go-client-tests.sh prints its own "tests:" line).
phase "go client (vet, staticcheck, go test -race)"
FL_TEST_PORTS=20000-29999 scripts/go-client-tests.sh "$B/fencelockd" >"$log" 2>&1
grep -E '^(go vet|staticcheck|go test|tests:)' "$log"
grep -qE '^tests: [0-9]+ passed, 0 failed' "$log" || grep -vE '^(go vet|staticcheck|go test|tests:)' "$log" | tail -n 150
count "$log" "go client"
# The Node.js client (clients/node): tsc, then Node's own test runner against real servers; its
# TAP totals ("# pass 12", "# fail 0") become this script's "tests:" line (a failed build: 1).
phase "node client (node --test)"
nbin=$(realpath "$B/fencelockd")
if (cd clients/node && npm run --silent build) >"$log" 2>&1; then
  (cd clients/node && FL_TEST_PORTS=20000-29999 FENCELOCK_BIN="$nbin" \
    node --test --test-reporter=tap test-dist/) >"$log" 2>&1
  grep -E '^not ok' "$log"
  np=$(grep -E '^# pass [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+')
  nf=$(grep -E '^# fail [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+')
  if [ -z "$np" ]; then
    echo "!! node --test printed no totals"; tail -n 20 "$log"; echo "tests: 0 passed, 1 failed" >>"$log"
  else
    echo "tests: $np passed, ${nf:-0} failed" | tee -a "$log"
  fi
else
  echo "!! clients/node did not build (scripts/deps.sh test runs npm ci)"; tail -n 20 "$log"
  echo "tests: 0 passed, 1 failed" >>"$log"
fi
count "$log" "node client"
# The web console in a real browser (tests/console, docs/console.md): Debian's headless chromium
# driven by playwright-core (scripts/deps.sh test: npm ci there) against real clusters, on the
# integration tests' range; its TAP totals become this script's "tests:" line, as the Node.js
# client's. Screenshots of every page land in build/console-screenshots/.
phase "console (playwright-core, chromium)"
(cd tests/console && FL_TEST_PORTS=20000-29999 FENCELOCK_BIN="$nbin" \
  node --test --test-reporter=tap console.test.js) >"$log" 2>&1
grep -E '^not ok' "$log"
cp=$(grep -E '^# pass [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+')
cf=$(grep -E '^# fail [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+')
if [ -z "$cp" ]; then
  echo "!! node --test (tests/console) printed no totals"; tail -n 30 "$log"
  echo "tests: 0 passed, 1 failed" >>"$log"
else
  [ "${cf:-0}" = 0 ] || grep -vE '^(ok|# )' "$log" | tail -n 60
  echo "tests: $cp passed, ${cf:-0} failed" | tee -a "$log"
fi
count "$log" "console"
# The torture runs started first (torture_all above) report now.
if [ "${TORTURE:-1}" != 0 ]; then
  wait "$torture_pid"
  for part in ci ci-snap ci-secure; do
    f=build/torture/$part.log
    echo "== torture $part ($(head -n 1 "$f.title" 2>/dev/null))"
    if grep -q '^exit 0$' "$f.status" 2>/dev/null; then
      passed=$((passed + 1)); grep -E '^torture: (seed|snapshots|judges|[0-9]+ ops)' "$f"
    else
      failed=$((failed + 1)); echo "!! torture $part failed (build/torture/$part):"
      tail -n 40 "$f"
    fi
  done
fi
rm -f "$log"
echo "# every part: $((SECONDS - t0)) s"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
