# SPDX-License-Identifier: Apache-2.0
"""TLS on the client port (docs/security.md "TLS on the client port"): certificates made here with the openssl
command (a CA, a server certificate for 127.0.0.1, client certificates, a foreign CA, an expired
client certificate made under faketime), then redis-cli --tls, redis-py ssl=True and ioredis
tls:, --tls-client-auth require (no certificate, a foreign one and an expired one are refused),
--tls-user-from-cn, garbage and plain RESP on the TLS port (closed, others keep working), the
handshake deadline, and the SIGHUP reload (a bad new pair keeps the old one)."""

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time

from helpers import eq, expect_int, expect_ok, wait_until
from resp import Conn, RespError, as_map, text
from server import faketime_at_env
from test_auth import NOAUTH, _hash
from test_examples import NODE_DIR, _node_cmd
from test_http import metric


def _openssl(*args, cwd, env=None):
    p = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0, "openssl %s: %s" % (" ".join(args), p.stderr)


def _key_csr(d, name, cn):
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + cn, cwd=d)


def _ca(d, name):
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", name + ".key", "-out", name + ".crt", "-days", "30",
             "-subj", "/CN=" + name, cwd=d)


def _sign(d, name, ca, ext, days=30, faketime=None):
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write(ext + "\n")
    args = ["x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", name + ".crt", "-days", str(days),
            "-extfile", name + ".ext"]
    if faketime:  # an expired certificate: signed "in the past", valid one day then
        p = subprocess.run(["openssl"] + args, cwd=d, capture_output=True, text=True,
                           timeout=60, env=faketime_at_env(faketime))
        assert p.returncode == 0, p.stderr
        return
    _openssl(*args, cwd=d)


SERVER_EXT = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth"
CLIENT_EXT = "extendedKeyUsage=clientAuth"


def certs(ctx):
    """Every certificate the tests use, made once per run in the run's temp dir."""
    d = ctx.tmp("pki")
    if os.path.exists(os.path.join(d, "done")):
        return d
    os.makedirs(d, exist_ok=True)
    _ca(d, "ca")
    _ca(d, "otherca")
    _key_csr(d, "server", "127.0.0.1")
    _sign(d, "server", "ca", SERVER_EXT)
    _key_csr(d, "server2", "127.0.0.1")  # the SIGHUP reload's new pair
    _sign(d, "server2", "ca", SERVER_EXT)
    _key_csr(d, "foreignsrv", "127.0.0.1")
    _sign(d, "foreignsrv", "otherca", SERVER_EXT)
    for cn in ("app", "admin", "nobody"):
        _key_csr(d, cn, cn)
        _sign(d, cn, "ca", CLIENT_EXT)
    _key_csr(d, "foreign", "admin")  # right name, wrong CA
    _sign(d, "foreign", "otherca", CLIENT_EXT)
    _key_csr(d, "expired", "admin")
    _sign(d, "expired", "ca", CLIENT_EXT, days=1, faketime="2020-01-01 00:00:00")
    open(os.path.join(d, "done"), "w").close()
    return d


def client_ctx(d, cert=None, ca="ca"):
    c = ssl.create_default_context(cafile=os.path.join(d, ca + ".crt"))
    if cert:
        c.load_cert_chain(os.path.join(d, cert + ".crt"), os.path.join(d, cert + ".key"))
    return c


def tls_server(ctx, *args, cert="server", client_cert=None, auth=None, start=True):
    d = certs(ctx)
    s = ctx.server("--tls-cert", os.path.join(d, cert + ".crt"),
                   "--tls-key", os.path.join(d, cert + ".key"),
                   "--tls-ca", os.path.join(d, "ca.crt"), *args, start=False)
    s.tls = client_ctx(d, client_cert)
    if auth:
        s.auth = auth
    if start:
        s.start()
    return s, d


def _refused(port, context, what):
    """The handshake (or the first reply after it, TLS 1.3 sends the alert late) fails."""
    try:
        c = Conn(port, timeout=5.0, ssl_context=context)
        r = c.call("PING")
        raise AssertionError("%s: connected and PING -> %r" % (what, r))
    except AssertionError:
        raise
    except Exception as e:  # noqa: BLE001 - ssl.SSLError, reset, EOF: all are refusals
        return str(e)


