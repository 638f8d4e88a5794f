# SPDX-License-Identifier: Apache-2.0
"""TLS on the HTTP port (--http-tls; docs/security.md "The HTTP port"): the port speaks TLS with
the client port's certificate (made here with openssl, as test_tls.py does). /health and
/v1/locks over https with the CA; plain HTTP to it gets no HTTP answer and counts as a failed
handshake, a silent client meets --tls-handshake-timeout; HTTP Basic is accepted over TLS from
any address (the loopback rule of plain HTTP stays without --http-tls); /v1/events streams over
TLS; a SIGHUP reload of the certificate is seen by the next connection; --tls-client-auth require
and --tls-user-from-cn apply as on the client port; --http-tls without --tls-cert refuses to
start; nginx's auth_request reaches /v1/fence over https.

--http-tls-cert/--http-tls-key: the HTTP port's own pair (another subject and CA than the client
port's, as a public CA's certificate for browsers would be) beside the client port's own, no
client certificate asked for on it even under --tls-client-auth require, its own SIGHUP reload
(a broken new pair keeps the old one, counted), one flag without the other or a file that does
not load refused at start."""

import base64
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

from helpers import eq, expect_int, ok, open_session, wait_until
from test_http_api import Sse
from test_tls import SERVER_EXT, _ca, _hash, _key_csr, _serial_of, _sign, certs, client_ctx


def _https(srv, ctx_ssl):
    return http.client.HTTPSConnection("127.0.0.1", srv.http_port, timeout=30, context=ctx_ssl)


def get(srv, path, auth=None, ctx_ssl=None, headers=None):
    """GET over https, verifying the server against the test CA: (status, headers, body)."""
    h = _https(srv, ctx_ssl or srv.tls)
    try:
        hs = dict(headers or {})
        if auth:
            hs["Authorization"] = "Basic " + base64.b64encode(
                ("%s:%s" % auth).encode()).decode()
        h.request("GET", path, headers=hs)
        r = h.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        h.close()


def metric(srv, name, auth=None):
    _, _, body = get(srv, "/metrics", auth=auth)
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no metric %s" % name)


def _acl(ctx):
    path = ctx.tmp("acl")
    with open(path, "w") as f:
        f.write("user admin %s perm=all\n" % _hash(ctx, "adminpw"))
        f.write("user app %s perm=read,lock locks=job-*\n" % _hash(ctx, "apppw"))
    os.chmod(path, 0o600)
    return path


def https_server(ctx, *args, cert_dir=None, cert="server", client_cert=None, auth=None):
    d = certs(ctx)
    cd = cert_dir or d
    s = ctx.server("--tls-cert", os.path.join(cd, cert + ".crt"),
                   "--tls-key", os.path.join(cd, cert + ".key"),
                   "--tls-ca", os.path.join(d, "ca.crt"), "--http-tls", *args, start=False)
    s.tls = client_ctx(d, client_cert)
    if auth:
        s.auth = auth
    s.start()
    return s, d


class SseTls(Sse):
    """test_http_api's SSE reader over TLS."""

    def __init__(self, srv, path, auth=None):  # pylint: disable=super-init-not-called
        raw = socket.create_connection(("127.0.0.1", srv.http_port), timeout=30)
        self.sock = srv.tls.wrap_socket(raw, server_hostname="127.0.0.1")
        req = "GET %s HTTP/1.1\r\nHost: x\r\n" % path
        if auth:
            req += "Authorization: Basic %s\r\n" % base64.b64encode(
                ("%s:%s" % auth).encode()).decode()
        self.sock.sendall((req + "\r\n").encode())
        self.buf = b""
        self.head = self._until(b"\r\n\r\n").decode()
        self.status = int(self.head.split(" ", 2)[1])


