#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Integration test runner for fencelockd (black box, standard library only).

  python3 tests/integration/run.py --bin build/asan/fencelockd [-k PATTERN ...] [--list]
                                   [-j JOBS] [--repeat N] [-v]

Discovers tests/integration/test_*.py and their test_* functions (in file order), runs each
with a fresh context (servers start on demand: ctx.server(...) / ctx.conn()) and prints
`not ok NAME` followed by the failure (traceback and the tail of every server log), a line per
test file once all its tests ran (`== test_auth: 12 passed, 0 failed, 31.2 s`), the ten
slowest tests, and finally `tests: N passed, N failed`. Exit status 1 on any failure.

-j JOBS (default: the number of CPUs, at most 4; FL_TEST_JOBS sets it too) runs that many
tests at once, each in a worker process of its own with its own slice of loopback ports
(server.port_range), longest first (by the durations of the last run in
build/integration-times.json, else by each test's declared timeout). Every test has its own
ports, directories and servers, so tests do not see each other; they must not depend on the
machine being quiet either (docs/testing.md). --repeat N runs every selected test N times
(names get a #i suffix), to hunt a test that fails now and then. -v prints `ok NAME` too.

A test fails also when a server it started printed a sanitizer report, exited by itself,
exited non-zero after SIGTERM, or had to be SIGKILLed at shutdown.
"""

import argparse
import fnmatch
import importlib.util
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from guard import guarded  # noqa: E402
from resp import Conn  # noqa: E402
from server import Server  # noqa: E402

DEFAULT_TEST_TIMEOUT = 60.0



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


def run_one(binary, root, full, fn):
    workdir = os.path.join(root, full.replace(".", "__"))
    os.makedirs(workdir, exist_ok=True)
    ctx = Ctx(binary, workdir, full)

    def force():
        for s in ctx.servers:
            s.force_cleanup()

    failure, problems, elapsed = guarded(fn, ctx, getattr(fn, "timeout", DEFAULT_TEST_TIMEOUT), 60,
                                         force)
    if problems:
        failure = (failure or "") + "".join("server problem: %s\n" % p for p in problems)
    return failure, elapsed, ctx


TIMES = os.path.join(HERE, "..", "..", "build", "integration-times.json")


def report(full, failure, elapsed, ctx):
    """What the parent prints for one test: (name, failure text or None, seconds)."""
    if failure is not None:
        for s in ctx.servers:
            failure += "--- tail of %s\n" % s.log_path
            failure += "".join("| " + line + "\n" for line in s.log_tail(40).splitlines())
    return full, failure, elapsed


def worker(idx, jobs, binary, root, tests, todo, done):
    """A worker process: its own slice of the runner's ports (server.port_range: 20000-32767,
    or FL_TEST_PORTS when the caller gives the runner a range), then tests by index from
    `todo` until None."""
    import server as server_mod
    lo, hi = server_mod.port_range()
    width = (hi - lo + 1) // jobs
    os.environ["FL_TEST_PORTS"] = "%d-%d" % (lo + idx * width, lo + (idx + 1) * width - 1)
    server_mod._rng.seed(os.getpid() ^ int(time.time() * 1000))
    while True:
        i = todo.get()
        if i is None:
            return
        full, fn = tests[i]
        try:
            done.put(report(full, *run_one(binary, root, full, fn)))
        except KeyboardInterrupt:
            return
        except BaseException:  # noqa: BLE001 - the runner itself must go on
            done.put((full, "runner error:\n" + traceback.format_exc(), 0.0))


def load_times():
    try:
        with open(TIMES) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save_times(times):
    try:
        os.makedirs(os.path.dirname(TIMES), exist_ok=True)
        with open(TIMES, "w") as f:
            json.dump(times, f, indent=0, sort_keys=True)
    except OSError:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="path of fencelockd")
    ap.add_argument("-k", action="append", default=[], help="substring or glob of test names")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep temp dirs even when all pass")
    ap.add_argument("-j", "--jobs", type=int,
                    default=int(os.environ.get("FL_TEST_JOBS", min(4, os.cpu_count() or 1))))
    ap.add_argument("--repeat", type=int, default=1, help="run every selected test N times")
    ap.add_argument("-v", "--verbose", action="store_true", help="print `ok NAME` lines too")
    a = ap.parse_args()

    found = discover(a.k)
    if a.list:
        for full, _ in found:
            print(full)
        return 0
    tests = [("%s#%d" % (full, r + 1) if a.repeat > 1 else full, fn)
             for full, fn in found for r in range(max(1, a.repeat))]
    if not os.path.isfile(a.bin) or not os.access(a.bin, os.X_OK):
        print("not ok setup: %s is not an executable" % a.bin)
        print("tests: 0 passed, %d failed" % max(1, len(tests)))
        return 1
    binary = os.path.abspath(a.bin)
    root = tempfile.mkdtemp(prefix="fencelock-it-")
    jobs = max(1, min(a.jobs, len(tests) or 1))
    times = load_times()
    base = lambda full: full.split("#")[0]  # noqa: E731
    order = sorted(range(len(tests)), key=lambda i: -times.get(
        base(tests[i][0]), getattr(tests[i][1], "timeout", DEFAULT_TEST_TIMEOUT) / 10))
    left = {}  # test file -> tests of it not yet done
    for full, _ in tests:
        mod = full.split(".")[0]
        left[mod] = left.get(mod, 0) + 1
    group = {}  # test file -> [passed, failed, seconds]
    print("# %d tests, %d at a time" % (len(tests), jobs), flush=True)

    ctxm = multiprocessing.get_context("fork")
    todo, done = ctxm.Queue(), ctxm.Queue()
    for i in order:
        todo.put(i)
    for _ in range(jobs):
        todo.put(None)
    procs = [ctxm.Process(target=worker, args=(w, jobs, binary, root, tests, todo, done))
             for w in range(jobs)]
    for p in procs:
        p.start()
    passed = failed = 0
    elapsed_of = {}
    t_all = time.monotonic()
    try:
        for _ in range(len(tests)):
            while True:
                try:
                    full, failure, elapsed = done.get(timeout=5)
                    break
                except Exception:  # noqa: BLE001 - queue.Empty: is every worker still there?
                    if not any(p.is_alive() for p in procs):
                        raise RuntimeError("every worker exited with tests left")
            elapsed_of[full] = elapsed
            mod = full.split(".")[0]
            g = group.setdefault(mod, [0, 0, 0.0])
            g[2] += elapsed
            if failure is None:
                passed += 1
                g[0] += 1
                if a.verbose:
                    print("ok %s (%.2f s)" % (full, elapsed), flush=True)
            else:
                failed += 1
                g[1] += 1
                print("not ok %s (%.2f s)" % (full, elapsed))
                for line in failure.rstrip().splitlines():
                    print("    " + line)
                sys.stdout.flush()
            left[mod] -= 1
            if left[mod] == 0:
                print("== %s: %d passed, %d failed, %.1f s" % (mod, g[0], g[1], g[2]), flush=True)
    except KeyboardInterrupt:
        for p in procs:
            p.join(60)
        raise
    except RuntimeError as e:
        print("not ok runner: %s" % e)
        failed += len(tests) - passed - failed
    for p in procs:
        p.join(60)
    slow = sorted(elapsed_of.items(), key=lambda kv: -kv[1])[:10]
    print("# the ten slowest:")
    for full, el in slow:
        print("#   %7.2f s  %s" % (el, full))
    print("# total %.1f s with %d workers; work dir %s" % (
        time.monotonic() - t_all, jobs, root if (failed or a.keep) else "(removed)"))
    if not a.k:  # a whole run: keep the durations for the next one's order
        save_times({base(k): v for k, v in elapsed_of.items()})
    else:
        times.update({base(k): v for k, v in elapsed_of.items()})
        save_times(times)
    if not failed and not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    print("tests: %d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
