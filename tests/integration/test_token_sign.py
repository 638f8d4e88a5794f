# SPDX-License-Identifier: Apache-2.0
"""Signed fencing tokens: --token-key, FENCE.SIGN and FENCE.VERIFY (docs/fencing.md "Signed tokens").

Every expected signature is computed here with Python's hmac module from the encoding in the
docs, never read back from the server: the test fails if the server's bytes drift."""

import hashlib
import hmac
import os
import signal
import subprocess

from cluster import ready_leader, start_cluster
from helpers import eq, expect_err, expect_int, ok, open_session, wait_until
from resp import Conn, RespError

KEY_A = b"alpha-key-0123456789"
KEY_B = b"bravo-key-9876543210-longer"


def sig(key, name, token):
    name = name.encode() if isinstance(name, str) else name
    msg = b"fencelock-token-v1:%d:%s:%d" % (len(name), name, token)
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


def key_file(ctx, name, key, newline=True):
    path = ctx.tmp(name)
    with open(path, "wb") as f:
        f.write(key + (b"\n" if newline else b""))
    os.chmod(path, 0o600)  # a secret: fencelockd refuses group/world-readable key files
    return path


def text(r):
    return r.decode() if isinstance(r, bytes) else r


def signed(c, name, token):
    return text(ok(c.call("FENCE.SIGN", name, token), "FENCE.SIGN %s %s" % (name, token)))


def test_fence_sign_for_each_kind_of_holder_matches_python_hmac(ctx):
    ctx.server("--token-key", key_file(ctx, "a.key", KEY_A))
    c = ctx.conn()
    s1, s2 = open_session(c), open_session(c)
    t = expect_int(c.call("LOCK", "inventory", s1))
    eq(signed(c, "inventory", t), sig(KEY_A, "inventory", t), "exclusive holder")
    r1 = expect_int(c.call("LOCK", "rw", s1, "SHARED"))
    r2 = expect_int(c.call("LOCK", "rw", s2, "SHARED"))
    eq(signed(c, "rw", r1), sig(KEY_A, "rw", r1), "first shared holder")
    eq(signed(c, "rw", r2), sig(KEY_A, "rw", r2), "second shared holder")
    p = expect_int(c.call("SEM.ACQUIRE", "pool", s2, 3))
    eq(signed(c, "pool", p), sig(KEY_A, "pool", p), "semaphore permit")
    e = expect_int(c.call("ELECT.CAMPAIGN", "boss", s1, "v"))
    eq(signed(c, "boss", e), sig(KEY_A, "boss", e), "election leader")
    name = "caf\u00e9:1/x"  # bytes, not characters, are counted; a ':' inside the name
    u = expect_int(c.call("LOCK", name, s2))
    eq(signed(c, name, u), sig(KEY_A, name, u), "a UTF-8 name")
    # FENCE.VERIFY: 1 for the right triple only
    good = sig(KEY_A, "inventory", t)
    eq(c.call("FENCE.VERIFY", "inventory", t, good), 1)
    eq(c.call("FENCE.VERIFY", "inventory", t + 1, good), 0, "another token")
    eq(c.call("FENCE.VERIFY", "inventor", t, good), 0, "another name")
    eq(c.call("FENCE.VERIFY", "inventory", t, good.upper()), 0, "uppercase hex")
    eq(c.call("FENCE.VERIFY", "inventory", t, good[:-1]), 0, "63 digits")
    eq(c.call("FENCE.VERIFY", "inventory", t, sig(KEY_B, "inventory", t)), 0, "another key")


