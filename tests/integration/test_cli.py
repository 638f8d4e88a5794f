# SPDX-License-Identifier: Apache-2.0
"""The fencelock command-line tool (docs/fencelock.1) against real servers.

The CLI is the `fencelock` beside the fencelockd under test (build/asan/fencelock for
build/asan/fencelockd). What must hold:
  - `fencelock lock NAME -- CMD` runs CMD under the lock: two of them never overlap, tokens grow;
  - CMD is dead before its session's lease can have run out on the servers (servers SIGSTOPped);
  - exit codes: CMD's status, 128+N, 3 not obtained within --wait, 4 unreachable, 2 usage,
    5 lock lost, 127 not found;
  - signals reach CMD's process group; the lock is released (no lock-delay) when CMD ends;
  - CMD gets the terminal (input, Ctrl-C, Ctrl-\\, Ctrl-Z and fg) under an interactive bash;
  - nothing CMD started outlives it, the lease, or a kill -9 of the CLI;
  - the inspection and admin subcommands print what the RESP commands see (--json parsed).
"""

import json
import os
import pty
import random
import re
import select
import shutil
import signal
import subprocess
import time

from cluster import ready_leader, start_cluster
from helpers import (eq, expect_err, expect_int, expect_ok, kv_get, lock_info, ok, session_info,
                     wait_until, waiters)
from resp import Conn, as_map, text
from server import SANITIZER_PATTERNS, free_port

STAMP = "python3 -c 'import time; print(time.monotonic_ns())'"


def cli_path(ctx):
    return os.path.join(os.path.dirname(ctx.binary), "fencelock")


def endpoints(servers):
    return ",".join("127.0.0.1:%d" % s.port for s in servers)


def cli_env(extra=None):
    env = dict(os.environ)
    env.pop("FENCELOCK_ENDPOINTS", None)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    env.update(extra or {})
    return env


def check_clean(stderr, what):
    for p in SANITIZER_PATTERNS:
        if p in stderr:
            raise AssertionError("%s: sanitizer report from the CLI:\n%s" % (what, stderr))


class Result:
    def __init__(self, rc, out, err, secs):
        self.rc, self.out, self.err, self.secs = rc, out, err, secs

    def __repr__(self):
        return "rc=%d out=%r err=%r" % (self.rc, self.out, self.err)


# Signals whose disposition a test of the CLI depends on. Ignored ones survive exec, so a suite
# started under nohup (SIGHUP) or as a background job of a script (SIGINT, SIGQUIT) would hand
# its CLI and commands an ignored signal that the tests expect to end them.
TEST_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGTSTP)


def default_signals():
    """preexec_fn: every signal of TEST_SIGNALS at its default disposition."""
    for sig in TEST_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


def run(ctx, servers, *args, timeout=20, stdin=None, env=None):
    """Run the CLI to completion; fails on a sanitizer report. servers None: no --endpoints."""
    argv = [cli_path(ctx)]
    if servers is not None:
        argv += ["--endpoints", endpoints(servers)]
    argv += [str(a) for a in args]
    t0 = time.monotonic()
    p = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout,
                       env=cli_env(env), cwd=ctx.workdir, preexec_fn=default_signals)
    secs = time.monotonic() - t0
    err = p.stderr.decode("utf-8", "replace")
    check_clean(err, " ".join(argv[1:]))
    return Result(p.returncode, p.stdout.decode("utf-8", "replace"), err, secs)


def run_ok(ctx, servers, *args, **kw):
    r = run(ctx, servers, *args, **kw)
    if r.rc != 0:
        raise AssertionError("fencelock %s: %r" % (" ".join(map(str, args)), r))
    return r


def run_json(ctx, servers, *args):
    return json.loads(run_ok(ctx, servers, "--json", *args).out)


def spawn(ctx, servers, *args, env=None):
    """Start the CLI in the background (stdout/stderr to files); killed at cleanup."""
    argv = [cli_path(ctx), "--endpoints", endpoints(servers)] + [str(a) for a in args]
    n = len(ctx.cleanups)
    out = open(ctx.tmp("cli%d.out" % n), "wb")
    err = open(ctx.tmp("cli%d.err" % n), "wb")
    p = subprocess.Popen(argv, stdout=out, stderr=err, env=cli_env(env), cwd=ctx.workdir,
                         preexec_fn=default_signals)
    out.close()
    err.close()
    p.out_path, p.err_path = ctx.tmp("cli%d.out" % n), ctx.tmp("cli%d.err" % n)

    def cleanup():
        if p.poll() is None:
            p.kill()
            p.wait(10)
    ctx.defer(cleanup)
    return p


def stuck_report(pid):
    """What a process that did not exit is doing: its threads' states and kernel wait
    channels, its descendants (ps), and a backtrace of every thread when gdb is installed."""
    out = []
    for tid in sorted(os.listdir("/proc/%d/task" % pid)) if os.path.isdir("/proc/%d" % pid) else []:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                st = f.read().rsplit(")", 1)[1].split()[0]
            with open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
                out.append("thread %s: state %s, wchan %s" % (tid, st, f.read()))
        except OSError:
            pass
    ps = subprocess.run(["ps", "-eo", "pid,ppid,pgid,stat,wchan:20,args"], capture_output=True,
                        text=True, timeout=20).stdout.splitlines()
    kids, todo = set(), {str(pid)}
    while todo:
        nxt = {l.split()[0] for l in ps[1:] if l.split()[1] in todo} - kids
        kids |= nxt
        todo = nxt
    out += [ps[0]] + [l for l in ps[1:] if l.split()[0] in kids | {str(pid)}]
    if shutil.which("gdb"):
        out.append(subprocess.run(["gdb", "-batch", "-p", str(pid), "-ex",
                                   "thread apply all bt"], capture_output=True, text=True,
                                  timeout=60).stdout[-6000:])
    return "\n".join(out)