def test_http_tls_health_and_locks_over_https(ctx):
    s, d = https_server(ctx)
    c = ctx.conn(s)
    sid = open_session(c)
    token = expect_int(c.call("LOCK", "job-1", sid))
    st, _, body = get(s, "/health")
    eq(st, 200, body)
    st, hd, body = get(s, "/v1/locks")
    eq((st, hd.get("content-type")), (200, "application/json"), body)
    assert b'"job-1"' in body and str(token).encode() in body, body
    # the server is verified: a client trusting another CA refuses it
    try:
        get(s, "/health", ctx_ssl=client_ctx(d, ca="otherca"))
        raise AssertionError("a client trusting another CA accepted the HTTP port")
    except ssl.SSLCertVerificationError:
        pass
    assert metric(s, "fencelock_http_tls_handshakes_total") >= 3


def _plain_gets_nothing(port):
    """Plain HTTP to the TLS port: no HTTP answer, the connection is closed."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(4096)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            got += chunk
        else:
            raise AssertionError("still open after plain HTTP")
        assert b"HTTP/1" not in got and b"ok" not in got, got
    finally:
        sock.close()


def test_http_tls_plain_http_is_a_failed_handshake_and_a_silent_client_times_out(ctx):
    s, _ = https_server(ctx, "--tls-handshake-timeout", "300")
    before = metric(s, "fencelock_http_tls_handshake_failures_total")
    _plain_gets_nothing(s.http_port)
    wait_until(lambda: metric(s, "fencelock_http_tls_handshake_failures_total") >= before + 1,
               timeout=30, what="plain HTTP counted as a failed handshake")
    silent = socket.create_connection(("127.0.0.1", s.http_port), timeout=30)
    try:  # connects and never speaks: closed at the handshake deadline
        eq(silent.recv(10), b"", "a silent client is closed")
    finally:
        silent.close()
    wait_until(lambda: metric(s, "fencelock_http_tls_handshake_timeouts_total") >= 1,
               timeout=30, what="handshake timeout counted")
    eq(get(s, "/health")[0], 200, "a good client after them")
    # the RESP port's own TLS counters are not moved by the HTTP port
    eq(metric(s, "fencelock_tls_handshake_failures_total"), 0.0)


def test_http_tls_basic_auth_accepted_over_tls_from_any_address(ctx):
    """401 without or with wrong credentials, 200 with them, the locks= globs apply. (That the
    peer's address no longer matters under --http-tls cannot be shown here: test servers listen
    on loopback only.)"""
    acl = _acl(ctx)
    s, _ = https_server(ctx, "--acl-file", acl, auth=("admin", "adminpw"))
    c = ctx.conn(s)
    ok(c.call("AUTH", "admin", "adminpw"))
    sid = open_session(c)
    t = expect_int(c.call("LOCK", "job-1", sid))
    expect_int(c.call("LOCK", "secret", sid))
    st, hd, _ = get(s, "/v1/locks")
    eq(st, 401, "no credentials")
    assert "basic" in hd.get("www-authenticate", "").lower(), hd
    eq(get(s, "/v1/locks", auth=("admin", "wrong"))[0], 401, "wrong password")
    st, _, body = get(s, "/v1/locks", auth=("admin", "adminpw"))
    eq(st, 200, body)
    eq([x["name"] for x in json.loads(body)["locks"]], ["job-1", "secret"])
    st, _, body = get(s, "/v1/locks/job-1", auth=("app", "apppw"))
    eq((st, json.loads(body)["token"]), (200, t), body)
    eq(get(s, "/v1/locks/secret", auth=("app", "apppw"))[0], 404, "outside the locks= glob")


def test_http_tls_events_stream(ctx):
    acl = _acl(ctx)
    s, _ = https_server(ctx, "--acl-file", acl, auth=("admin", "adminpw"))
    c = ctx.conn(s)
    ok(c.call("AUTH", "admin", "adminpw"))
    sid = open_session(c)
    ev = SseTls(s, "/v1/events?prefix=job-", auth=("admin", "adminpw"))
    eq(ev.status, 200, ev.head)
    assert "text/event-stream" in ev.head, ev.head
    t1 = expect_int(c.call("LOCK", "job-1", sid))
    ok(c.call("UNLOCK", "job-1", sid))
    _, kind, data = ev.next()
    eq((kind, data["name"], data["token"]), ("grant", "job-1", t1))
    _, kind, data = ev.next()
    eq((kind, data["name"]), ("release", "job-1"))
    ev.close()


def _http_cert_serial(srv, d):
    with socket.create_connection(("127.0.0.1", srv.http_port), timeout=30) as raw:
        with client_ctx(d).wrap_socket(raw, server_hostname="127.0.0.1") as t:
            return t.getpeercert()["serialNumber"]


def test_http_tls_sighup_reload_is_seen_by_a_new_connection(ctx):
    d0 = certs(ctx)
    live = ctx.tmp("live")
    os.makedirs(live, exist_ok=True)
    for ext in ("crt", "key"):
        shutil.copy(os.path.join(d0, "server." + ext), os.path.join(live, "server." + ext))
    s, d = https_server(ctx, cert_dir=live)
    eq(_http_cert_serial(s, d), _serial_of(d, "server"))
    for ext in ("crt", "key"):
        shutil.copy(os.path.join(d0, "server2." + ext), os.path.join(live, "server." + ext))
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: metric(s, "fencelock_tls_reloads_total") >= 1, timeout=30,
               what="reloaded")
    eq(_http_cert_serial(s, d), _serial_of(d, "server2"), "the new certificate served")
    eq(get(s, "/health")[0], 200)


def test_http_tls_client_auth_require_and_user_from_cn(ctx):
    acl = _acl(ctx)
    s, d = https_server(ctx, "--acl-file", acl, "--tls-client-auth", "require",
                        "--tls-user-from-cn", client_cert="admin", auth=("admin", "adminpw"))
    # no client certificate: the handshake (or the first read, TLS 1.3) fails
    try:
        st = get(s, "/health", ctx_ssl=client_ctx(d))[0]
        raise AssertionError("no client certificate, got %r" % st)
    except (ssl.SSLError, ConnectionError, http.client.RemoteDisconnected):
        pass
    c = ctx.conn(s)  # admin by its certificate
    sid = open_session(c)
    expect_int(c.call("LOCK", "job-1", sid))
    expect_int(c.call("LOCK", "secret", sid))
    # the certificate's CN is the user: no Basic needed; app's globs apply
    st, _, body = get(s, "/v1/locks")
    eq((st, [x["name"] for x in json.loads(body)["locks"]]), (200, ["job-1", "secret"]), body)
    st, _, body = get(s, "/v1/locks", ctx_ssl=client_ctx(d, "app"))
    eq((st, [x["name"] for x in json.loads(body)["locks"]]), (200, ["job-1"]), body)
    # a CN naming no user: Basic is asked for
    eq(get(s, "/v1/locks", ctx_ssl=client_ctx(d, "nobody"))[0], 401)
    eq(get(s, "/v1/locks", ctx_ssl=client_ctx(d, "nobody"), auth=("admin", "adminpw"))[0], 200)


def test_http_tls_needs_tls_cert(ctx):
    p = subprocess.run([ctx.binary, "--data-dir", ctx.tmp("d"), "--http-tls"],
                       capture_output=True, timeout=30)
    assert p.returncode != 0 and b"--http-tls needs --tls-cert" in p.stderr, p


def test_http_tls_nginx_auth_request_over_https(ctx):
    """contrib/nginx/fencelock-online-tls.conf: nginx verifies the HTTP port's certificate,
    authenticates with Basic, and lets through only the current holder's token."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "fencing"))
    import nginx  # pylint: disable=import-outside-toplevel
    why = nginx.available()
    assert why is None, why
    acl = _acl(ctx)
    s, d = https_server(ctx, "--acl-file", acl, auth=("admin", "adminpw"))
    c = ctx.conn(s)
    ok(c.call("AUTH", "admin", "adminpw"))
    sid = open_session(c)
    t1 = expect_int(c.call("LOCK", "job-1", sid))
    ok(c.call("UNLOCK", "job-1", sid))
    t2 = expect_int(c.call("LOCK", "job-1", sid))
    backend = nginx.Backend()
    ctx.defer(backend.stop)
    contrib = os.path.join(here, "..", "..", "contrib", "nginx")
    ca = os.path.join(ctx.tmp("nginx-ca.crt"))
    shutil.copy(os.path.join(d, "ca.crt"), ca)
    os.chmod(ca, 0o644)
    http_block = ("    upstream fencelock { server 127.0.0.1:%d; }\n"
                  "    upstream backend { server 127.0.0.1:%d; }\n"
                  % (s.http_port, backend.port))
    server_block = (
        "        proxy_ssl_trusted_certificate %s;\n"
        "        proxy_ssl_verify on;\n"
        "        proxy_ssl_name localhost;\n"
        "        set $fencelock_authorization \"Basic %s\";\n"
        "        include %s/fencelock-online-tls.conf;\n"
        "        location /res/ { auth_request /_fencelock; proxy_pass http://backend; }\n"
        % (ca, base64.b64encode(b"app:apppw").decode(), os.path.abspath(contrib)))
    ng = nginx.Nginx(ctx.workdir, http_block, server_block)
    ctx.defer(ng.stop)
    ng.start()
    hs0 = metric(s, "fencelock_http_tls_handshakes_total")

    def put(token, lock="job-1"):
        h = http.client.HTTPConnection("127.0.0.1", ng.port, timeout=30)
        try:
            h.request("PUT", "/res/job-1", body=b"v%d" % token,
                      headers={"Fencing-Lock": lock, "Fencing-Token": str(token)})
            r = h.getresponse()
            r.read()
            return r.status
        finally:
            h.close()

    eq(put(t2), 200, "the holder's token passes: %s" % ng.log_tail())
    eq(backend.values.get("job-1"), "v%d" % t2)
    eq(put(t1), 403, "a stale token is refused")
    eq(backend.values.get("job-1"), "v%d" % t2, "the stale write never reached the backend")
    eq(put(t2, lock="secret"), 403, "a lock outside app's globs")
    assert metric(s, "fencelock_http_tls_handshakes_total") > hs0, "nginx spoke TLS"