def test_tls_redis_cli_good_ca_works_and_wrong_ca_fails(ctx):
    s, d = tls_server(ctx)
    cli = shutil.which("redis-cli")
    assert cli, "redis-cli not installed"
    base = [cli, "-p", str(s.port), "--tls"]
    out = subprocess.run(base + ["--cacert", os.path.join(d, "ca.crt"), "PUT", "k", "v"],
                         capture_output=True, timeout=20)
    assert out.stdout.strip().isdigit(), out
    out = subprocess.run(base + ["--cacert", os.path.join(d, "ca.crt"), "GET", "k"],
                         capture_output=True, timeout=20)
    eq(out.stdout.strip(), b"v", out)
    out = subprocess.run(base + ["--cacert", os.path.join(d, "otherca.crt"), "GET", "k"],
                         capture_output=True, timeout=20)
    assert b"certificate verify failed" in out.stdout + out.stderr, out
    # the plain Python client of the tests, through TLS
    c = ctx.conn(s)
    eq(c.call("GET", "k"), b"v")
    assert metric(s, "fencelock_tls_handshakes_total") >= 2


def test_tls_redis_py_and_ioredis(ctx):
    s, d = tls_server(ctx)
    ca = os.path.join(d, "ca.crt")
    script = ("import redis,sys\n"
              "r = redis.Redis(port=int(sys.argv[1]), ssl=True, ssl_ca_certs=sys.argv[2])\n"
              "print(r.execute_command('PUT', 'py', 'x'), r.execute_command('GET', 'py'))\n")
    p = subprocess.run(["/usr/bin/python3", "-c", script, str(s.port), ca], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0 and "b'x'" in p.stdout, p.stdout + p.stderr
    node = _node_cmd()[0]
    js = ctx.tmp("tls.js")
    with open(js, "w") as f:
        f.write(r"""
const fs = require("fs");
const Redis = require(process.argv[2] + "/node_modules/ioredis");
(async () => {
  const r = new Redis({ port: +process.argv[3], host: "127.0.0.1", maxRetriesPerRequest: 1,
                        tls: { ca: fs.readFileSync(process.argv[4]) } });
  const out = { ping: await r.ping(), get: await r.call("GET", "py"),
                sid: await r.call("SESSION.OPEN", 10000) };
  r.disconnect();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
""")
    p = subprocess.run([node, js, NODE_DIR, str(s.port), ca], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, "ioredis failed:\n%s%s" % (p.stdout, p.stderr)
    out = json.loads(p.stdout)
    eq((out["ping"], out["get"]), ("PONG", "x"), out)
    assert int(out["sid"]) > 0, out


def test_tls_client_auth_require_refuses_no_foreign_and_expired_certificates(ctx):
    s, d = tls_server(ctx, "--tls-client-auth", "require", client_cert="app")
    expect_int(ctx.conn(s).call("PUT", "k", "v"))
    failures = metric(s, "fencelock_tls_handshake_failures_total")
    for cert, what in ((None, "no client certificate"), ("foreign", "a foreign CA's"),
                       ("expired", "an expired certificate")):
        _refused(s.port, client_ctx(d, cert), what)
    wait_until(lambda: metric(s, "fencelock_tls_handshake_failures_total") >= failures + 3,
               what="three failed handshakes counted")
    eq(ctx.conn(s).call("GET", "k"), b"v", "a good client after the refusals")
    # optional: no certificate is fine, a bad one is still refused
    o, _ = tls_server(ctx, "--tls-client-auth", "optional")
    eq(ctx.conn(o).call("PING"), "PONG")
    _refused(o.port, client_ctx(d, "expired"), "optional with an expired certificate")


def test_tls_user_from_cn_authenticates_as_the_acl_user(ctx):
    path = ctx.tmp("acl")
    with open(path, "w") as f:
        f.write("user admin %s perm=all\n" % _hash(ctx, "adminpw"))
        f.write("user app %s perm=read keys=app/*\n" % _hash(ctx, "apppw"))
    os.chmod(path, 0o600)
    s, d = tls_server(ctx, "--acl-file", path, "--tls-client-auth", "require",
                      "--tls-user-from-cn", client_cert="admin")
    admin = ctx.conn(s)  # no AUTH: the certificate names admin
    expect_int(admin.call("PUT", "app/x", "1"))
    app = Conn(s.port, ssl_context=client_ctx(d, "app"))
    eq(app.call("GET", "app/x"), b"1")
    r = app.call("PUT", "app/y", "1")
    assert isinstance(r, RespError) and r.code == "NOPERM", r
    assert "user=app" in app.call("CLIENT", "INFO").decode(), "CLIENT INFO names the CN's user"
    nobody = Conn(s.port, ssl_context=client_ctx(d, "nobody"))  # CN names no user
    r = nobody.call("GET", "app/x")
    assert isinstance(r, RespError) and str(r) == NOAUTH, r
    expect_ok(nobody.call("AUTH", "app", "apppw"))
    eq(nobody.call("GET", "app/x"), b"1")
    for c in (app, nobody):
        c.close()
    # the flag needs require and an ACL file
    p = subprocess.run([ctx.binary, "--tls-cert", os.path.join(d, "server.crt"), "--tls-key",
                        os.path.join(d, "server.key"), "--tls-user-from-cn", "--data-dir",
                        ctx.tmp("d2")], capture_output=True, timeout=30)
    assert p.returncode != 0 and b"--tls-user-from-cn needs" in p.stderr, p


def test_tls_garbage_plain_resp_and_a_silent_client_are_closed(ctx):
    s, _ = tls_server(ctx, "--tls-handshake-timeout", "300")
    good = ctx.conn(s)
    expect_int(good.call("PUT", "k", "v"))
    for data in (b"*1\r\n$4\r\nPING\r\n", b"PING\r\n", os.urandom(4096),
                 b"\x16\x03\x01\x00\x05hello"):
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        try:
            sock.sendall(data)
            got = b""
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    chunk = sock.recv(4096)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                got += chunk
            else:
                raise AssertionError("still open after %r" % data[:20])
            assert b"PONG" not in got, got
        finally:
            sock.close()
    silent = socket.create_connection(("127.0.0.1", s.port), timeout=5)
    try:  # connects and never speaks: closed at the handshake deadline
        silent.settimeout(5)
        eq(silent.recv(10), b"", "a silent client is closed")
    finally:
        silent.close()
    wait_until(lambda: metric(s, "fencelock_tls_handshake_timeouts_total") >= 1,
               what="handshake timeout counted")
    eq(good.call("GET", "k"), b"v", "the good client is undisturbed")
    eq(ctx.conn(s).call("PING"), "PONG")


def _server_cert_serial(port, d):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with client_ctx(d).wrap_socket(raw, server_hostname="127.0.0.1") as t:
            return t.getpeercert()["serialNumber"]


def _serial_of(d, name):
    p = subprocess.run(["openssl", "x509", "-noout", "-serial", "-in",
                        os.path.join(d, name + ".crt")], capture_output=True, text=True)
    return p.stdout.strip().split("=")[1].upper()


def test_tls_sighup_reloads_and_a_bad_pair_keeps_the_old_one(ctx):
    d0 = certs(ctx)
    live = ctx.tmp("live")
    os.makedirs(live, exist_ok=True)
    for ext in ("crt", "key"):
        shutil.copy(os.path.join(d0, "server." + ext), os.path.join(live, "s." + ext))
    s = ctx.server("--tls-cert", os.path.join(live, "s.crt"), "--tls-key",
                   os.path.join(live, "s.key"), start=False)
    s.tls = client_ctx(d0)
    s.start()
    old = ctx.conn(s)
    eq(_server_cert_serial(s.port, d0), _serial_of(d0, "server"))
    # a key that does not match the certificate: refused, the old pair stays
    shutil.copy(os.path.join(d0, "server2.crt"), os.path.join(live, "s.crt"))
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: metric(s, "fencelock_tls_reload_failures_total") >= 1, what="refused")
    assert "TLS certificate/key not reloaded" in s.log_text()
    eq(_server_cert_serial(s.port, d0), _serial_of(d0, "server"), "old pair kept")
    shutil.copy(os.path.join(d0, "server2.key"), os.path.join(live, "s.key"))
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: metric(s, "fencelock_tls_reloads_total") >= 1, what="reloaded")
    eq(_server_cert_serial(s.port, d0), _serial_of(d0, "server2"), "new pair served")
    eq(old.call("PING"), "PONG", "a connection made before the reload keeps working")


