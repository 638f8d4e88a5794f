# SPDX-License-Identifier: Apache-2.0
"""Bearer tokens on the HTTP API and the HTTP revoke (docs/security.md "Bearer tokens",
docs/server.md "HTTP"). AUTH.TOKEN gives an authenticated user a signed token that
`Authorization: Bearer` presents to the HTTP API with exactly that user's rights (read
permission, locks= globs); a changed, expired, malformed or foreign-key token is 401 with no
data; removing the user or changing its password (SIGHUP) kills its tokens; members sharing
--http-token-key accept each other's tokens, others do not; a bearer token works over
--http-tls. POST /v1/locks/{name}/revoke is LOCK.REVOKE as the request's user: an admin's
works (the holder's push, the release at the deadline, the audit line naming the HTTP client
and user), a user without `revoke` on the name gets 403 and nothing changes, a POST without
X-Fencelock-Request gets 403, without credentials 401, other methods and paths 405; its query
is the port's one parser's with revoke's two parameters (the cases it accepted and refused)."""

import http.client
import json
import os
import signal
import time

from helpers import eq, expect_int, ok, open_session, wait_queued, wait_until
from resp import Push, RespError
from test_http_api import _hash, enc


def _acl_file(ctx, hashes, extra=""):
    path = ctx.tmp("acl")
    with open(path, "w") as f:
        f.write("user admin %s perm=all\n" % hashes["admin"])
        f.write("user app %s perm=read,lock locks=job-*\n" % hashes["app"])
        f.write("user lockonly %s perm=lock\n" % hashes["lockonly"])
        f.write("user oncall %s perm=read,revoke locks=job-*\n" % hashes["oncall"])
        f.write(extra)
    os.chmod(path, 0o600)
    return path


def _hashes(ctx):
    return {u: _hash(ctx, u + "pw") for u in ("admin", "app", "lockonly", "oncall")}


def _server(ctx, *extra, hashes=None):
    hashes = hashes or _hashes(ctx)
    path = _acl_file(ctx, hashes)
    s = ctx.server("--acl-file", path, *extra, start=False)
    s.auth = ("admin", "adminpw")
    s.start()
    s.acl_path, s.hashes = path, hashes
    return s


def _authed(ctx, s, user):
    c = ctx.conn(s)
    ok(c.call("AUTH", user, user + "pw"))
    return c


def _token(ctx, s, user, *ttl):
    r = _authed(ctx, s, user).call("AUTH.TOKEN", *(("TTL", ttl[0]) if ttl else ()))
    assert isinstance(r, bytes), r
    return r.decode()


def req(s, path, token=None, method="GET", headers=None, conn=None):
    h = conn or http.client.HTTPConnection("127.0.0.1", s.http_port, timeout=30)
    try:
        hs = dict(headers or {})
        if token is not None:
            hs["Authorization"] = "Bearer " + token
        h.request(method, path, headers=hs)
        r = h.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        h.close()


def _names(body):
    return [x["name"] for x in json.loads(body)["locks"]]


def _two_locks(ctx, s):
    admin = _authed(ctx, s, "admin")
    sid = open_session(admin, 60000)
    t = expect_int(admin.call("LOCK", "job-1", sid))
    expect_int(admin.call("LOCK", "secret", sid))
    return admin, sid, t


def test_http_bearer_token_has_its_users_rights(ctx):
    s = _server(ctx)
    _two_locks(ctx, s)
    st, _, body = req(s, "/v1/locks", _token(ctx, s, "admin"))
    eq((st, _names(body)), (200, ["job-1", "secret"]), body)
    app = _token(ctx, s, "app")
    assert app.startswith("flt1.app."), app
    st, _, body = req(s, "/v1/locks", app)
    eq((st, _names(body)), (200, ["job-1"]), "locks=job-* filters the list: %s" % body)
    eq(req(s, "/v1/locks/secret", app)[0], 404, "a lock outside app's globs")
    eq(req(s, "/v1/locks/job-1", app)[0], 200)
    eq(req(s, "/v1/locks", _token(ctx, s, "lockonly"))[0], 403, "no read permission")
    # AUTH.TOKEN needs an authenticated user; TTL is bounded by --http-token-max-ttl
    r = ctx.conn(s).call("AUTH.TOKEN")
    assert isinstance(r, RespError) and r.code == "NOAUTH", r
    r = _authed(ctx, s, "app").call("AUTH.TOKEN", "TTL", 86400001)
    assert isinstance(r, RespError), r
    r = _authed(ctx, s, "app").call("AUTH.TOKEN", "TTS", 5000)
    assert isinstance(r, RespError) and "syntax" in str(r), r