def test_fence_sign_refuses_a_stale_token_another_lock_and_an_expired_session(ctx):
    ctx.server("--token-key", key_file(ctx, "a.key", KEY_A))
    c = ctx.conn()
    s1 = open_session(c)
    old = expect_int(c.call("LOCK", "l", s1))
    ok(c.call("UNLOCK", "l", s1))
    new = expect_int(c.call("LOCK", "l", s1))
    expect_err(c.call("FENCE.SIGN", "l", old), "STALE", "an older token of the same lock")
    expect_err(c.call("FENCE.SIGN", "other", new), "STALE", "a token of another lock")
    expect_err(c.call("FENCE.SIGN", "free", 1), "STALE", "a lock nobody holds")
    eq(signed(c, "l", new), sig(KEY_A, "l", new))
    # A holder whose session expires: its token is no longer signed.
    short = open_session(c, 400)
    tok = expect_int(c.call("LOCK", "brief", short))
    eq(signed(c, "brief", tok), sig(KEY_A, "brief", tok))
    wait_until(lambda: isinstance(c.call("FENCE.SIGN", "brief", tok), RespError), timeout=10,
               what="the expired holder's token refused")
    expect_err(c.call("FENCE.SIGN", "brief", tok), "STALE", "after the session expired")
    # an old signature still verifies: it says the token was issued, not that it is current
    eq(c.call("FENCE.VERIFY", "brief", tok, sig(KEY_A, "brief", tok)), 1)


def test_fence_sign_and_verify_without_a_key_are_errors(ctx):
    c = ctx.conn()
    s = open_session(c)
    t = expect_int(c.call("LOCK", "l", s))
    r = expect_err(c.call("FENCE.SIGN", "l", t), "ERR", "FENCE.SIGN with no --token-key")
    assert "--token-key" in r.text, r.text
    expect_err(c.call("FENCE.VERIFY", "l", t, sig(KEY_A, "l", t)), "ERR", "FENCE.VERIFY")


def test_missing_short_or_bad_token_key_refuses_to_start(ctx):
    short = key_file(ctx, "short.key", b"fifteen-bytes!!")  # 15 bytes + the dropped \n
    good = key_file(ctx, "good.key", KEY_A)
    base = [ctx.binary, "--data-dir", ctx.tmp("d"), "--listen", "127.0.0.1:1",
            "--raft-listen", "127.0.0.1:2", "--http-listen", "off"]
    cases = [(short, b"at least 16"), (ctx.tmp("nope.key"), b"cannot be read"),
             (good + "," + short, b"at least 16")]
    for arg, why in cases:
        p = subprocess.run(base + ["--token-key", arg], capture_output=True, timeout=30)
        assert p.returncode != 0, (arg, p)
        out = p.stdout + p.stderr
        assert why in out and b"does not start" in out, out
        assert KEY_A not in out, "a key's bytes were printed"
    for arg in ("", good + ",", "," + good, ",".join([good] * 3)):
        p = subprocess.run(base + ["--token-key", arg], capture_output=True, timeout=30)
        eq(p.returncode, 2, "exit status for --token-key %r" % arg)


def test_rotation_by_sighup_and_restart_verifies_old_and_signs_with_new(ctx):
    a = key_file(ctx, "a.key", KEY_A)
    live = key_file(ctx, "live.key", KEY_A, newline=False)
    srv = ctx.server("--token-key", live + "," + a)
    c = ctx.conn()
    s = open_session(c)
    t = expect_int(c.call("LOCK", "l", s))
    eq(signed(c, "l", t), sig(KEY_A, "l", t), "signed with A")
    # The first file now holds B: SIGHUP re-reads it; A is still accepted (second file).
    key_file(ctx, "live.key", KEY_B)
    os.kill(srv.proc.pid, signal.SIGHUP)
    wait_until(lambda: "SIGHUP: --token-key re-read" in srv.log_text(), timeout=10,
               what="the reload")
    eq(signed(c, "l", t), sig(KEY_B, "l", t), "signed with B after SIGHUP")
    eq(c.call("FENCE.VERIFY", "l", t, sig(KEY_A, "l", t)), 1, "A's signature still verifies")
    eq(c.call("FENCE.VERIFY", "l", t, sig(KEY_B, "l", t)), 1, "B's signature verifies")
    # A bad file on SIGHUP keeps the keys (B, A) in use.
    key_file(ctx, "live.key", b"short")
    os.kill(srv.proc.pid, signal.SIGHUP)
    wait_until(lambda: "the previous token keys stay" in srv.log_text(), timeout=10,
               what="the refused reload")
    eq(signed(c, "l", t), sig(KEY_B, "l", t), "still B after a refused reload")
    eq(c.call("FENCE.VERIFY", "l", t, sig(KEY_A, "l", t)), 1)
    log = srv.log_text()
    assert KEY_A.decode() not in log and KEY_B.decode() not in log, "a key was logged"
    # Restart with B alone: the rotation window closed, A's signatures no longer verify.
    key_file(ctx, "live.key", KEY_B)
    srv.stop()
    srv.extra_args = ["--token-key", live]
    srv.start()
    c = ctx.conn()
    eq(c.call("FENCE.VERIFY", "l", t, sig(KEY_B, "l", t)), 1, "B after the restart")
    eq(c.call("FENCE.VERIFY", "l", t, sig(KEY_A, "l", t)), 0, "A after the window closed")


