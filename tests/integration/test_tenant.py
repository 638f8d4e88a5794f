"""Tenants on one cluster (docs/security.md "What a tenant can and cannot do"): secret files
with permissions too open are refused at start and at SIGHUP, the peer password leaves the
environment, a user sees only its own connections (CLIENT LIST), another user's session is
indistinguishable from a missing one, FENCE.SIGN needs `lock` on the name, parked requests
are re-authorised when SIGHUP lowers a user's permissions, per-user quotas from the ACL file,
and lock names hashed with a keyed hash."""

import os
import signal
import subprocess

from helpers import eq, expect_err, expect_int, expect_ok, wait_until
from resp import Conn, RespError, as_map, text
from test_auth import _hash
from test_http import metric


def _write_acl(ctx, lines, name="acl"):
    path = ctx.tmp(name)
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    os.chmod(path, 0o600)
    return path


_HASHES = {}


def _h(ctx, pw):
    if pw not in _HASHES:
        _HASHES[pw] = _hash(ctx, pw)
    return _HASHES[pw]


def _users(ctx, spec):
    """ACL lines for {user: "perm=... [max_...=N]"}, each password being the name + "pw"."""
    return ["user %s %s %s" % (u, _h(ctx, u + "pw"), rest) for u, rest in spec.items()]


def _acl_node(ctx, spec, *args, env=None):
    path = _write_acl(ctx, _users(ctx, dict({"admin": "perm=all"}, **spec)))
    s = ctx.server("--acl-file", path, *args, start=False, env=env)
    s.auth = ("admin", "adminpw")
    s.start()
    return s, path


def _as(ctx, s, user):
    c = ctx.conn(s)
    expect_ok(c.call("AUTH", user, user + "pw"), "AUTH " + user)
    return c


# ---- secret files (item 7) ----

def _start_fails(ctx, *args, env=None):
    p = subprocess.run([ctx.binary, "--data-dir", ctx.tmp("d"), "--listen", "127.0.0.1:1",
                        "--raft-listen", "127.0.0.1:1", "--http-listen", "off"] + list(args),
                       capture_output=True, timeout=60, env=env)
    assert p.returncode != 0, "fencelockd started with %r" % (args,)
    return (p.stdout + p.stderr).decode("utf-8", "replace")


def test_secret_files_readable_by_others_refuse_to_start(ctx):
    acl = _write_acl(ctx, _users(ctx, {"admin": "perm=all"}))
    key = ctx.tmp("token.key")
    with open(key, "w") as f:
        f.write("k" * 32 + "\n")
    pw = ctx.tmp("peer.pw")
    with open(pw, "w") as f:
        f.write("adminpw\n")
    for path, mode, args in (
            (acl, 0o644, ("--acl-file", acl)),
            (acl, 0o604, ("--acl-file", acl)),
            (key, 0o640, ("--token-key", key)),  # root-owned, but fencelockd runs as root
            (pw, 0o620, ("--acl-file", acl, "--peer-user", "admin", "--peer-password-file", pw))):
        for p in (acl, key, pw):
            os.chmod(p, 0o600)
        os.chmod(path, mode)
        out = _start_fails(ctx, *args)
        assert "too open" in out and path in out and "%04o" % mode in out, (mode, out)
    for p in (acl, key, pw):
        os.chmod(p, 0o600)
    s = ctx.server("--acl-file", acl, "--token-key", key, "--peer-user", "admin",
                   "--peer-password-file", pw, start=False)
    s.auth = ("admin", "adminpw")
    s.start()  # 0600 everywhere: starts


