# SPDX-License-Identifier: Apache-2.0
"""Security of the client port (docs/security.md): the cross-protocol guard (an HTTP request
sent to the client port closes the connection before anything in it runs), users and
permissions from --acl-file (AUTH, HELLO AUTH, NOAUTH / WRONGPASS / NOPERM with their exact
texts, KEYS/LOCKS filtered, SIGHUP reload), REQ naming the session it acts on, the refusal to
listen on a public address without an ACL file, and authentication through redis-cli, redis-py
and the C client / CLI."""

import os
import signal
import shutil
import socket
import subprocess
import time

from helpers import eq, expect_err, expect_int, expect_ok, revision, wait_until
from resp import Conn, RespError, as_map, text
from test_http import metric


def _raw_exchange(port, data, timeout=3.0):
    """Send bytes, read until the server closes; return what it sent (the close is awaited)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        got = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                return got
            got += chunk
        raise AssertionError("connection still open after %r (got %r)" % (data[:40], got))
    finally:
        s.close()


def _nothing_ran(ctx, rev):
    c = ctx.conn()
    eq(c.call("GET", "pwned"), None, "key written by the HTTP request")
    eq(revision(c), rev, "revision after the HTTP request (no command may have run)")


def test_cross_protocol_post_closes_before_anything_runs(ctx):
    rev = revision(ctx.conn())
    body = b"\r\nPUT pwned x\r\nSESSION.OPEN 60000\r\n"
    req = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: text/plain\r\n"
           b"Content-Length: %d\r\n\r\n" % (ctx.srv.port, len(body))) + body
    eq(_raw_exchange(ctx.srv.port, req), b"", "reply to a POST")
    _nothing_ran(ctx, rev)


def test_cross_protocol_host_line_and_request_lines_close(ctx):
    rev = revision(ctx.conn())
    # A Host: line anywhere closes at once (replies not yet sent are dropped, as Redis does);
    # nothing after it runs.
    eq(_raw_exchange(ctx.srv.port, b"PING\r\nHost: evil.example\r\nPUT pwned x\r\n"),
       b"", "PING before Host:")
    # "METHOD target HTTP/x" inline is a request line, even for fencelock's own PUT and GET.
    for line in (b"PUT pwned HTTP/1.1", b"GET / HTTP/1.1", b"DELETE /x HTTP/1.0",
                 b"post /", b"HOST: x"):
        eq(_raw_exchange(ctx.srv.port, line + b"\r\nPUT pwned x\r\n"), b"", line.decode())
    _nothing_ran(ctx, rev)
    # The same words as RESP arrays with other shapes stay ordinary commands.
    c = ctx.conn()
    expect_int(c.call("PUT", "page", "HTTP/1.1"))
    eq(c.call("GET", "page"), b"HTTP/1.1")
    eq(metric(ctx.srv, "fencelock_cross_protocol_closes_total"), 6, "closes counted")


def test_cross_protocol_curl_runs_nothing(ctx):
    curl = shutil.which("curl")
    assert curl, "curl is not installed (apt-get install curl)"
    rev = revision(ctx.conn())
    p = subprocess.run([curl, "-sS", "-m", "5", "-X", "POST", "--data-binary",
                        "\r\nPUT pwned x\r\nSESSION.OPEN 60000\r\n",
                        "http://127.0.0.1:%d/" % ctx.srv.port], capture_output=True, timeout=20)
    assert p.returncode != 0, "curl got an answer: %r" % (p.stdout,)
    eq(p.stdout, b"", "curl's output")
    _nothing_ran(ctx, rev)


# ---- users and permissions (--acl-file) ----

WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
NOAUTH = "NOAUTH Authentication required."


def _hash(ctx, pw):
    p = subprocess.run([ctx.binary, "--hash-password"], input=pw.encode() + b"\n",
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    h = p.stdout.decode().strip()
    assert h.startswith("$argon2id$"), h
    return h


def _acl_server(ctx, extra_lines=""):
    """A node with users admin/adminpw (all), app/apppw (read,lock,write on app/*, locks job-*),
    ro/ropw (read), default/defaultpw (lock)."""
    path = ctx.tmp("acl")
    hs = {u: _hash(ctx, u + "pw") for u in ("admin", "app", "ro", "default")}
    with open(path, "w") as f:
        f.write("# test users\n")
        f.write("user admin %s perm=all\n" % hs["admin"])
        f.write("user app %s perm=read,lock,write keys=app/* locks=job-*\n" % hs["app"])
        f.write("user ro %s perm=read\n" % hs["ro"])
        f.write("user default %s perm=lock\n" % hs["default"])
        f.write(extra_lines)
    os.chmod(path, 0o600)
    s = ctx.server("--acl-file", path, start=False)
    s.auth = ("admin", "adminpw")
    s.start()
    return s, path, hs


def _authed(ctx, s, user, pw):
    c = ctx.conn(s)
    expect_ok(c.call("AUTH", user, pw), "AUTH %s" % user)
    return c


def test_acl_noauth_before_auth_only_ping_hello_auth_quit_answer(ctx):
    s, _, _ = _acl_server(ctx)
    c = ctx.conn(s)
    eq(c.call("PING"), "PONG")
    for cmd in (("GET", "app/x"), ("PUT", "app/x", "v"), ("SESSION.OPEN", 1000), ("INFO",),
                ("CLUSTER.INFO",), ("KEYS", ""), ("NOSUCH",), ("CLIENT", "ID")):
        r = c.call(*cmd)
        assert isinstance(r, RespError) and r.text == NOAUTH, (cmd, r)
    r = c.call("HELLO", 3)
    assert isinstance(r, RespError) and r.code == "NOAUTH", r
    eq(text(as_map(c.call("HELLO", 3, "AUTH", "ro", "ropw"))["proto"]) in ("3", 3), True)
    eq(c.call("GET", "app/x"), None, "after HELLO AUTH")
    expect_ok(c.call("QUIT"))


def test_acl_wrongpass_is_delayed_and_grows_and_counted(ctx):
    s, _, _ = _acl_server(ctx)
    c = ctx.conn(s)
    took = []
    for args in (("app", "bad"), ("nosuch", "x"), ("bad",)):
        t0 = time.monotonic()
        r = c.call("AUTH", *args)
        took.append(time.monotonic() - t0)
        assert isinstance(r, RespError) and r.text == WRONGPASS, (args, r)
    assert took[0] >= 0.09 and took[2] >= 0.35, took  # 100, 200, 400 ms
    r = c.call("GET", "app/x")
    assert isinstance(r, RespError) and r.text == NOAUTH, r
    expect_ok(c.call("AUTH", "defaultpw"), "AUTH password: the default user")
    expect_int(c.call("SESSION.OPEN", 5000))
    eq(metric(s, "fencelock_auth_failures_total"), 3)
    # a verified pair is cached: reconnecting does not pay Argon2id again
    for _ in range(3):
        _authed(ctx, s, "app", "apppw")
    assert metric(s, "fencelock_auth_cache_hits_total") >= 2


def test_acl_permissions_and_globs_refuse_with_noperm_and_change_nothing(ctx):
    s, _, _ = _acl_server(ctx)
    admin = _authed(ctx, s, "admin", "adminpw")
    app = _authed(ctx, s, "app", "apppw")
    ro = _authed(ctx, s, "ro", "ropw")
    expect_int(admin.call("PUT", "other", "1"))
    expect_int(app.call("PUT", "app/a", "1"))
    sid = expect_int(app.call("SESSION.OPEN", 60000))
    tok = expect_int(app.call("LOCK", "job-1", sid))
    rev = revision(admin)
    denied = [
        (app, ("PUT", "other", "2"), "NOPERM user app has no permission to access key 'other'"),
        (app, ("DEL", "other"), "NOPERM user app has no permission to access key 'other'"),
        (app, ("GET", "other"), "NOPERM user app has no permission to access key 'other'"),
        (app, ("LOCK", "db", sid), "NOPERM user app has no permission to access lock 'db'"),
        (app, ("PUT", "app/b", "1", "FENCE", "db", 1),
         "NOPERM user app has no permission to access lock 'db'"),
        (app, ("CLUSTER.ADD", 9, "127.0.0.1:1"),
         "NOPERM user app has no permission to run 'CLUSTER.ADD' (needs peer or admin)"),
        (app, ("CLUSTER.ANNOUNCE", 1, "6.6.6.6:6379", "1"), None),
        (app, ("INFO",), "NOPERM user app has no permission to run 'INFO' (needs admin)"),
        (app, ("DBSIZE",), None),
        (ro, ("PUT", "app/a", "2"), "NOPERM user ro has no permission to run 'PUT' (needs write)"),
        (ro, ("SESSION.OPEN", 1000), None),
        (ro, ("UNLOCK", "job-1", sid), None),
        (app, ("SEM.ACQUIRE", "db", sid, 2), "NOPERM user app has no permission to access lock 'db'"),
        (app, ("ELECT.CAMPAIGN", "db", sid, "v"),
         "NOPERM user app has no permission to access lock 'db'"),
        (app, ("ELECT.OBSERVE", "db"), "NOPERM user app has no permission to access lock 'db'"),
        (ro, ("SEM.RELEASE", "job-1", sid), None),
    ]
    for c, cmd, want in denied:
        r = c.call(*cmd)
        assert isinstance(r, RespError) and r.code == "NOPERM", (cmd, r)
        if want:
            eq(r.text, want, repr(cmd))
    eq(revision(admin), rev, "revision after denied commands")
    eq(metric(s, "fencelock_permission_denials_total"), len(denied))
    eq(app.call("FENCE.CHECK", "job-1", tok), "OK")
    eq(ro.call("GET", "other"), b"1")
    # KEYS / LOCKS list only what the user may read
    eq(sorted(app.call("KEYS", "")), [b"app/a"])
    eq(sorted(admin.call("KEYS", "")), [b"app/a", b"other"])
    expect_int(admin.call("LOCK", "db", expect_int(admin.call("SESSION.OPEN", 60000))))
    eq([text(as_map(x)["name"]) for x in app.call("LOCKS", "")], ["job-1"])
    eq(len(admin.call("LOCKS", "")), 2)
    # admin may do it all; CLUSTER.INFO shows the rules' hash
    info = as_map(admin.call("CLUSTER.INFO"))
    assert len(text(info["acl"])) == 16, info
    ok = app.call("CLIENT", "INFO")
    assert "user=app" in text(ok), ok


def test_acl_sighup_reloads_and_a_malformed_file_keeps_the_old_rules(ctx):
    s, path, hs = _acl_server(ctx)
    app = _authed(ctx, s, "app", "apppw")
    admin = _authed(ctx, s, "admin", "adminpw")
    h0 = text(as_map(admin.call("CLUSTER.INFO"))["acl"])
    with open(path, "a") as f:
        f.write("user broken %s\n" % hs["ro"])  # no perm=: line 6
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: "line 6: perm= is missing" in open(s.log_path).read(), what="reload error")
    eq(text(as_map(admin.call("CLUSTER.INFO"))["acl"]), h0, "old rules kept")
    expect_int(app.call("PUT", "app/x", "1"))
    with open(path, "w") as f:  # app loses write and keeps its name; ro disappears
        f.write("user admin %s perm=all\nuser app %s perm=read keys=app/*\n"
                % (hs["admin"], hs["app"]))
    ro = _authed(ctx, s, "ro", "ropw")
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: text(as_map(admin.call("CLUSTER.INFO"))["acl"]) != h0, what="reload")
    r = app.call("PUT", "app/x", "2")
    assert isinstance(r, RespError) and r.code == "NOPERM", r
    eq(app.call("GET", "app/x"), b"1")
    try:
        r = ro.call("PING")
        raise AssertionError("ro's connection still answers: %r" % (r,))
    except Exception as e:  # noqa: BLE001
        assert not isinstance(e, AssertionError), e


def test_acl_malformed_file_refuses_to_start_with_the_line(ctx):
    path = ctx.tmp("acl")
    with open(path, "w") as f:
        f.write("# x\nuser a notahash perm=read\n")
    os.chmod(path, 0o600)
    p = subprocess.run([ctx.binary, "--acl-file", path, "--data-dir", ctx.tmp("d"),
                        "--listen", "127.0.0.1:1", "--http-listen", "off"],
                       capture_output=True, timeout=30)
    assert p.returncode != 0, p
    assert b"line 2: HASH is not" in p.stdout + p.stderr, p


def test_public_listen_without_acl_file_is_refused_unless_insecure(ctx):
    p = subprocess.run([ctx.binary, "--listen", "0.0.0.0:1", "--data-dir", ctx.tmp("d")],
                       capture_output=True, timeout=30)
    eq(p.returncode, 2, "exit status")
    assert b"refusing to listen for clients on 0.0.0.0 without --acl-file" in p.stderr, p.stderr
    # Loopback is an address, not a spelling: a host name that starts with "127." is not one
    # (the check is the one the Raft and HTTP ports use, peer_guard.c).
    p = subprocess.run([ctx.binary, "--listen", "127.attacker.example:1", "--data-dir",
                        ctx.tmp("d2")], capture_output=True, timeout=30)
    eq(p.returncode, 2, "exit status for 127.attacker.example; stderr %r" % p.stderr)
    assert b"refusing to listen for clients on 127.attacker.example" in p.stderr, p.stderr
    p = subprocess.run([ctx.binary, "--hash-password"], input=b"", capture_output=True)
    assert p.returncode == 1 and b"one password" in p.stderr, p


def test_acl_redis_cli_and_redis_py_authenticate(ctx):
    s, _, _ = _acl_server(ctx)
    cli = shutil.which("redis-cli")
    assert cli, "redis-cli not installed"
    out = subprocess.run([cli, "-p", str(s.port), "--user", "app", "--pass", "apppw",
                          "--no-auth-warning", "PUT", "app/cli", "v"], capture_output=True,
                         timeout=20)
    assert out.stdout.strip().isdigit(), out
    out = subprocess.run([cli, "-p", str(s.port), "-a", "defaultpw", "--no-auth-warning",
                          "GET", "app/cli"], capture_output=True, timeout=20)
    assert b"NOPERM user default has no permission to run 'GET' (needs read)" in out.stdout, out
    out = subprocess.run([cli, "-p", str(s.port), "--user", "app", "--pass", "nope",
                          "--no-auth-warning", "PING"], capture_output=True, timeout=20)
    assert b"WRONGPASS" in out.stdout + out.stderr, out
    ok_ = subprocess.run(["/usr/bin/python3", "-c", "import redis"], capture_output=True)
    assert ok_.returncode == 0, "python3-redis not installed (apt-get install python3-redis)"
    script = ("import redis,sys\n"
              "r = redis.Redis(port=int(sys.argv[1]), username='app', password='apppw')\n"
              "print(r.execute_command('GET', 'app/cli'))\n"
              "try:\n"
              "    redis.Redis(port=int(sys.argv[1]), username='app', password='x').ping()\n"
              "except redis.RedisError as e:\n"
              "    print('AUTHERR', e)\n")
    p = subprocess.run(["/usr/bin/python3", "-c", script, str(s.port)], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "b'v'" in p.stdout and ("AUTHERR " + WRONGPASS) in p.stdout, p.stdout


def test_req_must_name_the_session_the_command_acts_on(ctx):
    c = ctx.conn()
    a = expect_int(c.call("SESSION.OPEN", 60000))
    b = expect_int(c.call("SESSION.OPEN", 60000))
    expect_int(c.call("LOCK", "l", a))
    rev = revision(c)
    for cmd in (("PUT", "junk", "v", "LEASE", b, "REQ", a, 9223372036854775807),
                ("LOCK", "m", b, "REQ", a, 9223372036854775807),
                ("UNLOCK", "l", b, "REQ", a, 9223372036854775807),
                ("SESSION.CLOSE", b, "REQ", a, 9223372036854775807)):
        r = expect_err(c.call(*cmd), "ERR", repr(cmd))
        assert "REQ sid %d is not the session this command acts on (%d)" % (a, b) in r.text, r
    eq(revision(c), rev, "revision after refused REQs")
    # A's own seqs are untouched: a low seq of A still works
    expect_int(c.call("LOCK", "m", a, "REQ", a, 1))
    expect_int(c.call("PUT", "k", "v", "LEASE", a, "REQ", a, 2))


def test_acl_cli_and_libfencelock_authenticate(ctx):
    s, _, _ = _acl_server(ctx)
    cli = os.path.join(os.path.dirname(ctx.binary), "fencelock")
    ep = ["--endpoints", "127.0.0.1:%d" % s.port, "--timeout", "10s"]
    pwf = ctx.tmp("pw")
    with open(pwf, "w") as f:
        f.write("apppw\n")

    def run(args, env=None):
        e = dict(os.environ)
        e.pop("FENCELOCK_USER", None)
        e.pop("FENCELOCK_PASSWORD", None)
        e.update(env or {})
        return subprocess.run([cli] + ep + args, capture_output=True, text=True, timeout=30,
                              env=e)

    p = run(["--user", "app", "--password-file", pwf, "put", "app/c", "v1"])
    eq(p.returncode, 0, p.stderr)
    p = run(["get", "app/c"], env={"FENCELOCK_USER": "app", "FENCELOCK_PASSWORD": "apppw"})
    eq((p.returncode, p.stdout.strip()), (0, "v1"), p.stderr)
    # a lock through the library's session, keepalive thread and pool: all authenticated
    p = run(["--user", "app", "--password-file", pwf, "lock", "job-9", "--", "true"])
    eq(p.returncode, 0, p.stderr)
    p = run(["get", "app/c"], env={"FENCELOCK_USER": "app", "FENCELOCK_PASSWORD": "wrong"})
    assert p.returncode != 0 and "authentication failed" in p.stderr and WRONGPASS in p.stderr, p
    p = run(["get", "app/c"])
    assert p.returncode != 0 and "NOAUTH Authentication required." in p.stderr, p
    p = run(["put", "other", "x"], env={"FENCELOCK_USER": "app", "FENCELOCK_PASSWORD": "apppw"})
    assert p.returncode != 0 and "permission denied" in p.stderr and \
        "NOPERM user app has no permission to access key 'other'" in p.stderr, p


def test_acl_event_stream_needs_read_and_no_name_globs(ctx):
    """XREAD shows every key, lock and value, and events are not filtered per user yet: only a
    user with read and without keys=/locks= globs may read it; the others get -NOPERM."""
    s, _, _ = _acl_server(ctx)
    admin = _authed(ctx, s, "admin", "adminpw")
    app = _authed(ctx, s, "app", "apppw")
    ro = _authed(ctx, s, "ro", "ropw")
    dflt = _authed(ctx, s, "default", "defaultpw")
    expect_int(admin.call("PUT", "secret", "v"))
    r = ro.call("XREAD", "COUNT", 10, "STREAMS", "fencelock:events", "0")
    assert not isinstance(r, RespError) and b"secret" in repr(r).encode(), r
    for c, who in ((app, "app"), (dflt, "default")):
        for cmd in (("XREAD", "STREAMS", "fencelock:events", "0"), ("XLEN", "fencelock:events")):
            r = c.call(*cmd)
            assert isinstance(r, RespError) and r.code == "NOPERM", (who, cmd, r)
