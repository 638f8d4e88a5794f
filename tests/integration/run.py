#!/usr/bin/python3
"""Integration test runner for fencelockd (black box, standard library only).

  python3 tests/integration/run.py --bin build/asan/fencelockd [-k PATTERN ...] [--list]

Discovers tests/integration/test_*.py and their test_* functions (in file order), runs each
with a fresh context (servers start on demand: ctx.server(...) / ctx.conn()), prints
`ok NAME` or `not ok NAME` followed by the failure (traceback and the tail of every server
log), and finally `tests: N passed, N failed`. Exit status 1 on any failure.

A test fails also when a server it started printed a sanitizer report, exited by itself,
exited non-zero after SIGTERM, or had to be SIGKILLed at shutdown.
"""

import argparse
import fnmatch
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from resp import Conn  # noqa: E402
from server import Server  # noqa: E402

DEFAULT_TEST_TIMEOUT = 60.0


class TestTimeout(Exception):
    pass


class Ctx:
    """What a test function receives."""

    def __init__(self, binary, workdir, name):
        self.binary = binary
        self.workdir = workdir
        self.name = name
        self.servers = []
        self.conns = []
        self.cleanups = []
        self._default = None

    def server(self, *args, env=None, start=True):
        """Start (and wait for) a fencelockd with extra command-line args."""
        wd = os.path.join(self.workdir, "srv%d" % (len(self.servers) + 1))
        s = Server(self.binary, wd, args=args, env=env)
        self.servers.append(s)
        if self._default is None:
            self._default = s
        if start:
            s.start()
        return s

    @property
    def srv(self):
        if self._default is None:
            self.server()
        return self._default

    def conn(self, srv=None, timeout=10.0):
        s = srv or self.srv
        c = Conn(s.port, timeout=timeout, ssl_context=getattr(s, "tls", None))
        self.conns.append(c)
        return c

    def tmp(self, name):
        return os.path.join(self.workdir, name)

    def defer(self, fn):
        self.cleanups.append(fn)

    def finish(self):
        """Close everything; return the list of problems found at shutdown."""
        problems = []
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                problems.append("cleanup failed: %r" % (e,))
        for c in self.conns:
            c.close()
        for s in self.servers:
            try:
                if s.proc is not None:
                    s.stop()
            except Exception as e:  # noqa: BLE001
                problems.append("stopping server failed: %r" % (e,))
            finally:
                s.force_cleanup()
            rep = s.sanitizer_report()
            if rep:
                problems.append("sanitizer report in %s:\n%s" % (s.log_path, rep))
            problems.extend(s.problems)
        return problems


def discover(patterns):
    tests = []
    for fn in sorted(os.listdir(HERE)):
        if not (fn.startswith("test_") and fn.endswith(".py")):
            continue
        modname = fn[:-3]
        spec = importlib.util.spec_from_file_location(modname, os.path.join(HERE, fn))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name, obj in list(vars(mod).items()):
            if name.startswith("test_") and callable(obj) and getattr(obj, "__module__", "") \
                    == modname:
                full = "%s.%s" % (modname, name)
                if patterns and not any(
                        (fnmatch.fnmatch(full, p) if any(ch in p for ch in "*?[") else p in full)
                        for p in patterns):
                    continue
                tests.append((full, obj))
    return tests


def _alarm(signum, frame):
    raise TestTimeout("test exceeded its time limit")


def run_one(binary, root, full, fn):
    workdir = os.path.join(root, full.replace(".", "__"))
    os.makedirs(workdir, exist_ok=True)
    ctx = Ctx(binary, workdir, full)
    failure = None
    limit = getattr(fn, "timeout", DEFAULT_TEST_TIMEOUT)
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.monotonic()
    try:
        fn(ctx)
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            signal.setitimer(signal.ITIMER_REAL, 0)
            ctx.finish()
            raise
        failure = traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        signal.setitimer(signal.ITIMER_REAL, 60)
        problems = ctx.finish()
    except TestTimeout:
        problems = ["shutdown exceeded 60 s"]
        for s in ctx.servers:
            s.force_cleanup()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.monotonic() - t0
    if problems:
        failure = (failure or "") + "".join("server problem: %s\n" % p for p in problems)
    return failure, elapsed, ctx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="path of fencelockd")
    ap.add_argument("-k", action="append", default=[], help="substring or glob of test names")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep temp dirs even when all pass")
    a = ap.parse_args()

    tests = discover(a.k)
    if a.list:
        for full, _ in tests:
            print(full)
        return 0
    if not os.path.isfile(a.bin) or not os.access(a.bin, os.X_OK):
        print("not ok setup: %s is not an executable" % a.bin)
        print("tests: 0 passed, %d failed" % max(1, len(tests)))
        return 1
    binary = os.path.abspath(a.bin)
    root = tempfile.mkdtemp(prefix="fencelock-it-")
    passed = failed = 0
    t_all = time.monotonic()
    for full, fn in tests:
        failure, elapsed, ctx = run_one(binary, root, full, fn)
        if failure is None:
            passed += 1
            print("ok %s" % full, flush=True)
        else:
            failed += 1
            print("not ok %s" % full)
            for line in failure.rstrip().splitlines():
                print("    " + line)
            for s in ctx.servers:
                print("    --- tail of %s" % s.log_path)
                for line in s.log_tail(40).splitlines():
                    print("    | " + line)
            sys.stdout.flush()
        print("# %s: %.2f s" % (full, elapsed), flush=True)
    print("# total %.1f s; work dir %s" % (time.monotonic() - t_all,
                                          root if (failed or a.keep) else "(removed)"))
    if not failed and not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    print("tests: %d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