def test_tls_flags_must_go_together(ctx):
    d = certs(ctx)
    for args, want in ((["--tls-cert", os.path.join(d, "server.crt")], b"go together"),
                       (["--tls-cert", os.path.join(d, "server.crt"), "--tls-key",
                         os.path.join(d, "server.key"), "--tls-client-auth", "require"],
                        b"needs --tls-ca"),
                       (["--tls-client-auth", "maybe"], b"bad value")):
        p = subprocess.run([ctx.binary, "--data-dir", ctx.tmp("d")] + args,
                           capture_output=True, timeout=30)
        assert p.returncode != 0 and want in p.stderr, (args, p)
    # a key that does not match its certificate refuses to start, saying so
    p = subprocess.run([ctx.binary, "--data-dir", ctx.tmp("d"), "--listen", "127.0.0.1:1",
                        "--http-listen", "off", "--tls-cert", os.path.join(d, "server.crt"),
                        "--tls-key", os.path.join(d, "app.key")], capture_output=True,
                       timeout=30)
    assert p.returncode != 0 and b"key values mismatch" in p.stdout + p.stderr, p


# ---- the C client (libfencelock) and the CLI ----

def _cli(ctx, s, args, env=None):
    cli = os.path.join(os.path.dirname(ctx.binary), "fencelock")
    e = {k: v for k, v in os.environ.items() if not k.startswith("FENCELOCK_")}
    e.update(env or {})
    return subprocess.run([cli, "--endpoints", "127.0.0.1:%d" % s.port, "--timeout", "5s"]
                          + args, capture_output=True, text=True, timeout=60, env=e)