def web_certs(ctx):
    """The HTTP port's own pairs: a CA of their own ("webca", standing for a public CA) and two
    certificates for 127.0.0.1 whose subjects differ from the client port's (CN=127.0.0.1)."""
    d = ctx.tmp("webpki")
    if os.path.exists(os.path.join(d, "done")):
        return d
    os.makedirs(d, exist_ok=True)
    _ca(d, "webca")
    for name in ("console", "console2"):
        _key_csr(d, name, name + ".example")
        _sign(d, name, "webca", SERVER_EXT)
    open(os.path.join(d, "done"), "w").close()
    return d


def _subject_cn(port, ca_file, cert=None):
    """The CN of the certificate the port presents, verified against ca_file."""
    c = ssl.create_default_context(cafile=ca_file)
    if cert:
        c.load_cert_chain(cert + ".crt", cert + ".key")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with c.wrap_socket(raw, server_hostname="127.0.0.1") as t:
            return dict(x[0] for x in t.getpeercert()["subject"])["commonName"]


def own_pair_server(ctx, *args, http_dir=None, http_name="console", client_tls=True):
    w = web_certs(ctx)
    hd = http_dir or w
    flags = ["--http-tls-cert", os.path.join(hd, http_name + ".crt"),
             "--http-tls-key", os.path.join(hd, http_name + ".key")]
    d = certs(ctx)
    if client_tls:
        flags += ["--tls-cert", os.path.join(d, "server.crt"), "--tls-key",
                  os.path.join(d, "server.key"), "--tls-ca", os.path.join(d, "ca.crt")]
    s = ctx.server(*(flags + list(args)), start=False)
    s.http_ssl = ssl.create_default_context(cafile=os.path.join(w, "webca.crt"))
    if client_tls:
        s.tls = client_ctx(d, "admin")
    s.start()
    return s, d, w


