#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The conformance suite: every scenario (scenarios.py) against every client's agent
(PROTOCOL.md), each against 3 real fencelockd processes. Standard library only.

  python3 tests/conformance/run.py --bin build/asan/fencelockd [--agent NAME]... [-k PATTERN]...
                                   [-j JOBS] [--keep] [-v]

Agents are tests/conformance/agents/*.json, one per client:
  {"name": "c", "build": [argv...] or null, "run": [argv...], "cwd": "repo-relative dir"}
Each selected agent is built once (its `build` argv in its `cwd`), then every scenario runs
against it; one test is one scenario x one agent. An agent that does not build, or whose
toolchain is missing, FAILS every scenario (it is not skipped: `make test` installs the
toolchains). --agent picks agents by name, -k scenarios by substring.

Prints `not ok AGENT.SCENARIO` with the failure and the tails of the logs, `ok ...` with -v,
a line per agent once its scenarios ran (`== agent c: 10 passed, 0 failed, 61.2 s of work`),
and finally `tests: N passed, N failed`. Exit status 1 on any failure.

-j JOBS (default: the number of CPUs, at most 4; FL_TEST_JOBS too) runs that many tests at
once, each in a worker process with its own slice of FL_TEST_PORTS (the range the caller
gives, default 20000-32767). The scenarios that drop packets need root (iptables, cgroup v2),
as the torture suite does.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [HERE, os.path.join(REPO, "tests", "integration"),
                os.path.join(REPO, "tests", "torture")]

import agent as agent_mod  # noqa: E402
import faults  # noqa: E402
from guard import guarded  # noqa: E402
import scenarios  # noqa: E402
import server as server_mod  # noqa: E402

AGENTS_DIR = os.path.join(HERE, "agents")
BUILD_TIMEOUT = 900  # a first Maven or npm build downloads its pinned dependencies



def load_agents(names):
    """The agents/*.json specs, by name; those named by --agent only (an unknown name is an
    error)."""
    specs = []
    for fn in sorted(os.listdir(AGENTS_DIR)):
        if not fn.endswith(".json"):
            continue
        with open(os.path.join(AGENTS_DIR, fn)) as f:
            spec = json.load(f)
        for k in ("name", "run"):
            if k not in spec:
                raise SystemExit("%s: no %r" % (fn, k))
        specs.append(spec)
    if names:
        unknown = set(names) - {s["name"] for s in specs}
        if unknown:
            raise SystemExit("no agent named %s in %s" % (", ".join(sorted(unknown)), AGENTS_DIR))
        specs = [s for s in specs if s["name"] in names]
    return specs


def runnable(spec):
    """None if the agent's program is there to run, else why not (a missing runtime)."""
    prog = spec["run"][0] if spec["run"] else ""
    cwd = os.path.join(REPO, spec.get("cwd") or ".")
    if "/" in prog:
        ok = os.access(os.path.join(cwd, prog), os.X_OK)
    else:
        ok = shutil.which(prog) is not None
    return None if ok else "toolchain missing: cannot run %r (from %s)" % (prog, cwd)


def build(spec, logdir):
    """Build one agent: None, or why it failed (the log's tail, or what is missing)."""
    if not spec.get("build"):
        return runnable(spec)
    log = os.path.join(logdir, "build-%s.log" % spec["name"])
    try:
        with open(log, "wb") as f:
            p = subprocess.run(spec["build"], cwd=os.path.join(REPO, spec.get("cwd") or "."),
                               stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                               timeout=BUILD_TIMEOUT)
    except FileNotFoundError as e:
        return "toolchain missing: %s" % e
    except (OSError, subprocess.SubprocessError) as e:
        return "build did not run: %s" % e
    if p.returncode == 0:
        return runnable(spec)
    with open(log, "rb") as f:
        tail = f.read().decode("utf-8", "replace").splitlines()[-30:]
    return "build exited %d (%s):\n%s" % (p.returncode, " ".join(spec["build"]),
                                         "\n".join("| " + x for x in tail))


class Secure:
    """The torture suite's --secure material (tests/torture/secure.py: CAs, node and peer
    certificates, the ACL file), made once per run, plus a CA nobody's certificate chains to."""

    def __init__(self, binary, root):
        import secure
        self.s = secure.Secure(binary, root)
        self.user = secure.USER
        self.other_ca = os.path.join(self.s.dir, "other-ca.crt")
        secure._run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                     "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "other-ca.key",
                     "-out", "other-ca.crt", "-days", "30", "-subj", "/CN=another CA"],
                    self.s.dir)

    def __getattr__(self, name):
        return getattr(self.s, name)


class Ctx:
    """What a scenario receives: the servers it starts (cluster.new_server appends to
    .servers), the agents it starts (ctx.agent), clean-ups, the run's TLS material."""

    def __init__(self, binary, workdir, spec, secure_fn):
        self.binary, self.workdir, self.spec = binary, workdir, spec
        self.servers, self.agents, self.cleanups = [], [], []
        self._secure_fn = secure_fn

    def secure(self):
        return self._secure_fn()

    def defer(self, fn):
        self.cleanups.append(fn)

    def tmp(self, name):
        return os.path.join(self.workdir, name)

    def agent(self, servers, label=None, timeout=None, cgroup=False, ready=True, **env):
        """Start this run's agent on `servers` (FL_ENDPOINTS), with FL_TIMEOUT = timeout
        seconds and any other PROTOCOL.md variable given; wait for its ready line (ready=False:
        the caller reads it)."""
        label = label or "agent%d" % (len(self.agents) + 1)
        env = dict(env, FL_ENDPOINTS=faults.endpoints(servers))
        if timeout is not None:
            env["FL_TIMEOUT"] = "%g" % timeout
        a = agent_mod.Agent(self.spec, REPO, self.workdir, label, env, cgroup=cgroup)
        self.agents.append(a)
        if ready:
            a.expect_ready()
        return a

    def finish(self):
        problems = []
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                problems.append("cleanup failed: %r" % (e,))
        for s in self.servers:
            s.sigcont()
        for a in self.agents:
            a.quit()
            rep = a.sanitizer_report()
            if rep:
                problems.append("sanitizer report in %s:\n%s" % (a.log_path, rep))
            problems.extend(a.problems)
        for s in self.servers:
            try:
                if s.proc is not None:
                    s.stop()
            except Exception as e:  # noqa: BLE001
                problems.append("stopping a server failed: %r" % (e,))
            finally:
                s.force_cleanup()
        problems.extend(faults.server_problems(self.servers))
        return problems

    def tails(self):
        out = ""
        for a in self.agents:
            out += "--- tail of %s\n%s\n" % (a.log_path, a._tail(20).replace("\n    ", "\n"))
        for s in self.servers:
            out += "--- tail of %s\n" % s.log_path
            out += "".join("| " + line + "\n" for line in s.log_tail(25).splitlines())
        return out


def run_one(binary, root, spec, name, fn, secure_fn):
    full = "%s.%s" % (spec["name"], name)
    workdir = os.path.join(root, full)
    os.makedirs(workdir, exist_ok=True)
    ctx = Ctx(binary, workdir, spec, secure_fn)

    def force():
        for s in ctx.servers:
            s.force_cleanup()
        for a in ctx.agents:
            a.kill()

    failure, problems, elapsed = guarded(fn, ctx, getattr(fn, "timeout", 90), 90, force)
    if problems:
        failure = (failure or "") + "".join("problem: %s\n" % p for p in problems)
    if failure is not None:
        failure += ctx.tails()
    return full, failure, elapsed


def worker(idx, jobs, binary, root, tests, secure_fn, todo, done):
    lo, hi = server_mod.port_range()
    width = (hi - lo + 1) // jobs
    os.environ["FL_TEST_PORTS"] = "%d-%d" % (lo + idx * width, lo + (idx + 1) * width - 1)
    server_mod._rng.seed(os.getpid() ^ int(time.time() * 1000))
    while True:
        i = todo.get()
        if i is None:
            return
        spec, name, fn, broken = tests[i]
        full = "%s.%s" % (spec["name"], name)
        if broken:
            done.put((full, "agent %s: %s\n" % (spec["name"], broken), 0.0))
            continue
        try:
            done.put(run_one(binary, root, spec, name, fn, secure_fn))
        except KeyboardInterrupt:
            return
        except BaseException:  # noqa: BLE001 - the runner itself must go on
            done.put((full, "runner error:\n" + traceback.format_exc(), 0.0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="path of fencelockd")
    ap.add_argument("--agent", action="append", default=[], help="an agent's name (repeatable)")
    ap.add_argument("-k", action="append", default=[], help="substring of scenario names")
    ap.add_argument("-j", "--jobs", type=int,
                    default=int(os.environ.get("FL_TEST_JOBS", min(4, os.cpu_count() or 1))))
    ap.add_argument("--keep", action="store_true", help="keep the work dir even when all pass")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true", help="print `ok NAME` lines too")
    a = ap.parse_args()

    specs = load_agents(a.agent)
    found = [(n, f) for n, f in scenarios.discover() if not a.k or any(k in n for k in a.k)]
    if a.list:
        for spec in specs:
            for n, _ in found:
                print("%s.%s" % (spec["name"], n))
        return 0
    n_tests = len(specs) * len(found)
    if not os.path.isfile(a.bin) or not os.access(a.bin, os.X_OK):
        print("not ok setup: %s is not an executable" % a.bin)
        print("tests: 0 passed, %d failed" % max(1, n_tests))
        return 1
    binary = os.path.abspath(a.bin)
    root = tempfile.mkdtemp(prefix="fencelock-conf-")

    t_all = time.monotonic()
    broken = {}
    for spec in specs:
        t0 = time.monotonic()
        why = build(spec, root)
        print("# agent %s: %s (%.1f s)" % (spec["name"], "built" if why is None else "NOT BUILT",
                                           time.monotonic() - t0), flush=True)
        if why:
            broken[spec["name"]] = why
    secure_box = []

    def secure_fn():
        if not secure_box:
            secure_box.append(Secure(binary, root))
        return secure_box[0]
    if any(getattr(f, "needs_secure", False) for _, f in found) and \
            len(broken) < len(specs):
        secure_fn()  # once, before the workers fork

    tests = [(spec, n, f, broken.get(spec["name"])) for n, f in found for spec in specs]
    # longest first: the fault scenarios' bounds are the longest
    order = sorted(range(len(tests)), key=lambda i: -getattr(tests[i][2], "timeout", 90))
    jobs = max(1, min(a.jobs, len(tests) or 1))
    print("# %d tests (%d scenarios x %d agents), %d at a time" % (
        len(tests), len(found), len(specs), jobs), flush=True)
    ctxm = multiprocessing.get_context("fork")
    todo, done = ctxm.Queue(), ctxm.Queue()
    for i in order:
        todo.put(i)
    for _ in range(jobs):
        todo.put(None)
    procs = [ctxm.Process(target=worker, args=(w, jobs, binary, root, tests, secure_fn, todo,
                                               done)) for w in range(jobs)]
    for p in procs:
        p.start()
    per_agent = {s["name"]: [0, 0, 0.0, len(found)] for s in specs}
    passed = failed = 0
    try:
        for _ in range(len(tests)):
            while True:
                try:
                    full, failure, elapsed = done.get(timeout=5)
                    break
                except Exception:  # noqa: BLE001 - queue.Empty: is every worker alive?
                    if not any(p.is_alive() for p in procs):
                        raise RuntimeError("every worker exited with tests left")
            name = full.split(".")[0]
            g = per_agent[name]
            g[2] += elapsed
            g[3] -= 1
            if failure is None:
                passed += 1
                g[0] += 1
                if a.verbose:
                    print("ok %s (%.1f s)" % (full, elapsed), flush=True)
            else:
                failed += 1
                g[1] += 1
                print("not ok %s (%.1f s)" % (full, elapsed))
                for line in failure.rstrip().splitlines():
                    print("    " + line)
                sys.stdout.flush()
            if g[3] == 0:
                print("== agent %s: %d passed, %d failed, %.1f s of work" % (name, g[0], g[1],
                                                                            g[2]), flush=True)
    except RuntimeError as e:
        print("not ok runner: %s" % e)
        failed = len(tests) - passed
    for p in procs:
        p.join(60)
    faults.cleanup_rules()
    print("# total %.1f s with %d workers; work dir %s" % (
        time.monotonic() - t_all, jobs, root if (failed or a.keep) else "(removed)"))
    if not failed and not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    print("tests: %d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