def test_http_bearer_token_refused_when_changed_malformed_or_expired(ctx):
    s = _server(ctx)
    _two_locks(ctx, s)
    tok = _token(ctx, s, "admin")
    eq(req(s, "/v1/locks", tok)[0], 200)
    last = tok[-1]
    forged = tok[:-1] + ("0" if last != "0" else "1")
    other_user = tok.replace("flt1.admin.", "flt1.app.", 1)
    head, exp, mac = tok.rsplit(".", 2)
    longer = "%s.%d.%s" % (head, int(exp) + 1000, mac)
    for bad, why in ((forged, "a changed signature"), (other_user, "another user's name"),
                     (longer, "a later expiry"), ("garbage", "not a token"), ("", "empty"),
                     ("flt1.admin.1.%s" % mac, "expired long ago")):
        st, hd, body = req(s, "/v1/locks", bad)
        eq(st, 401, "%s: %s" % (why, body))
        assert b"job-1" not in body and b"secret" not in body, body
        assert hd.get("www-authenticate", "").lower().startswith(("bearer", "basic")), hd
    short = _token(ctx, s, "admin", 1000)
    time.sleep(1.2)  # the token's wall-clock expiry has passed for sure
    st, _, body = req(s, "/v1/locks", short)
    eq(st, 401, "an expired token: %s" % body)
    assert b"expired" in body, body


def test_http_bearer_token_dies_with_its_user_or_password(ctx):
    s = _server(ctx)
    _two_locks(ctx, s)
    app, oncall = _token(ctx, s, "app"), _token(ctx, s, "oncall")
    eq(req(s, "/v1/locks", app)[0], 200)
    eq(req(s, "/v1/locks", oncall)[0], 200)
    admin = _authed(ctx, s, "admin")
    h0 = admin.call("CLUSTER.INFO")
    hs = dict(s.hashes)
    hs["oncall"] = _hash(ctx, "newpw")  # oncall's password changes
    with open(s.acl_path, "w") as f:  # app is removed
        f.write("user admin %s perm=all\n" % hs["admin"])
        f.write("user oncall %s perm=read,revoke locks=job-*\n" % hs["oncall"])
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: admin.call("CLUSTER.INFO") != h0, what="the ACL reload")
    eq(req(s, "/v1/locks", app)[0], 401, "a removed user's token")
    eq(req(s, "/v1/locks", oncall)[0], 401, "a token of the old password")
    c = ctx.conn(s)
    ok(c.call("AUTH", "oncall", "newpw"))
    eq(req(s, "/v1/locks", c.call("AUTH.TOKEN").decode())[0], 200, "a new token works")


test_http_bearer_token_dies_with_its_user_or_password.timeout = 120


def test_http_bearer_token_key_file_shared_by_members(ctx):
    """Two nodes with the same --http-token-key accept each other's tokens; a node with its own
    random key (no file) refuses them, and they refuse its."""
    key = ctx.tmp("token.key")
    with open(key, "w") as f:
        f.write("0123456789abcdef-shared-key\n")
    os.chmod(key, 0o600)
    hs = _hashes(ctx)
    a = _server(ctx, "--http-token-key", key, hashes=hs)
    b = _server(ctx, "--http-token-key", key, hashes=hs)
    c = _server(ctx, hashes=hs)
    ta, tc = _token(ctx, a, "app"), _token(ctx, c, "app")
    eq(req(b, "/v1/locks", ta)[0], 200, "the same key file: accepted")
    eq(req(c, "/v1/locks", ta)[0], 401, "another key: refused")
    eq(req(a, "/v1/locks", tc)[0], 401, "a random key's token elsewhere: refused")
    eq(req(c, "/v1/locks", tc)[0], 200)
    # rotating the file (SIGHUP) invalidates every token signed with the old one
    with open(key, "w") as f:
        f.write("another-key-0123456789\n")
    os.kill(b.proc.pid, signal.SIGHUP)
    wait_until(lambda: "--http-token-key re-read" in open(b.log_path).read(), what="reload")
    eq(req(b, "/v1/locks", ta)[0], 401, "the old key's token after the rotation")


test_http_bearer_token_key_file_shared_by_members.timeout = 120


def test_http_bearer_token_over_tls(ctx):
    from test_http_tls import https_server
    hs = _hashes(ctx)
    path = _acl_file(ctx, hs)
    s, _ = https_server(ctx, "--acl-file", path, auth=("admin", "adminpw"))
    tok = _token(ctx, s, "app")
    h = http.client.HTTPSConnection("127.0.0.1", s.http_port, timeout=30, context=s.tls)
    st, _, body = req(s, "/v1/locks", tok, conn=h)
    eq((st, json.loads(body)["locks"]), (200, []), body)
    h = http.client.HTTPSConnection("127.0.0.1", s.http_port, timeout=30, context=s.tls)
    eq(req(s, "/v1/locks", tok + "0", conn=h)[0], 401)