def test_cluster_leader_signs_followers_redirect_and_verify(ctx):
    a = key_file(ctx, "a.key", KEY_A)
    nodes = start_cluster(ctx, 3, extra=["--token-key", a])
    leader = ready_leader(nodes)
    c = ctx.conn(leader)
    s = open_session(c)
    t = expect_int(c.call("LOCK", "l", s))
    want = sig(KEY_A, "l", t)
    eq(signed(c, "l", t), want)
    for n in nodes:
        if n is leader:
            continue
        f = ctx.conn(n)
        expect_err(f.call("FENCE.SIGN", "l", t), ("NOTLEADER", "NOLEADER"), "on a follower")
        ok(f.call("READONLY"))
        # a signature is only made on a ready leader, even for a READONLY connection
        expect_err(f.call("FENCE.SIGN", "l", t), ("NOTLEADER", "NOLEADER"), "READONLY")
        eq(f.call("FENCE.VERIFY", "l", t, want), 1, "a follower verifies with the same key")


# ---- libfencelock and the CLI ----

def _probe_sign(ctx, srv):
    from test_client import Probe
    p = Probe(ctx, "sign", "127.0.0.1:%d" % srv.port, "job")
    return p


def test_fl_lock_signed_fl_sign_and_fl_verify(ctx):
    srv = ctx.server("--token-key", key_file(ctx, "a.key", KEY_A))
    p = _probe_sign(ctx, srv)
    token, got = p.expect("signed").split()
    eq(got, sig(KEY_A, "job", int(token)), "fl_lock_signed's signature")
    p.expect("verified")
    summary = p.expect("tests:")
    eq(p.wait(), 0, "fl_probe sign exit status (%s)" % summary)


def test_fl_lock_signed_without_a_key_holds_the_lock_and_says_so(ctx):
    p = _probe_sign(ctx, ctx.srv)
    eq(p.expect("nokey"), "server error")
    summary = p.expect("tests:")
    eq(p.wait(), 0, "fl_probe sign exit status (%s)" % summary)


def _cli(ctx, srv, *args, env=None):
    from test_cli import cli_path
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([cli_path(ctx), "--endpoints", "127.0.0.1:%d" % srv.port] +
                          [str(a) for a in args], capture_output=True, text=True, timeout=60,
                          env=e)