def test_http_tls_own_pair_beside_the_client_ports(ctx):
    """The HTTP port presents its own certificate (its subject, its CA), the client port keeps
    its own; the HTTP port asks for no client certificate although the client port requires
    one; --http-tls is implied by the pair."""
    s, d, w = own_pair_server(ctx, "--tls-client-auth", "require")
    eq(_subject_cn(s.http_port, os.path.join(w, "webca.crt")), "console.example",
       "the HTTP port's own certificate")
    eq(_subject_cn(s.port, os.path.join(d, "ca.crt"), os.path.join(d, "admin")), "127.0.0.1",
       "the client port keeps its own")
    try:  # a browser trusting only the cluster's CA does not accept the HTTP port
        get(s, "/health", ctx_ssl=client_ctx(d))
        raise AssertionError("the HTTP port served the client port's certificate")
    except ssl.SSLCertVerificationError:
        pass
    c = ctx.conn(s)
    sid = open_session(c)
    token = expect_int(c.call("LOCK", "job-1", sid))
    st, _, body = get(s, "/v1/locks", ctx_ssl=s.http_ssl)  # no client certificate
    eq(st, 200, body)
    assert str(token).encode() in body, body
    _plain_gets_nothing(s.http_port)
    _, _, body = get(s, "/metrics", ctx_ssl=s.http_ssl)
    assert b"fencelock_http_tls_reload_failures_total 0" in body, body
    expiry = [float(x.split()[1]) for x in body.decode().splitlines()
              if x.startswith('fencelock_cert_expiry_timestamp_seconds{cert="http_tls"} ')]
    assert len(expiry) == 1 and expiry[0] > time.time(), "http_tls expiry: %r" % expiry