# ---- POST /v1/locks/{name}/revoke ----

CSRF = {"X-Fencelock-Request": "1"}


def _post(s, name, token=None, query="", headers=CSRF):
    return req(s, "/v1/locks/%s/revoke%s" % (enc(name), query), token, "POST", headers)


def _holder(c, name):
    from helpers import lock_info
    return lock_info(c, name)


def test_http_revoke_by_an_admin_pushes_releases_and_is_audited(ctx):
    s = _server(ctx, "--audit-log", "audit.log")
    admin = _authed(ctx, s, "admin")
    a = open_session(admin, 60000)
    other = open_session(admin, 60000)
    t = expect_int(admin.call("LOCK", "job-1", a))
    expect_int(admin.call("LOCK", "job-2", other))
    h3 = _authed(ctx, s, "admin")  # the holder's RESP3 connection, parked on another lock
    h3.call("HELLO", 3)
    h3.send("LOCK", "job-2", a, "WAIT", 60000)
    wait_queued(admin, "job-2", a)
    tok = _token(ctx, s, "admin")
    st, _, body = _post(s, "job-1", tok, "?deadline=1500&reason=deploy%20now")
    eq(st, 200, body)
    got = json.loads(body)
    eq((got["name"], got["token"], got["deadline_ms"]), ("job-1", t, 1500), got)
    r = h3.read_reply(timeout=20)
    assert isinstance(r, Push), r
    push = [x.decode() if isinstance(x, bytes) else x for x in r]
    eq(push[:5], ["revoke-requested", "job-1", t, 1500, "deploy now"])
    assert push[5].startswith("admin@127.0.0.1") and "HTTP" in push[5], push
    # the deadline passes: the lock is released (the grant is gone)
    def released():
        info = _holder(admin, "job-1")
        return info is None or not info.get("holder") or info.get("token") != t
    wait_until(released, timeout=30, what="release at the deadline")
    # the audit line names the user and the HTTP client
    audit = os.path.join(s.workdir, "audit.log")
    lines = [json.loads(x) for x in open(audit).read().splitlines()]
    rv = [x for x in lines if x["event"] == "lock.revoke"]
    eq(len(rv), 1, lines)
    eq((rv[0]["user"], rv[0]["addr"]), ("admin", "127.0.0.1"), rv)
    assert "name=job-1 deadline_ms=1500" in rv[0]["detail"] and "via=http" in rv[0]["detail"], rv
    # Basic works as well as a bearer token (the same gate), for the revoke permission
    import base64
    basic = {"Authorization": "Basic " + base64.b64encode(b"oncall:oncallpw").decode()}
    basic.update(CSRF)
    expect_int(admin.call("LOCK", "job-3", other))
    st, _, body = _post(s, "job-3", headers=basic)
    eq(st, 200, "oncall has revoke on job-*: %s" % body)


test_http_revoke_by_an_admin_pushes_releases_and_is_audited.timeout = 120


def test_http_revoke_refusals_change_nothing(ctx):
    s = _server(ctx, "--audit-log", "audit.log")
    admin, sid, t = _two_locks(ctx, s)
    info = admin.call("LOCK.INFO", "job-1")
    oncall, app, adm = (_token(ctx, s, u) for u in ("oncall", "app", "admin"))
    st, _, body = _post(s, "job-1", app)
    eq(st, 403, "app has no revoke permission: %s" % body)
    st, _, body = _post(s, "secret", oncall)
    eq(st, 403, "oncall's locks= globs do not match 'secret': %s" % body)
    st, _, body = _post(s, "job-1", adm, headers={})
    eq(st, 403, "no X-Fencelock-Request header: %s" % body)
    st, _, body = _post(s, "job-1", None, headers={"X-Fencelock-Request": "1",
                                                  "Cookie": "Authorization=Bearer " + adm})
    eq(st, 401, "credentials from a cookie are not credentials: %s" % body)
    eq(_post(s, "job-1")[0], 401, "no credentials")
    eq(_post(s, "job-1", adm + "x")[0], 401, "a bad token")
    eq(_post(s, "job-1", adm, "?deadline=0")[0], 400)
    eq(_post(s, "job-1", adm, "?color=red")[0], 400)
    eq(_post(s, "free-one", adm)[0], 409, "no holder to revoke")
    eq(admin.call("LOCK.INFO", "job-1"), info, "nothing changed")
    # other methods and paths: 405
    eq(req(s, "/v1/locks/job-1", adm, "POST", CSRF)[0], 405)
    eq(req(s, "/v1/locks", adm, "POST", CSRF)[0], 405)
    eq(req(s, "/health", None, "POST", CSRF)[0], 405)
    eq(req(s, "/v1/locks/job-1/revoke", adm, "PUT", CSRF)[0], 405)
    eq(req(s, "/v1/locks/job-1/revoke", adm, "DELETE", CSRF)[0], 405)
    eq(req(s, "/v1/locks/job-1/revoke", adm, "GET")[0], 404, "GET of the revoke path")
    eq(admin.call("LOCK.INFO", "job-1"), info, "nothing changed")
    lines = [json.loads(x) for x in
             open(os.path.join(s.workdir, "audit.log")).read().splitlines()]
    # only the revoke of free-one was proposed (and refused by the state machine: 409), as
    # LOCK.REVOKE's audit line is written when the leader proposes
    eq([x["detail"].split()[0] for x in lines if x["event"] == "lock.revoke"], ["name=free-one"])
    assert any(x["event"] == "permission.denied" and x["user"] == "app" for x in lines), lines


