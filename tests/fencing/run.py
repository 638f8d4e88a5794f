#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The fencing conformance suite: every scenario (scenarios.py) against every adapter
(adapters.py), i.e. against every resource fencelock's tokens can guard (docs/fencing.md
"Adapters"). Standard library only; the resources' servers (PostgreSQL, MariaDB, nginx) are
Debian's, installed by `scripts/deps.sh test` and started here, on FL_TEST_PORTS.

  python3 tests/fencing/run.py --bin build/asan/fencelockd [--adapter NAME]... [-k PATTERN]...
                               [-v]

Per adapter: one fencelockd (with --token-key, for FENCE.SIGN), the adapter's resource started
by its setup(), then each scenario in turn (every scenario uses lock and resource names of its
own, so they do not see each other), then teardown. One test is one scenario x one adapter; a
scenario an adapter cannot run by its nature (signatures, for a resource that asks fencelockd
itself) is listed as `n/a`, not counted. An adapter whose resource is not installed FAILS every
scenario: `make test` installs them.

Prints `not ok ADAPTER.SCENARIO` with the failure, `ok ...` with -v, a line per adapter
(`== adapter postgresql: 8 passed, 0 failed, 1 n/a, 21.0 s`) and finally
`tests: N passed, N failed`. Exit status 1 on any failure.
"""

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
INTEGRATION = os.path.join(REPO, "tests", "integration")
sys.path[:0] = [HERE, INTEGRATION]

import adapters  # noqa: E402
from guard import guarded  # noqa: E402
import scenarios  # noqa: E402


def integration_ctx_class():
    """tests/integration/run.py's Ctx (servers, connections, clean-ups), loaded under another
    module name (this file is run.py too)."""
    spec = importlib.util.spec_from_file_location("integration_run",
                                                  os.path.join(INTEGRATION, "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Ctx


class ScenarioCtx:
    """What guarded() needs of one scenario: its own clean-ups (a paused seller to kill)."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.cleanups = []

    def tmp(self, name):
        return os.path.join(self.workdir, name)

    def defer(self, fn):
        self.cleanups.append(fn)

    def finish(self):
        problems = []
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                problems.append("cleanup failed: %r" % (e,))
        self.cleanups = []
        return problems


def run_adapter(binary, root, cls, patterns, verbose):
    """Every selected scenario against one adapter; returns (passed, failed, n/a)."""
    Ctx = integration_ctx_class()
    workdir = os.path.join(root, cls.name)
    os.makedirs(workdir, exist_ok=True)
    ctx = Ctx(binary, workdir, cls.name)
    passed = failed = na = 0
    t0 = time.monotonic()
    adapter = cls()
    env = None
    setup_failure = None
    try:
        env = scenarios.Env(ctx, adapter)
        adapter.setup(ctx, env)
    except Exception:  # noqa: BLE001
        setup_failure = traceback.format_exc()
    for sc in scenarios.SCENARIOS:
        full = "%s.%s" % (cls.name, sc.__name__)
        if patterns and not any(p in full for p in patterns):
            continue
        why = scenarios.not_applicable(sc, adapter)
        if why:
            na += 1
            print("n/a %s (%s)" % (full, why), flush=True)
            continue
        if setup_failure:
            failed += 1
            print("not ok %s\n  setup failed:\n%s" % (full, setup_failure), flush=True)
            continue
        sdir = os.path.join(workdir, sc.__name__)
        os.makedirs(sdir, exist_ok=True)
        sctx = ScenarioCtx(sdir)
        failure, problems, elapsed = guarded(lambda c: sc(env.for_scenario(c, sc.__name__)),
                                             sctx, getattr(sc, "timeout", 60.0), 30,
                                             lambda: None)
        if problems:
            failure = (failure or "") + "".join("problem: %s\n" % p for p in problems)
        if failure:
            failed += 1
            print("not ok %s (%.1f s)\n%s" % (full, elapsed, _indent(failure)), flush=True)
            print(_indent(adapter.log_tail()), flush=True)
        else:
            passed += 1
            if verbose:
                print("ok %s (%.1f s)" % (full, elapsed), flush=True)
    problems = []
    try:
        adapter.teardown()
    except Exception as e:  # noqa: BLE001
        problems.append("teardown failed: %r" % (e,))
    problems += ctx.finish()
    if problems:
        failed += 1
        print("not ok %s.teardown\n%s" % (cls.name, _indent("\n".join(problems))), flush=True)
    print("== adapter %s: %d passed, %d failed, %d n/a, %.1f s"
          % (cls.name, passed, failed, na, time.monotonic() - t0), flush=True)
    return passed, failed, na


def _indent(text):
    return "\n".join("  " + line for line in text.rstrip("\n").splitlines())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the fencelockd binary")
    ap.add_argument("--adapter", action="append", default=[], help="only this adapter (repeat)")
    ap.add_argument("-k", action="append", default=[], help="only scenarios matching (repeat)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("-v", action="store_true", help="print passing tests too")
    args = ap.parse_args()
    rows = adapters.ADAPTERS
    if args.adapter:
        unknown = set(args.adapter) - {a.name for a in rows}
        if unknown:
            raise SystemExit("no adapter named %s" % ", ".join(sorted(unknown)))
        rows = [a for a in rows if a.name in args.adapter]
    root = tempfile.mkdtemp(prefix="fencelock-fencing-")
    passed = failed = 0
    try:
        for cls in rows:
            p, f, _ = run_adapter(args.bin, root, cls, args.k, args.v)
            passed += p
            failed += f
    finally:
        if args.keep or failed:
            print("# work directory kept: %s" % root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    print("tests: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