def finish(p, timeout=20):
    """Wait for a spawned CLI; return (rc, stdout, stderr), failing on a sanitizer report."""
    try:
        rc = p.wait(timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError("fencelock (pid %d) did not exit within %d s:\n%s"
                             % (p.pid, timeout, stuck_report(p.pid)))
    with open(p.out_path, "rb") as f:
        out = f.read().decode("utf-8", "replace")
    with open(p.err_path, "rb") as f:
        err = f.read().decode("utf-8", "replace")
    check_clean(err, "background fencelock")
    return rc, out, err


def read_file(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def wait_pid_file(path, p, timeout=10):
    def got():
        if p.poll() is not None:
            raise AssertionError("fencelock exited with %s before its command started: %s"
                                 % (p.returncode, read_file(p.err_path)))
        s = read_file(path).strip()
        return int(s) if s.isdigit() else None
    return wait_until(got, timeout=timeout, interval=0.01, what="the command's pid in " + path)


def dead(pid):
    """True once the process is gone or a zombie (it runs nothing any more)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def leader_conn(ctx, servers):
    return ctx.conn(ready_leader(servers))


# ---------------------------------------------------------------------------------------------
# 1. Two commands under one lock never overlap


def test_cli_lock_serializes_two_commands(ctx):
    servers = start_cluster(ctx)
    ready_leader(servers)
    f, g = ctx.tmp("F"), ctx.tmp("G")
    script = ('S=$(%s); echo $FENCELOCK_TOKEN >> %s; sleep 1; E=$(%s); '
              'echo "$FENCELOCK_TOKEN $S $E" >> %s' % (STAMP, f, STAMP, g))
    ps = [spawn(ctx, servers, "lock", "job", "--wait", "20s", "--", "sh", "-c", script)
          for _ in range(2)]
    for p in ps:
        rc, out, err = finish(p, timeout=30)
        eq(rc, 0, "exit status of a lock command (stderr %r)" % err)
    tokens = [int(x) for x in read_file(f).split()]
    eq(len(tokens), 2, "F has one line per command")
    assert tokens[0] < tokens[1], "tokens must strictly increase in grant order: %r" % tokens
    runs = sorted((int(s), int(e), int(t)) for t, s, e in
                  (line.split() for line in read_file(g).splitlines()))
    eq(len(runs), 2, "G has one line per command")
    (s1, e1, t1), (s2, e2, t2) = runs
    assert e1 <= s2, "the two commands overlapped: [%d, %d] and [%d, %d] (ns)" % (s1, e1, s2, e2)
    assert t1 < t2, "the command that ran first must have the smaller token: %r" % runs
    assert e1 - s1 >= 1e9 and e2 - s2 >= 1e9, "each command slept 1 s: %r" % runs
    c = leader_conn(ctx, servers)
    eq(lock_info(c, "job"), None, "the lock is free (and nobody waits) after both")


# ---------------------------------------------------------------------------------------------
# 2. The command is dead before the lease can have run out on the servers


def test_cli_kills_command_before_the_lease_can_expire(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    c = ctx.conn(leader)
    pid_path, term_path = ctx.tmp("P"), ctx.tmp("T")
    ttl = 3.0
    # The command survives SIGTERM (the trap only notes it): only the SIGKILL at the safe
    # deadline ends it.
    script = ("trap 'echo term >> %s' TERM; echo $$ > %s; while :; do sleep 0.05; done"
              % (term_path, pid_path))
    p = spawn(ctx, servers, "lock", "job", "--ttl", "3s", "--", "sh", "-c", script)
    pid = wait_pid_file(pid_path, p)
    sid = lock_info(c, "job")["holder"]

    # Freeze every server right after the leader saw a keepalive (its remaining_ms jumped back
    # to the TTL): then the CLI's last acknowledged keepalive was sent just before the freeze,
    # its safe deadline is about TTL later, and a CLI that kills late cannot pass the bound.
    def remaining():
        return as_map(ok(c.call("SESSION.INFO", sid)))["remaining_ms"]
    last = remaining()
    deadline = time.monotonic() + 3 * ttl
    while True:
        assert time.monotonic() < deadline, "no keepalive seen within %.0f s" % (3 * ttl)
        now = remaining()
        if now > last + 100:
            break
        last = now
        time.sleep(0.002)
    assert p.poll() is None and not dead(pid), "the command runs while the lease is renewed"

    def cont():
        for s in servers:
            s.sigcont()
    ctx.defer(cont)
    t_stop = time.monotonic()
    leader.sigstop()
    for s in servers:
        if s is not leader:
            s.sigstop()
    t_dead = wait_until(lambda: dead(pid) and time.monotonic(), timeout=ttl + 5, interval=0.002,
                        what="the command killed after the servers froze")
    killed_after = t_dead - t_stop
    assert killed_after <= ttl, (
        "the command was still alive %.3f s after every server froze: later than the TTL "
        "(%.1f s), so the servers could have expired the session and granted the lock to "
        "someone else while it ran" % (killed_after, ttl))
    assert killed_after >= ttl * 2 / 3 - 0.2, (
        "the command died %.3f s after the freeze: too early to be the lease running out "
        "(the last keepalive was at most TTL/3 before it)" % killed_after)
    assert "term" in read_file(term_path), "SIGTERM (kill grace) came before the SIGKILL"
    cont()
    rc, out, err = finish(p, timeout=20)
    eq(rc, 5, "exit status after the lock was lost (stderr %r)" % err)
    assert "lost" in err, "the CLI says the lock was lost: %r" % err
    print("# killed %.3f s after the freeze (TTL %.1f s)" % (killed_after, ttl))


def test_cli_kills_command_when_its_session_ends_under_it(ctx):
    """The servers say the session is gone (an operator closed it): the next keepalive hears
    -NOSESSION, the library reports the loss, and the command dies long before its TTL."""
    srv = [ctx.srv]
    c = ctx.conn()
    pid_path = ctx.tmp("P")
    p = spawn(ctx, srv, "lock", "job", "--ttl", "6s", "--", "sh", "-c",
              "trap '' TERM; echo $$ > %s; exec sleep 60" % pid_path)
    pid = wait_pid_file(pid_path, p)
    sid = lock_info(c, "job")["holder"]
    t0 = time.monotonic()
    expect_ok(c.call("SESSION.CLOSE", sid))
    wait_until(lambda: dead(pid), timeout=10, interval=0.005, what="the command killed")
    took = time.monotonic() - t0
    assert took < 6 * 2 / 3, "killed %.2f s after the close: the loss was noticed by the " \
        "lease running out, not by the keepalive's -NOSESSION" % took
    rc, out, err = finish(p)
    eq(rc, 5, "lock lost (stderr %r)" % err)
    eq(lock_info(c, "job"), None)


# ---------------------------------------------------------------------------------------------
# 3. Exit codes


def test_cli_exit_codes(ctx):
    srv = [ctx.srv]
    eq(run(ctx, srv, "lock", "j", "--", "sh", "-c", "exit 7").rc, 7, "the command's status")
    eq(run(ctx, srv, "lock", "j", "--", "sh", "-c", "kill -USR1 $$").rc,
       128 + signal.SIGUSR1, "killed by a signal: 128+N")
    r = run(ctx, srv, "lock", "j", "--", "/nonexistent/command")
    eq(r.rc, 127, "command not found")

    c = ctx.conn()
    sid = expect_int(c.call("SESSION.OPEN", 30000))
    tok = expect_int(c.call("LOCK", "j", sid))
    r = run(ctx, srv, "lock", "j", "--wait", "200ms", "--", "touch", ctx.tmp("ran"))
    eq(r.rc, 3, "lock held by someone else, --wait 200ms: %r" % r)
    assert r.secs < 5, "gave up after %.2f s" % r.secs
    assert not os.path.exists(ctx.tmp("ran")), "the command must not run without the lock"
    li = lock_info(c, "j")
    eq((li["holder"], li["token"]), (sid, tok), "the holder keeps the lock")
    eq(li["waiters"], [], "the timed-out wait left no queue entry")
    eq(run(ctx, srv, "lock", "j", "--wait", "0", "--", "true").rc, 3, "--wait 0: try once")
    expect_ok(c.call("UNLOCK", "j", sid))

    dead_ep = "127.0.0.1:%d" % free_port()
    r = run(ctx, None, "--endpoints", dead_ep, "--timeout", "1s", "lock", "j", "--", "true")
    eq(r.rc, 4, "no server reachable: %r" % r)
    assert "fencelock: " in r.err and "unavailable" in r.err, r.err
    r = run(ctx, None, "--endpoints", dead_ep, "--timeout", "500ms", "get", "k")
    eq(r.rc, 4, "get with no server reachable")

    for bad in (["lock"], ["lock", "j", "--ttl", "soon", "--", "true"], ["lock", "j", "--"],
                ["lock", "j", "--bogus"], ["lock", "j", "--ttl", "1s", "--kill-grace", "2s"],
                ["nosuchcommand"], [], ["get"], ["put"], ["fence-check", "j", "x"],
                ["members", "frob"], ["session", "keepalive", "abc"], ["--timeout", "0", "get",
                                                                         "k"]):
        r = run(ctx, srv, *bad)
        eq(r.rc, 2, "usage error for %r: %r" % (bad, r))
        eq(len(r.err.splitlines()), 1, "one line for %r: %r" % (bad, r.err))
        assert "--help" in r.err, "the line says where the help is for %r: %r" % (bad, r.err)
    r = run(ctx, srv, "lock", "j", "echo", "hi")
    eq(r.rc, 2, "a command without '--': %r" % r)
    assert "unexpected argument 'echo'" in r.err and "after '--'" in r.err, r.err
    r = run(ctx, srv, "lock", "")
    eq(r.rc, 2, "an empty lock name is a usage error: %r" % r)
    assert "empty" in r.err and len(r.err.splitlines()) == 1, r.err
    r = run(ctx, None, "--endpoints", "127.0.0.1", "get", "k")
    eq(r.rc, 2, "an endpoint without a port: %r" % r)
    assert "'127.0.0.1' is not HOST:PORT" in r.err, r.err
    r = run(ctx, srv, "lock", "n" * 2000, "--", "true")
    eq(r.rc, 4, "a name over the server's limit is refused: %r" % r)
    assert "TOOLARGE" in r.err and "2000 bytes" in r.err and len(r.err) < 400, \
        "the message does not repeat a 2000-byte name: %r" % r.err
    # Nothing listens: a few refused connections, then the error, long before --timeout.
    r = run(ctx, None, "--endpoints", dead_ep, "--timeout", "60s", "get", "k", timeout=30)
    eq(r.rc, 4, "refused: %r" % r)
    assert "refused" in r.err and len(r.err.splitlines()) == 1, r.err
    r = run_ok(ctx, None, "--help")
    assert "EXIT" in r.out.upper() and "lock NAME" in r.out, r.out
    for sub in ("lock", "get", "put", "del", "keys", "lock-info", "locks", "fence-check", "status",
                "members", "session", "watch"):
        r = run_ok(ctx, None, sub, "--help")
        assert r.out.startswith("usage: fencelock " + sub), (sub, r.out)
    assert run_ok(ctx, None, "--version").out.startswith("fencelock ")
    eq(lock_info(c, "j"), None, "every CLI released what it took")


# ---------------------------------------------------------------------------------------------
# 4. Signals reach the command; the lock is released afterwards


def test_cli_forwards_signals_and_releases(ctx):
    srv = [ctx.srv]
    c = ctx.conn()
    pid_path, f = ctx.tmp("P"), ctx.tmp("F")
    script = ("trap 'echo usr1 >> %s' USR1; trap 'echo term >> %s; exit 3' TERM; echo $$ > %s; "
              "while :; do sleep 0.05; done" % (f, f, pid_path))
    p = spawn(ctx, srv, "lock", "job", "--ttl", "5s", "--", "sh", "-c", script)
    pid = wait_pid_file(pid_path, p)
    li = lock_info(c, "job")
    assert li and li["holder"] != 0, "the CLI holds the lock while the command runs: %r" % li
    eq(os.getpgid(pid), pid, "the command leads a process group of its own")
    p.send_signal(signal.SIGUSR1)
    wait_until(lambda: "usr1" in read_file(f), timeout=5, what="SIGUSR1 reaching the command")
    assert p.poll() is None, "SIGUSR1 does not end the CLI"
    p.send_signal(signal.SIGTERM)
    rc, out, err = finish(p)
    eq(rc, 3, "the command's exit status from its TERM trap (stderr %r)" % err)
    eq(read_file(f).split(), ["usr1", "term"], "both signals reached the command, in order")
    eq(lock_info(c, "job"), None, "LOCK.INFO: no holder once the CLI is gone")
    expect_err(c.call("SESSION.KEEPALIVE", li["holder"]), "NOSESSION",
               "the CLI closed its session")


def test_cli_cancelled_wait_hold_mode_and_process_group(ctx):
    srv = [ctx.srv]
    c = ctx.conn()
    pid_path = ctx.tmp("P")
    sid = expect_int(c.call("SESSION.OPEN", 30000))
    tok = expect_int(c.call("LOCK", "busy", sid))
    # SIGINT while waiting for a held lock: the CLI gives up at once and leaves no waiter.
    p = spawn(ctx, srv, "lock", "busy", "--", "touch", ctx.tmp("ran"))
    wait_until(lambda: len(waiters(c, "busy")) == 1, timeout=10, what="the CLI queued")
    cli_sid = waiters(c, "busy")[0]
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    rc, out, err = finish(p, timeout=10)
    eq(rc, 128 + signal.SIGINT, "interrupted while waiting (stderr %r)" % err)
    assert time.monotonic() - t0 < 5, "the wait ended promptly"
    eq(waiters(c, "busy"), [], "no orphaned queue entry")
    assert isinstance(session_info(c, cli_sid), Exception), "the waiting session was closed"
    assert not os.path.exists(ctx.tmp("ran"))
    eq(lock_info(c, "busy")["token"], tok)

    # Hold mode: prints the token, holds until SIGTERM, then releases.
    p = spawn(ctx, srv, "lock", "held")
    wait_until(lambda: read_file(p.out_path).strip().isdigit(), timeout=10,
               what="the token printed")
    token = int(read_file(p.out_path))
    li = lock_info(c, "held")
    eq(li["token"], token, "the printed token is the holder's")
    p.send_signal(signal.SIGTERM)
    rc, out, err = finish(p)
    eq(rc, 0, "hold mode ends cleanly on SIGTERM (stderr %r)" % err)
    eq(lock_info(c, "held"), None, "released after the hold")

    # Environment and process group: a grandchild sees the variables and dies with the group.
    script = ("sleep 60 & echo $! > %s; echo \"$FENCELOCK_NAME $FENCELOCK_SESSION "
              "$FENCELOCK_TOKEN $FENCELOCK_ENDPOINTS\" > %s; wait" % (pid_path, ctx.tmp("E")))
    p = spawn(ctx, srv, "lock", "grp", "--lock-delay", "1.5s", "--name", "nightly", "--",
              "sh", "-c", script)
    gpid = wait_pid_file(pid_path, p)
    wait_until(lambda: read_file(ctx.tmp("E")).strip(), timeout=5, what="the environment")
    name, s_sid, s_tok, eps = read_file(ctx.tmp("E")).split()
    li = lock_info(c, "grp")
    si = session_info(c, li["holder"])
    eq((si["ttl_ms"], si["lockdelay_ms"], text(si["name"])), (10000, 1500, "nightly"),
       "the session's TTL (default 10s), --lock-delay and --name")
    eq((name, int(s_sid), int(s_tok), eps), ("grp", li["holder"], li["token"],
                                             endpoints(srv)), "FENCELOCK_* variables")
    p.send_signal(signal.SIGHUP)
    rc, out, err = finish(p)
    eq(rc, 128 + signal.SIGHUP, "sh died of the forwarded SIGHUP")
    wait_until(lambda: dead(gpid), timeout=5, what="the grandchild gone with the group")


# ---------------------------------------------------------------------------------------------
# 5. Keys, locks, status, sessions, members: the CLI shows what RESP sees


def test_cli_kv_and_fenced_writes(ctx):
    srv = [ctx.srv]
    c = ctx.conn()
    rev = int(run_ok(ctx, srv, "put", "app/a", "hello").out)
    kv = kv_get(c, "app/a")
    eq((kv["value"], kv["mod_rev"]), (b"hello", rev), "put is seen by KV.GET")
    eq(run_ok(ctx, srv, "get", "app/a").out, "hello\n")
    j = run_json(ctx, srv, "get", "app/a")
    eq(j, {"key": "app/a", "value": "hello", "create_rev": kv["create_rev"],
           "mod_rev": kv["mod_rev"], "version": kv["version"], "lease": kv["lease"]})
    tricky = 'q"uo\\te\n\ttab \u00e9\u4e2d\U0001f512 \x01'
    run_ok(ctx, srv, "put", "app/b", "-", stdin=tricky.encode())
    eq(c.call("GET", "app/b"), tricky.encode(), "value from stdin, byte for byte")
    eq(run_json(ctx, srv, "get", "app/b")["value"], tricky, "JSON escaping round-trips")
    expect_int(c.call("PUT", "app/bin", b"\xff\x00\xfe"))
    eq(run_json(ctx, srv, "get", "app/bin")["value_base64"], "/wD+", "binary as base64")
    r = run(ctx, srv, "get", "app/none")
    eq((r.rc, r.out), (1, ""), "get of a missing key: exit 1")

    eq(run_ok(ctx, srv, "keys", "app/").out.split(), ["app/a", "app/b", "app/bin"])
    eq(run_json(ctx, srv, "keys", "app/", "--limit", "2"), ["app/a", "app/b"])
    eq(run_ok(ctx, srv, "del", "app/bin").out, "1\n")
    eq(run_json(ctx, srv, "del", "app/bin"), {"key": "app/bin", "deleted": False})
    eq(c.call("GET", "app/bin"), None)

    # IFREV
    kv = kv_get(c, "app/a")
    eq(run(ctx, srv, "put", "app/a", "x", "--ifrev", kv["mod_rev"] + 100).rc, 1,
       "--ifrev with a wrong revision")
    eq(c.call("GET", "app/a"), b"hello", "unchanged")
    run_ok(ctx, srv, "put", "app/a", "y", "--ifrev", kv["mod_rev"])
    eq(c.call("GET", "app/a"), b"y")

    # Fenced writes: a stale token is refused, the current one applies.
    sid = expect_int(c.call("SESSION.OPEN", 30000))
    old = expect_int(c.call("LOCK", "res", sid))
    expect_ok(c.call("UNLOCK", "res", sid))
    new = expect_int(c.call("LOCK", "res", sid))
    r = run(ctx, srv, "put", "app/f", "stale", "--fence", "res", old)
    eq(r.rc, 1, "fenced put with a stale token: %r" % r)
    assert "fencelock: put app/f: " in r.err and "STALE" in r.err.upper(), r.err
    eq(c.call("GET", "app/f"), None, "the stale write changed nothing")
    run_ok(ctx, srv, "put", "app/f", "fresh", "--fence", "res", new)
    eq(c.call("GET", "app/f"), b"fresh")
    eq(run(ctx, srv, "del", "app/f", "--fence", "res", old).rc, 1, "fenced del, stale token")
    eq(c.call("GET", "app/f"), b"fresh")
    eq(run(ctx, srv, "fence-check", "res", new).out, "current\n")
    r = run(ctx, srv, "fence-check", "res", old)
    eq((r.rc, r.out), (1, "stale\n"), "fence-check of the old token")
    eq(run_json(ctx, srv, "fence-check", "res", new),
       {"name": "res", "token": new, "current": True})

    # --lease: the key goes when the session ends.
    run_ok(ctx, srv, "put", "app/l", "v", "--lease", sid)
    eq(kv_get(c, "app/l")["lease"], sid)
    expect_ok(c.call("SESSION.CLOSE", sid))
    eq(c.call("GET", "app/l"), None, "the leased key left with its session")


def test_cli_lock_info_locks_and_sessions(ctx):
    srv = [ctx.srv]
    c = ctx.conn()
    a = expect_int(c.call("SESSION.OPEN", 30000))
    b = expect_int(c.call("SESSION.OPEN", 30000))
    tok = expect_int(c.call("LOCK", "q/one", a))
    expect_int(c.call("LOCK", "q/two", b))
    w = ctx.conn()
    w.send("LOCK", "q/one", b, "WAIT", 20000)
    wait_until(lambda: waiters(c, "q/one") == [b], timeout=5, what="b queued")
    li = lock_info(c, "q/one")
    j = run_json(ctx, srv, "lock-info", "q/one")
    eq(j, {"name": "q/one", "holder": li["holder"], "token": li["token"],
           "held_since_ms": li["held_since_ms"], "lockdelay": bool(li["lockdelay"]),
           "waiters": [b], "mode": "exclusive",
           "holders": [{"sid": li["holder"], "token": li["token"]}], "value": "",
           "max_hold_ms": 0, "transitions": 0})
    out = run_ok(ctx, srv, "lock-info", "q/one").out
    assert "holder:     %d" % a in out and "token:      %d" % tok in out and str(b) in out, out
    eq(run_json(ctx, srv, "lock-info", "q/free"),
       {"name": "q/free", "holder": 0, "token": 0, "held_since_ms": 0, "lockdelay": False,
        "waiters": [], "mode": "none", "holders": [], "value": "", "max_hold_ms": 0,
        "transitions": 0}, "a free lock")
    locks = run_json(ctx, srv, "locks", "q/")
    eq([(x["name"], x["holder"], x["waiters"]) for x in locks], [("q/one", a, 1), ("q/two", b, 0)])
    eq(len(run_json(ctx, srv, "locks", "q/", "--limit", "1")), 1)
    table = run_ok(ctx, srv, "locks").out.splitlines()
    assert table[0].split()[:3] == ["NAME", "HOLDER", "TOKEN"], table
    eq([ln.split()[0] for ln in table[1:]], ["q/one", "q/two"])
    w.close()

    # Sessions for scripts.
    sid = int(run_ok(ctx, srv, "session", "open", "--ttl", "20s", "--lock-delay", "1500ms",
                     "--name", "script").out)
    si = session_info(c, sid)
    eq((si["ttl_ms"], si["lockdelay_ms"], text(si["name"])), (20000, 1500, "script"))
    eq(run_json(ctx, srv, "session", "keepalive", sid), {"ttl_ms": 20000})
    eq(run_ok(ctx, srv, "session", "close", sid).out, "OK\n")
    assert isinstance(session_info(c, sid), Exception), "closed"
    r = run(ctx, srv, "session", "keepalive", sid)
    eq(r.rc, 1, "keepalive of a closed session: %r" % r)
    eq(run_json(ctx, srv, "session", "open")["session"] > sid, True)
    for dur, ms in (("1.5s", 1500), ("2m", 120000), ("25", 25000), ("1500ms", 1500),
                    ("1h", 3600000), ("2.5", 2500)):
        s2 = int(run_ok(ctx, srv, "session", "open", "--ttl", dur).out)
        eq(session_info(c, s2)["ttl_ms"], ms, "--ttl %s (a bare number is seconds)" % dur)
    for bad in ("", "s", "1x", "-1s", "1.s.", "0", "10ms", "999ms", "0.5"):
        r = run(ctx, srv, "session", "open", "--ttl", bad)
        eq(r.rc, 2, "--ttl %r" % bad)
    assert "1s" in r.err and "seconds" in r.err, "a too short TTL names the unit: %r" % r.err


def test_cli_status_and_members_transfer(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    c = ctx.conn(leader)

    def announced():
        for s in servers:
            with Conn(s.port) as sc:
                if not all(text(as_map(m)["client_address"]) for m in
                           ok(sc.call("CLUSTER.MEMBERS"))):
                    return False
        return True
    wait_until(announced, timeout=10, interval=0.05,
               what="every node knowing every member's client address")
    before = as_map(ok(c.call("CLUSTER.INFO")))
    st = run_json(ctx, servers, "status")
    after = as_map(ok(c.call("CLUSTER.INFO")))
    eq(st["role"], "leader", "status shows the leader's view: %r" % st)
    eq((st["leader_id"], st["term"], st["leader"]),
       (after["leader_id"], after["term"], "127.0.0.1:%d" % leader.port))
    for k in ("revision", "commit_index", "applied_index"):
        assert before[k] <= st[k] <= after[k], "%s: %r <= %r <= %r" % (k, before[k], st[k],
                                                                     after[k])
    members = sorted(st["members"], key=lambda m: m["id"])
    eq([m["id"] for m in members], [1, 2, 3])
    for m in members:
        s = servers[m["id"] - 1]
        eq((m["raft_address"], m["client_address"], m["leader"]),
           ("127.0.0.1:%d" % s.raft_port, "127.0.0.1:%d" % s.port, s is leader))
    out = run_ok(ctx, servers, "status").out
    assert "leader:   %d" % leader.node_id in out, out

    target = next(s for s in servers if s is not leader)
    r = run_ok(ctx, servers, "members", "transfer", target.node_id, timeout=30)
    eq(r.out, "OK\n")
    new = ready_leader(servers)
    eq(new.node_id, target.node_id, "leadership moved where asked")
    eq(run_json(ctx, servers, "status")["leader_id"], target.node_id)
    eq(run(ctx, servers, "members", "remove", 99).rc, 4, "removing a non-member is refused")

    gone = next(s for s in servers if s is not new)
    eq(run_ok(ctx, servers, "members", "remove", gone.node_id, timeout=30).out, "OK\n")
    with Conn(new.port) as nc:
        ids = sorted(as_map(m)["id"] for m in ok(nc.call("CLUSTER.MEMBERS")))
    assert gone.node_id not in ids and len(ids) == 2, ids
    eq(sorted(m["id"] for m in run_json(ctx, [new], "status")["members"]), ids)
    gone.stop()


# ---------------------------------------------------------------------------------------------
# 6. An interactive command gets the terminal (as under flock(1)); nothing it starts survives


class Terminal:
    """An interactive bash on a pseudo-terminal (Python's pty, as script(1) makes one), with
    job control: what we type goes to the terminal's foreground process group, Ctrl-C/Ctrl-\\
    and Ctrl-Z are turned into signals by the terminal, and bash reports stopped jobs."""

    def __init__(self, ctx):
        env = cli_env({"PS1": "PROMPT$ ", "HISTFILE": "/dev/null", "TERM": "dumb"})
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: a session leader whose controlling terminal is the pty
            try:
                default_signals()
                os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)
            finally:
                os._exit(127)
        self.out = b""
        self.mark = 0  # expect() looks only at what came after the last type()

        def cleanup():
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            os.close(self.fd)
        ctx.defer(cleanup)
        self.expect(b"PROMPT$ ")

    def expect(self, what, timeout=15):
        end = time.monotonic() + timeout
        while what not in self.out[self.mark:]:
            left = end - time.monotonic()
            assert left > 0, "%r never appeared on the terminal; it shows %r\n%s" % (
                what, self.out, self.report())
            r, _, _ = select.select([self.fd], [], [], min(left, 0.2))
            if r:
                try:
                    d = os.read(self.fd, 4096)
                except OSError:
                    d = b""
                assert d, "the terminal closed before %r appeared: %r" % (what, self.out)
                self.out += d
        check_clean(self.out.decode("utf-8", "replace"), "fencelock on a terminal")

    def report(self):
        """The terminal's processes (foreground group first) and where every fencelock among
        them stands, for a failure."""
        try:
            fg = os.tcgetpgrp(self.fd)
        except OSError as e:
            fg = "? (%s)" % e
        out = ["terminal foreground process group: %s (when %r was typed: %r)"
               % (fg, *getattr(self, "fg_at_type", (None, None)))]
        ps = subprocess.run(["ps", "-eo", "pid,ppid,pgid,sid,stat,wchan:20,args"],
                            capture_output=True, text=True, timeout=20).stdout.splitlines()
        mine = [l for l in ps[1:] if l.split()[3] == str(self.pid)]
        out += [ps[0]] + mine
        for l in mine:
            try:
                with open("/proc/%s/status" % l.split()[0]) as f:
                    sig = [x.strip() for x in f if x.startswith(("SigBlk", "SigIgn", "SigPnd",
                                                                  "ShdPnd"))]
                out.append("%s: %s" % (l.split()[0], ", ".join(sig)))
            except OSError:
                pass
        for l in mine:
            if "fencelock" in l.split(None, 6)[-1]:
                out.append(stuck_report(int(l.split()[0])))
        return "\n".join(out)

    def type(self, data):
        self.mark = len(self.out)
        try:  # who gets a control character: for report()
            self.fg_at_type = (data[:8], os.tcgetpgrp(self.fd))
        except OSError:
            pass
        os.write(self.fd, data)

    def status(self):
        """The exit status of the last command, from bash (the digits are not in the echo of
        the typed line, which shows "$?")."""
        self.type(b"echo st=$?.\n")
        found = []

        def got():
            m = re.search(rb"st=(\d+)\.", self.out[self.mark:])
            if m:
                found.append(int(m.group(1)))
            return bool(m)
        end = time.monotonic() + 15
        while not got():
            assert time.monotonic() < end, "no exit status on the terminal: %r" % self.out
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                self.out += os.read(self.fd, 4096)
        return found[0]


def test_cli_interactive_command_gets_the_terminal(ctx):
    srv = [ctx.srv]
    c = ctx.conn()
    t = Terminal(ctx)
    cli = "'%s' --endpoints %s" % (cli_path(ctx), endpoints(srv))
    # Typed input reaches the command (it is the terminal's foreground group); then Ctrl-C,
    # sent by the terminal to that group, ends it and the CLI releases the lock. (The quotes
    # in na""me keep the echo of the typed command line from matching.)
    # Ctrl-C is typed once `sleep` runs: sh -c catches SIGINT and acts on it only when its
    # foreground command ends, so a Ctrl-C that came between the echo and the fork of sleep
    # would leave a sleep that never got it (dash's rule, not fencelock's).
    m = marker()
    ctx.defer(lambda: subprocess.run(["pkill", "-KILL", "-f", "^sleep %s$" % m]))
    t.type(b"%s lock job -- sh -c 'printf \"na\"\"me? \"; read x; echo \"got $x\"; "
           b"sleep %s'\n" % (cli.encode(), m.encode()))
    t.expect(b"name? ")
    t.type(b"bob\n")
    t.expect(b"got bob")
    wait_until(lambda: left_running(m), timeout=15, what="the command's sleep running")
    assert lock_info(c, "job")["holder"] != 0, "held while the command runs"
    t.type(b"\x03")
    t.expect(b"PROMPT$ ")
    eq(t.status(), 128 + signal.SIGINT, "Ctrl-C ended the command: %r" % t.out)
    eq(lock_info(c, "job"), None, "Ctrl-C left no lock held")

    # An ignored Ctrl-C does not end it; Ctrl-\\ (SIGQUIT) does.
    t.type(b"%s lock job -- sh -c \"trap '' INT; echo rea''dy; while :; do sleep 0.1; done\"\n"
           % cli.encode())
    t.expect(b"ready")
    t.type(b"\x03")
    time.sleep(0.3)
    assert lock_info(c, "job")["holder"] != 0, "still held: the command ignores SIGINT"
    t.type(b"\x1c")
    t.expect(b"PROMPT$ ")
    eq(t.status(), 128 + signal.SIGQUIT, "Ctrl-\\\\ ended the command: %r" % t.out)
    eq(lock_info(c, "job"), None)

    # Ctrl-Z stops the job (bash says so and gets the terminal back); fg continues it with the
    # terminal, so the command reads what is typed next.
    t.type(b"%s lock job -- sh -c 'echo sta\"\"rted; read x; echo \"got $x\"'\n" % cli.encode())
    t.expect(b"started")
    time.sleep(0.2)
    t.type(b"\x1a")
    t.expect(b"Stopped")
    t.expect(b"PROMPT$ ")
    assert lock_info(c, "job")["holder"] != 0, "a stopped job keeps its lock (within the TTL)"
    t.type(b"fg\n")
    time.sleep(0.5)
    t.type(b"alice\n")
    t.expect(b"got alice")
    t.expect(b"PROMPT$ ")
    eq(t.status(), 0, "the command finished after fg: %r" % t.out)
    eq(lock_info(c, "job"), None)


def marker():
    """A sleep argument no other process on the machine has: `pgrep -f` finds ours only."""
    return "%d.%03d" % (random.randint(100000, 999999), os.getpid() % 1000)


def left_running(m):
    return subprocess.run(["pgrep", "-f", "^sleep %s$" % m], capture_output=True).stdout.split()


def test_cli_kills_every_descendant(ctx):
    srv = [ctx.srv]
    c = ctx.conn()
    m = marker()
    ctx.defer(lambda: subprocess.run(["pkill", "-KILL", "-f", "^sleep %s$" % m]))
    # Background jobs, a setsid'd process and a double fork, all left behind when CMD exits;
    # also without a cgroup (the fallback: the subreaper's walk over /proc finds them).
    spread = "sleep %s & setsid sleep %s & (sleep %s &); " % (m, m, m)
    for env in (None, {"FENCELOCK_NO_CGROUP": "1"}):
        r = run(ctx, srv, "lock", "a", "--", "sh", "-c", spread + "echo started", env=env)
        eq((r.rc, r.out), (0, "started\n"), "the command's own status (%r): %r" % (env, r))
        eq(left_running(m), [], "every process the command started is gone once it exited "
                                "(%r)" % env)
        eq(lock_info(c, "a"), None)

    # The lease is lost (an operator closes the session): everything dies, not only the group.
    pid_path = ctx.tmp("P")
    p = spawn(ctx, srv, "lock", "b", "--", "sh", "-c",
              spread + "echo $$ > %s; sleep %s" % (pid_path, m))
    wait_pid_file(pid_path, p)
    wait_until(lambda: len(left_running(m)) == 4, timeout=10, what="four sleeps started")
    expect_ok(c.call("SESSION.CLOSE", lock_info(c, "b")["holder"]))
    rc, out, err = finish(p)
    eq(rc, 5, "lock lost (stderr %r)" % err)
    eq(left_running(m), [], "no process of the run outlives the lost lease")

    # kill -9 of the CLI: the command and everything it started die with it.
    p = spawn(ctx, srv, "lock", "c", "--", "sh", "-c",
              spread + "echo $$ > %s; sleep %s" % (pid_path + "2", m))
    wait_pid_file(pid_path + "2", p)
    wait_until(lambda: len(left_running(m)) == 4, timeout=10, what="four sleeps started")
    p.kill()
    p.wait(10)
    wait_until(lambda: left_running(m) == [], timeout=10, interval=0.05,
               what="every process of the run gone after kill -9 of the CLI (left: %s)"
               % " ".join(x.decode() for x in left_running(m)))


def test_cli_bare_numbers_are_seconds(ctx):
    """`--ttl 10` and `--wait 60` mean seconds, as `flock -w 60`, timeout(1) and sleep(1) do."""
    srv = [ctx.srv]
    c = ctx.conn()
    pid_path = ctx.tmp("P")
    p = spawn(ctx, srv, "lock", "job", "--ttl", "10", "--", "sh", "-c",
              "echo $$ > %s; sleep 1; echo done" % pid_path)
    wait_pid_file(pid_path, p)
    eq(session_info(c, lock_info(c, "job")["holder"])["ttl_ms"], 10000, "--ttl 10 is 10 s")
    rc, out, err = finish(p)
    eq((rc, out), (0, "done\n"), "the command ran to its end under a 10 s lease: %r" % err)

    # --wait 60 waits (60 ms would have given up long before the holder lets go).
    sid = expect_int(c.call("SESSION.OPEN", 30000))
    expect_int(c.call("LOCK", "job", sid))
    p = spawn(ctx, srv, "lock", "job", "--wait", "60", "--", "echo", "got it")
    wait_until(lambda: len(waiters(c, "job")) == 1, timeout=10, what="the CLI queued")
    time.sleep(0.3)
    assert p.poll() is None, "still waiting: %r" % (finish(p),)
    expect_ok(c.call("UNLOCK", "job", sid))
    rc, out, err = finish(p)
    eq((rc, out), (0, "got it\n"), "granted after the holder let go (stderr %r)" % err)
    r = run(ctx, srv, "lock", "job", "--ttl", "10ms", "--", "true")
    eq(r.rc, 2, "a 10 ms TTL is refused: %r" % r)


def test_cli_exits_at_once_after_the_lease_was_at_risk(ctx):
    """Every server frozen: the command gets SIGTERM (kill grace) and dies of it. The CLI must
    not then wait --timeout (30 s here) for an UNLOCK and again for a SESSION.CLOSE that no
    frozen server answers: one brief close at most, then exit 5 with a plain message."""
    srv = [ctx.srv]
    c = ctx.conn()
    pid_path = ctx.tmp("P")
    p = spawn(ctx, srv, "--timeout", "30s", "lock", "job", "--ttl", "3s", "--", "sh", "-c",
              "echo $$ > %s; sleep 60" % pid_path)
    pid = wait_pid_file(pid_path, p)
    eq(lock_info(c, "job")["holder"] != 0, True)
    ctx.defer(ctx.srv.sigcont)
    ctx.srv.sigstop()
    wait_until(lambda: dead(pid), timeout=10, interval=0.01, what="the command killed")
    try:
        rc = p.wait(15)  # the old CLI waited 2 x 30 s here
    except subprocess.TimeoutExpired:
        raise AssertionError("the CLI still runs 15 s after its command died: it waits for "
                             "answers from frozen servers")
    ctx.srv.sigcont()
    rc, out, err = finish(p)
    eq(rc, 5, "the lock was given up (stderr %r)" % err)
    assert "did not renew the lease in time" in err and "SIGTERM" in err, err
    assert "unlock" not in err and "close session" not in err, "no unlock was tried: %r" % err


def test_cli_put_over_a_quota_reports_the_quota(ctx):
    """libfencelock maps -NOSPACE to FL_ENOSPACE ("server quota full"); nothing is written."""
    srv = ctx.server("--max-keys", 1)
    run_ok(ctx, [srv], "put", "a", "1")
    r = run(ctx, [srv], "put", "b", "2")
    eq(r.rc, 4, "put over --max-keys (4: request refused): %r" % r)
    assert "server quota full" in r.err and "NOSPACE" in r.err, r.err
    with ctx.conn(srv) as c:
        eq(c.call("GET", "b"), None, "nothing written")


# ---------------------------------------------------------------------------------------------
# Credentials, backups and terminals: what the CLI leaves for other users of the machine to see

def test_cli_lock_command_inherits_no_credentials(ctx):
    """FENCELOCK_USER / FENCELOCK_PASSWORD authenticate the CLI and go no further: the command
    run under the lock finds them neither in its environment nor in its parent's (the CLI's)
    /proc/PID/environ."""
    from test_auth import _acl_server
    s, _, _ = _acl_server(ctx)
    out = ctx.tmp("env.out")
    parent = ctx.tmp("parent.out")
    r = run(ctx, [s], "lock", "job-1", "--", "sh", "-c",
            "env > %s; tr '\\0' '\\n' < /proc/$PPID/environ > %s" % (out, parent),
            env={"FENCELOCK_USER": "app", "FENCELOCK_PASSWORD": "apppw"})
    eq(r.rc, 0, "lock as app: %r" % r)
    seen = read_file(out)
    assert "FENCELOCK_TOKEN=" in seen, seen
    assert "apppw" not in seen and "FENCELOCK_PASSWORD" not in seen, seen
    assert "FENCELOCK_USER" not in seen, seen
    # the CLI's own initial environment block (which unsetenv leaves): the value is wiped
    seen = read_file(parent)
    assert "apppw" not in seen, seen


def test_cli_snapshot_save_follows_no_planted_symlink(ctx):
    """A symlink planted at FILE.tmp (the old fixed temporary name) is neither followed nor
    truncated; the backup is mode 0600 and the victim keeps its bytes."""
    srv = [ctx.srv]
    run_ok(ctx, srv, "put", "k", "v")
    victim = ctx.tmp("victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    target = ctx.tmp("backup.snap")
    os.symlink(victim, target + ".tmp")
    run_ok(ctx, srv, "snapshot", "save", target)
    eq(read_file(victim), "precious\n", "the victim of the planted symlink")
    eq(os.path.islink(target), False, "the backup is a file of its own")
    eq(os.stat(target).st_mode & 0o777, 0o600, "the backup's mode")
    eq([n for n in os.listdir(ctx.workdir) if n.startswith("backup.snap.")], ["backup.snap.tmp"],
       "no temporary file left (the planted link aside)")


def test_cli_escapes_control_bytes_from_the_server(ctx):
    """Names and values a server sends reach the terminal with control bytes escaped (\\xHH):
    an ESC or BEL in a lock name or key cannot retitle the window or move the cursor."""
    srv = [ctx.srv]
    evil = "ev\x1b]0;pwned\x07il\x9b2J"
    c = ctx.conn()
    sid = expect_int(c.call("SESSION.OPEN", 30000))
    expect_int(c.call("LOCK", evil, sid))
    expect_int(c.call("PUT", evil, "v\x1b[2Jx"))
    expect_int(c.call("ELECT.CAMPAIGN", "e", sid, "leader\x1b[1Ax"))
    for args in (("locks",), ("lock-info", evil), ("keys",), ("leader", "e"), ("status",)):
        r = run_ok(ctx, srv, *args)
        bad = [ch for ch in r.out if ord(ch) < 0x20 and ch != "\n" or 0x7f <= ord(ch) < 0xa0]
        eq(bad, [], "control bytes in the output of %s: %r" % (args, r.out))
        if args[0] != "status":
            assert "\\x1b" in r.out, (args, r.out)
    # into a pipe `get` still writes the exact bytes (a value may be binary)
    p = subprocess.run([cli_path(ctx), "--endpoints", endpoints(srv), "get", evil],
                       capture_output=True, timeout=20, env=cli_env())
    eq(p.stdout, b"v\x1b[2Jx\n", "get into a pipe")
    # --json escapes per RFC 8259
    eq(run_json(ctx, srv, "keys"), [evil])