# What POST .../revoke's query parser accepts and refuses (the HTTP port's one query parser,
# told revoke's two parameters): an accepted query reaches the state machine, which answers 409
# for a lock nobody holds; a refused one is 400 and proposes nothing.
REVOKE_QUERY_ACCEPTED = ["", "?deadline=1500&reason=deploy%20now", "?reason=a+b", "?reason",
                         "?reason=", "?&&deadline=5&", "?reason=%41%62&deadline=7",
                         "?reason=a=b", "?deadline=00012", "?deadline=60000",
                         "?reason=" + "r" * 16, "?reason=" + "%41" * 16]
REVOKE_QUERY_REFUSED = ["?deadline=0", "?deadline=", "?deadline", "?deadline=-1",
                        "?deadline=1.5", "?deadline=%31", "?deadline=60001",
                        "?deadline=18446744073709551616", "?deadline=1&deadline=2",
                        "?reason=a&reason=b", "?reason&reason", "?color=red", "?Deadline=1",
                        "?stale", "?prefix=a", "?=x", "?deadline%3D1", "?reason=%zz",
                        "?reason=%4", "?reason=%", "?reason=" + "r" * 17,
                        "?reason=" + "%41" * 17]


def test_http_revoke_query_accepts_and_refuses_what_it_did(ctx):
    s = _server(ctx, "--max-key", 16, "--max-wait", 60000, "--audit-log", "audit.log")
    admin, sid, t = _two_locks(ctx, s)
    info = admin.call("LOCK.INFO", "job-1")
    adm = _token(ctx, s, "admin")
    for q in REVOKE_QUERY_ACCEPTED:
        st, _, body = _post(s, "free-1", adm, q)
        eq(st, 409, "query %r is accepted (then: no holder to revoke): %s" % (q, body))
    for q in REVOKE_QUERY_REFUSED:
        st, _, body = _post(s, "job-1", adm, q)
        eq(st, 400, "query %r is refused: %s" % (q, body))
        assert body.endswith(b"\n") and len(body) > 1, (q, body)
    eq(admin.call("LOCK.INFO", "job-1"), info, "no refused query changed anything")
    lines = [json.loads(x) for x in
             open(os.path.join(s.workdir, "audit.log")).read().splitlines()]
    eq(len([x for x in lines if x["event"] == "lock.revoke"]), len(REVOKE_QUERY_ACCEPTED),
       "only the accepted queries were proposed")


def test_cli_token_prints_a_bearer_token(ctx):
    """`fencelock token [--ttl DUR]` (libfencelock's fl_auth_token): a token the HTTP API takes
    as the CLI's user; --json; a TTL over --http-token-max-ttl or under 1 s is refused; without
    credentials the servers say NOAUTH."""
    from test_cli import run
    s = _server(ctx)
    _two_locks(ctx, s)
    env = {"FENCELOCK_USER": "app", "FENCELOCK_PASSWORD": "apppw"}
    r = run(ctx, [s], "token", "--ttl", "10m", env=env)
    eq(r.rc, 0, repr(r))
    tok = r.out.strip()
    head, exp, _ = tok.rsplit(".", 2)
    eq(head, "flt1.app")
    assert 0 < int(exp) - time.time() * 1000 <= 600000, tok
    st, _, body = req(s, "/v1/locks", tok)
    eq((st, _names(body)), (200, ["job-1"]), body)
    r = run(ctx, [s], "--json", "token", env=env)
    eq(r.rc, 0, repr(r))
    eq(req(s, "/v1/locks", json.loads(r.out)["token"])[0], 200)
    r = run(ctx, [s], "token", "--ttl", "25h", env=env)
    assert r.rc != 0 and "TTL" in r.err, r
    r = run(ctx, [s], "token", "--ttl", "10ms", env=env)
    assert r.rc != 0 and "--ttl" in r.err, r
    r = run(ctx, [s], "token")
    assert r.rc != 0 and ("NOAUTH" in r.err or "uthenticat" in r.err), r