def test_secret_file_made_readable_by_others_refuses_the_reload(ctx):
    s, acl = _acl_node(ctx, {"ro": "perm=read"})
    _as(ctx, s, "ro").close()
    with open(acl, "w") as f:  # ro removed, and the file opened to everyone
        f.write("\n".join(_users(ctx, {"admin": "perm=all"})) + "\n")
    os.chmod(acl, 0o644)
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: "too open" in s.log_text(), timeout=15, what="the refused reload logged")
    _as(ctx, s, "ro").close()  # the old rules stay
    os.chmod(acl, 0o600)
    os.kill(s.proc.pid, signal.SIGHUP)

    def refused():
        with Conn(s.port) as c:  # a fresh one: a connection of ro is closed by the reload
            return isinstance(c.call("AUTH", "ro", "ropw"), RespError)
    wait_until(refused, timeout=15, what="the reload taken once the mode is 0600")


def test_peer_password_is_wiped_from_the_environment(ctx):
    s, _ = _acl_node(ctx, {}, "--peer-user", "admin",
                     env={"FENCELOCK_PEER_PASSWORD": "adminpw-in-env"})
    with open("/proc/%d/environ" % s.proc.pid, "rb") as f:
        env = f.read()
    assert b"adminpw-in-env" not in env, env


# ---- another user's session is a missing one (item 6) ----

def test_another_users_session_is_answered_as_a_missing_one(ctx):
    """bob learns nothing about alice's live session ids: every command naming one gets the
    very answer (the id aside) that a session id nobody has gets."""
    s, _ = _acl_node(ctx, {"alice": "perm=read,lock,write", "bob": "perm=read,lock,write"})
    alice, bob = _as(ctx, s, "alice"), _as(ctx, s, "bob")
    a = expect_int(alice.call("SESSION.OPEN", 60000))
    expect_int(alice.call("LOCK", "L", a))
    missing = a + 1000000
    for cmd in (("LOCK", "M", "%d"), ("UNLOCK", "L", "%d"), ("SESSION.KEEPALIVE", "%d"),
                ("SESSION.CLOSE", "%d"), ("SESSION.INFO", "%d"), ("PUT", "x", "v", "LEASE", "%d"),
                ("PUT", "x", "v", "REQ", "%d", 5), ("SEM.ACQUIRE", "S", "%d", 2),
                ("ELECT.CAMPAIGN", "E", "%d", "v")):
        def call(sid):
            r = bob.call(*[(x % sid) if x == "%d" else x for x in cmd])
            assert isinstance(r, RespError), (cmd, r)
            return r.text.replace(str(sid), "SID")
        eq(call(a), call(missing), "%s on alice's session vs. on a missing one" % (cmd,))
    eq(expect_int(alice.call("LOCK", "L", a)) > 0, True, "alice's lock untouched")


# ---- CLIENT LIST (item 5) ----

def test_client_list_shows_only_the_callers_own_connections(ctx):
    s, _ = _acl_node(ctx, {"alice": "perm=read", "bob": "perm=read"})
    alice, bob, admin = _as(ctx, s, "alice"), _as(ctx, s, "bob"), _as(ctx, s, "admin")
    expect_ok(bob.call("CLIENT", "SETNAME", "bobs-secret-app"))
    alice2 = _as(ctx, s, "alice")
    ctx.conn(s).call("PING")  # not authenticated

    def users(c):
        lines = [ln for ln in text(c.call("CLIENT", "LIST")).splitlines() if ln]
        return sorted(dict(f.split("=", 1) for f in ln.split() if "=" in f)["user"]
                      for ln in lines)
    eq(users(alice), ["alice", "alice"], "alice sees her two connections")
    eq(users(alice2), ["alice", "alice"])
    assert "bobs-secret-app" not in text(alice.call("CLIENT", "LIST"))
    eq(users(bob), ["bob"])
    # admin sees every connection (the unauthenticated one as "default")
    eq(users(admin), ["admin", "alice", "alice", "bob", "default"])


# ---- FENCE.SIGN needs lock (item 3) ----

