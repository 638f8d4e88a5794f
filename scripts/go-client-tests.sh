#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Check and test the Go client (clients/go): go vet, staticcheck (the version pinned by
# clients/go/tools/go.mod and go.sum, built into build/go), and go test -race against real
# fencelockd processes (the tests start them: FENCELOCKD, ports from FL_TEST_PORTS).
# Prints a line per part, the failing tests' output, and the closing
# "tests: N passed, N failed": go vet and staticcheck count one test each, go test every test
# and subtest it reports (from its -json output).
#
#   scripts/go-client-tests.sh [FENCELOCKD]     (default build/asan/fencelockd)
#
# -mod=readonly: a run never edits go.mod or go.sum; GOTOOLCHAIN=local: the installed Go is
# used, none is downloaded (scripts/deps.sh test checks its version and downloads the modules).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-build/asan/fencelockd}
case "$bin" in /*) ;; *) bin=$root/$bin ;; esac
export GOFLAGS=-mod=readonly
. "$root/scripts/go-env.sh" # GO, GOTOOLCHAIN=local
if [ -z "$GO" ]; then
  echo "!! go client: no Go toolchain (scripts/deps.sh test)"; echo "tests: 0 passed, 1 failed"; exit 1
fi
export PATH="$(dirname "$GO"):$PATH" # the tests run go build and go run themselves
out=$root/build/go
mkdir -p "$out"
passed=0; failed=0
cd "$root/clients/go"
if "$GO" vet ./... >"$out/vet.log" 2>&1; then
  passed=$((passed + 1)); echo "go vet: clean"
else
  failed=$((failed + 1)); echo "!! go vet:"; cat "$out/vet.log"
fi
if (cd tools && "$GO" build -o "$out/staticcheck" honnef.co/go/tools/cmd/staticcheck) \
    >"$out/staticcheck.log" 2>&1 && "$out/staticcheck" ./... >>"$out/staticcheck.log" 2>&1; then
  passed=$((passed + 1)); echo "staticcheck: clean"
else
  failed=$((failed + 1)); echo "!! staticcheck:"; cat "$out/staticcheck.log"
fi
FENCELOCKD=$bin "$GO" test -race -count=1 -timeout 20m -json ./... >"$out/test.json" 2>"$out/test.err"
python3 - "$out/test.json" "$out/test.err" <<'PY'
import json, sys
passed, failed, output, built = 0, 0, {}, False
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    key = (ev.get("Package", ""), ev.get("Test"))
    if ev.get("Action") == "output":
        output.setdefault(key, []).append(ev.get("Output", ""))
    elif ev.get("Action") in ("pass", "fail") and ev.get("Test"):
        built = True
        if ev["Action"] == "pass":
            passed += 1
        else:
            failed += 1
            print("!! FAIL %s (%s)" % (ev["Test"], ev["Package"]))
            print("".join(output.get(key, [])[-80:]), end="")
    elif ev.get("Action") == "fail" and not ev.get("Test"):
        if not any(k[0] == ev.get("Package") and k[1] for k in output):
            failed += 1  # a package that did not build or whose test binary died
            print("!! FAIL package %s" % ev.get("Package"))
            print("".join(output.get(key, [])[-80:]), end="")
err = open(sys.argv[2], encoding="utf-8", errors="replace").read().strip()
if err:
    print(err[-4000:])
    if not built:
        failed += 1
print("go test -race: %d passed, %d failed" % (passed, failed))
with open(sys.argv[1] + ".counts", "w") as f:
    f.write("%d %d\n" % (passed, failed))
PY
read -r p f <"$out/test.json.counts" || { p=0; f=1; }
passed=$((passed + p)); failed=$((failed + f))
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
