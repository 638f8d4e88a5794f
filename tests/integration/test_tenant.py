# SPDX-License-Identifier: Apache-2.0
"""Tenants on one cluster (docs/security.md "Tenants on one cluster"): secret files
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
from test_http import labeled, metric
from test_ownership import _authed_leader, start_acl_cluster


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


# ---- per-user quotas (item 1) ----

def _nospace_of(r, user, field):
    assert isinstance(r, RespError) and r.code == "NOSPACE", r
    assert "user %s's" % user in r.text and "%s=" % field in r.text, r.text
    return r


def test_user_at_max_sessions_is_refused_and_others_are_not(ctx):
    s, _ = _acl_node(ctx, {"a": "perm=read,lock max_sessions=2", "b": "perm=read,lock"})
    a, b = _as(ctx, s, "a"), _as(ctx, s, "b")
    for _ in range(2):
        expect_int(a.call("SESSION.OPEN", 60000))
    _nospace_of(a.call("SESSION.OPEN", 60000), "a", "max_sessions")
    for _ in range(5):
        expect_int(b.call("SESSION.OPEN", 60000))
    eq(metric(s, "fencelock_user_quota_rejections_total"), 1)


def test_user_at_max_waiters_is_refused_and_others_are_not(ctx):
    s, _ = _acl_node(ctx, {"a": "perm=read,lock max_waiters=1", "b": "perm=read,lock"})
    admin, a, b = _as(ctx, s, "admin"), _as(ctx, s, "a"), _as(ctx, s, "b")
    h = expect_int(admin.call("SESSION.OPEN", 60000))
    expect_int(admin.call("LOCK", "L", h))
    a1, a2 = expect_int(a.call("SESSION.OPEN", 60000)), expect_int(a.call("SESSION.OPEN", 60000))
    b1, b2 = expect_int(b.call("SESSION.OPEN", 60000)), expect_int(b.call("SESSION.OPEN", 60000))
    q = _as(ctx, s, "a")
    q.send("LOCK", "L", a1, "WAIT", 60000)
    wait_until(lambda: a1 in (as_map(admin.call("LOCK.INFO", "L")).get("waiters") or []),
               timeout=15, what="a's first wait queued")
    _nospace_of(a.call("LOCK", "L", a2, "WAIT", 60000), "a", "max_waiters")
    eq(a.call("LOCK", "L", a2), None, "a try-lock queues nothing: not refused")
    for sid in (b1, b2):
        _as(ctx, s, "b").send("LOCK", "L", sid, "WAIT", 60000)
    wait_until(lambda: (as_map(admin.call("LOCK.INFO", "L")).get("waiters") or [])
               == [a1, b1, b2], timeout=15, what="b's two waits queued")


def test_user_at_max_keys_is_refused_and_others_are_not(ctx):
    s, _ = _acl_node(ctx, {"a": "perm=read,write keys=a/* max_keys=2",
                           "b": "perm=read,write keys=b/*"})
    a, b = _as(ctx, s, "a"), _as(ctx, s, "b")
    expect_int(a.call("PUT", "a/1", "x"))
    expect_int(a.call("PUT", "a/2", "x"))
    _nospace_of(a.call("PUT", "a/3", "x"), "a", "max_keys")
    expect_int(a.call("PUT", "a/1", "changed"))  # no new key: not refused
    for i in range(5):
        expect_int(b.call("PUT", "b/%d" % i, "x"))
    eq(b.call("GET", "b/4"), b"x")
    expect_int(a.call("DEL", "a/2"))
    expect_int(a.call("PUT", "a/3", "x"))  # a deleted key frees a place


def test_user_at_max_bytes_is_refused_and_others_are_not(ctx):
    # 128 per record: one session (128 + its name) and one key of 128 + 3 + 500 fit 1000
    s, _ = _acl_node(ctx, {"a": "perm=read,write,lock keys=a/* max_bytes=1000",
                           "b": "perm=read,write,lock keys=b/*"})
    a, b = _as(ctx, s, "a"), _as(ctx, s, "b")
    expect_int(a.call("SESSION.OPEN", 60000))
    expect_int(a.call("PUT", "a/x", "v" * 500))
    r = _nospace_of(a.call("PUT", "a/y", "v" * 300), "a", "max_bytes")
    assert "759 in use" in r.text, r.text  # 128 + 0 (session) + 128 + 3 + 500
    _nospace_of(a.call("PUT", "a/x", "v" * 900), "a", "max_bytes")  # growing a value counts
    expect_int(b.call("SESSION.OPEN", 60000))
    expect_int(b.call("PUT", "b/x", "v" * 5000))


def test_user_at_max_parked_is_refused_and_others_are_not_and_max_parked_caps_all(ctx):
    s, _ = _acl_node(ctx, {"a": "perm=read max_parked=1", "b": "perm=read"},
                     "--max-parked", 3)
    a1, a2, b1, b2, b3 = (_as(ctx, s, u) for u in ("a", "a", "b", "b", "b"))
    a1.send("XREAD", "BLOCK", 60000, "STREAMS", "fencelock:events", "$")
    wait_until(lambda: metric(s, "fencelock_xread_blocked") == 1, timeout=15, what="a parked")
    _nospace_of(a2.call("XREAD", "BLOCK", 60000, "STREAMS", "fencelock:events", "$"), "a",
                "max_parked")
    _nospace_of(a2.call("ELECT.OBSERVE", "e", "AFTER", 0, "WAIT", 60000), "a", "max_parked")
    b1.send("XREAD", "BLOCK", 60000, "STREAMS", "fencelock:events", "$")
    b2.send("XREAD", "BLOCK", 60000, "STREAMS", "fencelock:events", "$")
    wait_until(lambda: metric(s, "fencelock_xread_blocked") == 3, timeout=15, what="b parked")
    r = b3.call("XREAD", "BLOCK", 60000, "STREAMS", "fencelock:events", "$")
    assert isinstance(r, RespError) and r.code == "NOSPACE" and "--max-parked" in r.text, r
    eq(metric(s, "fencelock_parked_rejections_total"), 1)
    usage = labeled(s, "fencelock_user_usage")
    eq(usage.get('{user="a",quota="parked"}'), 1, "a's parked usage: %r" % (usage,))
    eq(usage.get('{user="b",quota="parked"}'), 2, "b's parked usage: %r" % (usage,))
    # A request that ends gives its place back (counted as requests park and unpark):
    # closing the readers' connections unparks them, then a may park again.
    for c in (a1, b1, b2):
        c.close()  # orphaned: unparked by the sweep (at most a second later)
    wait_until(lambda: metric(s, "fencelock_xread_blocked") == 0, timeout=15,
               what="the closed readers unparked")
    usage = labeled(s, "fencelock_user_usage")
    eq((usage.get('{user="a",quota="parked"}'), usage.get('{user="b",quota="parked"}')),
       (0, 0), "parked usage after the readers went: %r" % (usage,))
    a2.send("XREAD", "BLOCK", 60000, "STREAMS", "fencelock:events", "$")
    wait_until(lambda: metric(s, "fencelock_xread_blocked") == 1, timeout=15,
               what="a parks again")


def test_user_quota_holds_across_a_leader_change(ctx):
    path = _write_acl(ctx, _users(ctx, {"root": "perm=all",
                                        "a": "perm=read,lock max_sessions=2",
                                        "b": "perm=read,lock"}))
    servers = start_acl_cluster(ctx, path)
    lead = _authed_leader(servers)
    a = _as(ctx, lead, "a")
    for _ in range(2):
        expect_int(a.call("SESSION.OPEN", 60000))
    _nospace_of(a.call("SESSION.OPEN", 60000), "a", "max_sessions")
    lead.kill9()
    lead2 = _authed_leader([x for x in servers if x is not lead])
    a2, b2 = _as(ctx, lead2, "a"), _as(ctx, lead2, "b")
    r = _nospace_of(a2.call("SESSION.OPEN", 60000), "a", "max_sessions")
    assert "2 in use" in r.text, r.text
    expect_int(b2.call("SESSION.OPEN", 60000))