def test_tls_cli_with_and_without_a_client_certificate(ctx):
    s, d = tls_server(ctx, "--tls-client-auth", "optional")
    ca = os.path.join(d, "ca.crt")
    p = _cli(ctx, s, ["--tls-ca", ca, "put", "k", "v1"])
    eq(p.returncode, 0, p.stderr)
    p = _cli(ctx, s, ["get", "k"], env={"FENCELOCK_TLS_CA": ca})
    eq((p.returncode, p.stdout.strip()), (0, "v1"), p.stderr)
    # a lock through the library's session, keepalive thread and pool, with a certificate
    p = _cli(ctx, s, ["--tls-ca", ca, "--tls-cert", os.path.join(d, "app.crt"), "--tls-key",
                      os.path.join(d, "app.key"), "lock", "job", "--", "true"])
    eq(p.returncode, 0, p.stderr)
    p = _cli(ctx, s, ["get", "k"], env={"FENCELOCK_TLS_CA": ca,
                                        "FENCELOCK_TLS_CERT": os.path.join(d, "app.crt"),
                                        "FENCELOCK_TLS_KEY": os.path.join(d, "app.key")})
    eq((p.returncode, p.stdout.strip()), (0, "v1"), p.stderr)
    # a server whose certificate the CA did not sign; a plain client on a TLS port
    p = _cli(ctx, s, ["--tls-ca", os.path.join(d, "otherca.crt"), "get", "k"])
    assert p.returncode != 0 and "certificate verify failed" in p.stderr, p
    p = _cli(ctx, s, ["--timeout", "1s", "get", "k"])
    assert p.returncode != 0, p
    # a missing file is named at once
    p = _cli(ctx, s, ["--tls-ca", ctx.tmp("nope.crt"), "get", "k"])
    assert p.returncode != 0 and "nope.crt" in p.stderr, p
    # a name the server's certificate does not have
    p = _cli(ctx, s, ["--tls-ca", ca, "--tls-server-name", "db.example", "get", "k"])
    assert p.returncode != 0 and "certificate verify failed" in p.stderr, p


def test_tls_cli_client_auth_require(ctx):
    s, d = tls_server(ctx, "--tls-client-auth", "require", client_cert="app")
    ca = os.path.join(d, "ca.crt")
    p = _cli(ctx, s, ["--tls-ca", ca, "--timeout", "2s", "get", "k"])
    assert p.returncode != 0, p
    for cert in ("app", "expired"):
        p = _cli(ctx, s, ["--tls-ca", ca, "--tls-cert", os.path.join(d, cert + ".crt"),
                          "--tls-key", os.path.join(d, cert + ".key"), "--timeout", "2s",
                          "put", "k", "v"])
        eq(p.returncode == 0, cert == "app", "%s: %s" % (cert, p.stderr))