def test_http_tls_own_pair_sighup_reload_and_a_broken_pair_keeps_the_old(ctx):
    """Without client port TLS: SIGHUP after replacing the HTTP files serves the new certificate
    to new connections; a certificate without its key first is refused, logged and counted, and
    the old pair stays."""
    w = web_certs(ctx)
    live = ctx.tmp("weblive")
    os.makedirs(live, exist_ok=True)
    for ext in ("crt", "key"):
        shutil.copy(os.path.join(w, "console." + ext), os.path.join(live, "h." + ext))
    s, _, _ = own_pair_server(ctx, http_dir=live, http_name="h", client_tls=False)
    ca = os.path.join(w, "webca.crt")
    eq(_subject_cn(s.http_port, ca), "console.example")

    def m(name):
        _, _, body = get(s, "/metrics", ctx_ssl=s.http_ssl)
        for line in body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError("no metric %s" % name)

    shutil.copy(os.path.join(w, "console2.crt"), os.path.join(live, "h.crt"))  # old key
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: m("fencelock_http_tls_reload_failures_total") >= 1, timeout=30,
               what="the broken pair refused")
    assert "HTTP port TLS certificate/key not reloaded" in s.log_text(), s.log_text()
    eq(_subject_cn(s.http_port, ca), "console.example", "the old pair kept")
    eq(m("fencelock_http_tls_reloads_total"), 0.0)
    shutil.copy(os.path.join(w, "console2.key"), os.path.join(live, "h.key"))
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: m("fencelock_http_tls_reloads_total") >= 1, timeout=30,
               what="reloaded")
    eq(_subject_cn(s.http_port, ca), "console2.example", "the new pair served")
    eq(get(s, "/health", ctx_ssl=s.http_ssl)[0], 200)


def test_http_tls_own_pair_refused_at_start(ctx):
    """One flag without the other, a key that does not match, a missing file: refused, saying
    why."""
    w = web_certs(ctx)
    crt, key = os.path.join(w, "console.crt"), os.path.join(w, "console.key")
    base = [ctx.binary, "--data-dir", ctx.tmp("d"), "--listen", "127.0.0.1:1",
            "--http-listen", "127.0.0.1:1"]
    for args, want in ((["--http-tls-cert", crt], b"--http-tls-cert and --http-tls-key go "
                        b"together"),
                       (["--http-tls-key", key], b"--http-tls-cert and --http-tls-key go "
                        b"together"),
                       (["--http-tls-cert", crt, "--http-tls-key",
                         os.path.join(w, "console2.key")], b"key values mismatch"),
                       (["--http-tls-cert", os.path.join(w, "nope.crt"), "--http-tls-key", key],
                        b"nope.crt")):
        p = subprocess.run(base + args, capture_output=True, timeout=30)
        assert p.returncode != 0 and want in p.stdout + p.stderr, (args, p)