def test_fence_sign_needs_the_lock_permission_on_the_name(ctx):
    key = ctx.tmp("sign.key")
    with open(key, "w") as f:
        f.write("s" * 32 + "\n")
    os.chmod(key, 0o600)
    s, _ = _acl_node(ctx, {"app": "perm=read,lock locks=job-*", "reader": "perm=read"},
                     "--token-key", key)
    app, reader = _as(ctx, s, "app"), _as(ctx, s, "reader")
    sid = expect_int(app.call("SESSION.OPEN", 60000))
    t = expect_int(app.call("LOCK", "job-1", sid))
    good = app.call("FENCE.SIGN", "job-1", t)
    assert isinstance(good, bytes) and len(good) == 64, good
    r = expect_err(reader.call("FENCE.SIGN", "job-1", t), "NOPERM", "a reader signs")
    eq(r.text, "NOPERM user reader has no permission to run 'FENCE.SIGN' (needs read,lock)")
    eq(reader.call("FENCE.VERIFY", "job-1", t, good), 1, "a reader may still verify")


# ---- parked requests re-authorised at SIGHUP (item 4) ----

def _parked_readers(s):
    """Parked XREADs plus ELECT.OBSERVE requests (the /metrics gauges)."""
    return metric(s, "fencelock_xread_blocked") + metric(s, "fencelock_elect_observers")


def test_parked_requests_of_a_user_who_lost_the_permission_get_noperm(ctx):
    spec = {"app": "perm=read,lock", "rd": "perm=read", "keep": "perm=read"}
    s, path = _acl_node(ctx, spec)
    admin = _as(ctx, s, "admin")
    hold = expect_int(admin.call("SESSION.OPEN", 60000))
    expect_int(admin.call("LOCK", "L", hold))
    expect_int(admin.call("ELECT.CAMPAIGN", "e", hold, "v"))
    rev = expect_int(admin.call("PUT", "bump", "1"))
    app = _as(ctx, s, "app")
    sid = expect_int(app.call("SESSION.OPEN", 60000))
    locker, observer = _as(ctx, s, "app"), _as(ctx, s, "app")
    reader, kept = _as(ctx, s, "rd"), _as(ctx, s, "keep")
    locker.send("LOCK", "L", sid, "WAIT", 60000)
    observer.send("ELECT.OBSERVE", "e", "AFTER", rev, "WAIT", 60000)
    reader.send("XREAD", "BLOCK", 60000, "STREAMS", "fencelock:events", "$")
    kept.send("XREAD", "BLOCK", 60000, "STREAMS", "fencelock:events", "$")
    wait_until(lambda: (as_map(admin.call("LOCK.INFO", "L")).get("waiters") or []) == [sid],
               timeout=15, what="app queued on L")
    # the XREADs and the observer are parked once the server counts them (INFO, as admin)
    wait_until(lambda: _parked_readers(s) >= 3, timeout=15, what="readers parked")
    _lines = _users(ctx, dict(spec, app="perm=read locks=other-*", rd="perm=lock"))
    with open(path, "w") as f:
        f.write("\n".join(_users(ctx, {"admin": "perm=all"}) + _lines) + "\n")
    os.kill(s.proc.pid, signal.SIGHUP)
    for c, cmd in ((locker, "LOCK"), (observer, "ELECT.OBSERVE"), (reader, "XREAD")):
        r = c.read_reply(timeout=15)
        assert isinstance(r, RespError) and r.code == "NOPERM", (cmd, r)
        assert "'%s'" % cmd in r.text and "ACL reloaded" in r.text, r
    # the queued wait was cancelled in the log: no grant for a request nobody waits for
    wait_until(lambda: (as_map(admin.call("LOCK.INFO", "L")).get("waiters") or []) == [],
               timeout=15, what="app's wait cancelled")
    # keep's XREAD (its rights unchanged) stays parked: the next event answers it
    expect_int(admin.call("PUT", "after", "1"))
    r = kept.read_reply(timeout=15)
    assert not isinstance(r, RespError) and r, r