def test_tls_cli_watch_uses_the_clients_ca_and_certificate(ctx):
    """fl_watch reads on a client of its own: it must carry the TLS context of the client it
    was made from (a private CA, a client certificate the port requires)."""
    s, d = tls_server(ctx, "--tls-client-auth", "require", client_cert="app")
    tls = ["--tls-ca", os.path.join(d, "ca.crt"), "--tls-cert", os.path.join(d, "app.crt"),
           "--tls-key", os.path.join(d, "app.key")]
    for i in range(3):
        p = _cli(ctx, s, tls + ["put", "w/k%d" % i, "v%d" % i])
        eq(p.returncode, 0, p.stderr)
    p = _cli(ctx, s, tls + ["watch", "w/", "--from", "0", "--count", "3"])
    eq(p.returncode, 0, p.stderr)
    got = [l for l in p.stdout.splitlines() if "w/k" in l]
    eq(len(got), 3, p.stdout + p.stderr)


def test_tls_c_client_api_over_tls(ctx):
    s, d = tls_server(ctx, "--tls-client-auth", "require", client_cert="app")
    probe = os.path.join(os.path.dirname(ctx.binary), "tests", "client", "fl_probe")
    env = dict(os.environ, FL_PROBE_TLS_CA=os.path.join(d, "ca.crt"),
               FL_PROBE_TLS_CERT=os.path.join(d, "app.crt"),
               FL_PROBE_TLS_KEY=os.path.join(d, "app.key"))
    p = subprocess.run([probe, "api", "127.0.0.1:%d" % s.port], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0 and "tests:" in p.stdout and " 0 failed" in p.stdout, \
        p.stdout[-3000:] + p.stderr[-2000:]


def test_tls_close_notify_is_an_orderly_close(ctx):
    s, d = tls_server(ctx)
    c = ctx.conn(s)
    eq(c.call("PING"), "PONG")
    try:
        c.sock.unwrap()  # sends close_notify; the server closes without answering one
    except (OSError, ValueError):
        pass
    c.close()
    wait_until(lambda: metric(s, "fencelock_tls_handshakes_total") >= 1, what="handshake")
    time.sleep(0.3)
    eq(metric(s, "fencelock_tls_handshake_failures_total"), 0, "failures")
    assert "TLS error" not in s.log_text(), s.log_tail()
    eq(ctx.conn(s).call("PING"), "PONG")


def test_tls_three_node_cluster_serves_clients_and_followers_announce_over_tls(ctx):
    from cluster import start_cluster
    d = certs(ctx)
    args = ["--tls-cert", os.path.join(d, "server.crt"), "--tls-key",
            os.path.join(d, "server.key"), "--tls-ca", os.path.join(d, "ca.crt")]
    servers = start_cluster(ctx, 3, extra=args)
    for s in servers:
        s.tls = client_ctx(d)
    ep = ",".join("127.0.0.1:%d" % s.port for s in servers)

    def put():
        p = subprocess.run([os.path.join(os.path.dirname(ctx.binary), "fencelock"),
                            "--endpoints", ep, "--tls-ca", os.path.join(d, "ca.crt"),
                            "--timeout", "5s", "put", "k", "v"], capture_output=True, text=True,
                           timeout=60)
        return p.returncode == 0
    wait_until(put, timeout=30, interval=0.5, what="a write through the TLS cluster")
    # The followers announce their client addresses over TLS (verified against --tls-ca): every
    # node's CLUSTER.MEMBERS lists all three, and no handshake failed (plain RESP would).
    want = sorted("127.0.0.1:%d" % s.port for s in servers)

    def announced():
        with servers[0].conn() as c:
            return sorted(text(as_map(m)["client_address"])
                          for m in c.call("CLUSTER.MEMBERS")) == want
    wait_until(announced, timeout=30, interval=0.5, what="every client address announced")
    for s in servers:
        eq(metric(s, "fencelock_tls_handshake_failures_total"), 0, "failed handshakes")