def test_cli_lock_exports_fencelock_token_sig_and_sign_prints_it(ctx):
    srv = ctx.server("--token-key", key_file(ctx, "a.key", KEY_A))
    out = ctx.tmp("env")
    # an inherited FENCELOCK_TOKEN_SIG never reaches the command: it is replaced
    p = _cli(ctx, srv, "lock", "job", "--", "sh", "-c",
             'echo "$FENCELOCK_TOKEN $FENCELOCK_TOKEN_SIG" > %s; '
             "exit 0" % out, env={"FENCELOCK_TOKEN_SIG": "inherited"})
    eq(p.returncode, 0, "fencelock lock: %s" % p.stderr)
    token, got = open(out).read().split()
    eq(got, sig(KEY_A, "job", int(token)), "FENCELOCK_TOKEN_SIG")
    # `fencelock sign`: a current token prints its signature, a stale one exits 1
    c = ctx.conn(srv)
    s = open_session(c)
    t = expect_int(c.call("LOCK", "held", s))
    p = _cli(ctx, srv, "sign", "held", t)
    eq((p.returncode, p.stdout.strip()), (0, sig(KEY_A, "held", t)), p.stderr)
    p = _cli(ctx, srv, "sign", "held", t + 1)
    eq((p.returncode, p.stdout.strip()), (1, "stale"), p.stderr)
    p = _cli(ctx, srv, "--json", "sign", "held", t)
    assert '"sig":"%s"' % sig(KEY_A, "held", t) in p.stdout.replace(" ", ""), p.stdout


def test_cli_lock_without_a_key_sets_no_signature_and_warns_nothing(ctx):
    out = ctx.tmp("env")
    p = _cli(ctx, ctx.srv, "lock", "job", "--", "sh", "-c",
             'echo "${FENCELOCK_TOKEN_SIG-unset}" > %s' % out,
             env={"FENCELOCK_TOKEN_SIG": "inherited"})
    eq(p.returncode, 0, "fencelock lock: %s" % p.stderr)
    eq(open(out).read().strip(), "unset")
    eq(p.stderr, "", "stderr of fencelock lock without a key")


def test_acl_fence_sign_and_verify_need_read_and_the_lock_name(ctx):
    from test_auth import _acl_server, _authed
    s, _, _ = _acl_server(ctx)
    s.stop()
    s.extra_args += ["--token-key", key_file(ctx, "a.key", KEY_A)]
    s.start()
    app = _authed(ctx, s, "app", "apppw")  # read,lock,write; locks=job-*
    sid = open_session(app)
    t = expect_int(app.call("LOCK", "job-1", sid))
    eq(signed(app, "job-1", t), sig(KEY_A, "job-1", t))
    eq(app.call("FENCE.VERIFY", "job-1", t, sig(KEY_A, "job-1", t)), 1)
    admin = _authed(ctx, s, "admin", "adminpw")
    a_sid = open_session(admin)
    other = expect_int(admin.call("LOCK", "other", a_sid))
    expect_err(app.call("FENCE.SIGN", "other", other), "NOPERM", "a lock outside locks=")
    expect_err(app.call("FENCE.VERIFY", "other", other, sig(KEY_A, "other", other)), "NOPERM")
    dflt = _authed(ctx, s, "default", "defaultpw")  # lock only, no read
    expect_err(dflt.call("FENCE.SIGN", "job-1", t), "NOPERM", "without the read permission")
    expect_err(dflt.call("FENCE.VERIFY", "job-1", t, "0" * 64), "NOPERM")


def test_cli_sem_and_elect_export_the_signature_and_sign_without_a_key_exits_4(ctx):
    srv = ctx.server("--token-key", key_file(ctx, "a.key", KEY_A))
    for name, args in (("pool", ("sem", "pool", 2)), ("boss", ("elect", "boss", "v"))):
        out = ctx.tmp("env-" + name)
        p = _cli(ctx, srv, *args, "--", "sh", "-c",
                 'echo "$FENCELOCK_TOKEN $FENCELOCK_TOKEN_SIG" > %s' % out)
        eq(p.returncode, 0, "fencelock %s: %s" % (args[0], p.stderr))
        token, got = open(out).read().split()
        eq(got, sig(KEY_A, name, int(token)), "FENCELOCK_TOKEN_SIG of %s" % args[0])
    plain = ctx.server()
    p = _cli(ctx, plain, "sign", "x", 1)
    eq(p.returncode, 4, "fencelock sign without a key: %s" % p.stderr)
    assert "--token-key" in p.stderr, p.stderr
