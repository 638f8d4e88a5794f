# SPDX-License-Identifier: Apache-2.0
"""The package over TLS (certificates made by tests/integration/test_tls.py's helpers with the
openssl command) and with --acl-file users: AUTH on every connection of the pool (calls and
the keepalive thread), a wrong password refused at once, -NOPERM as PermissionDenied."""

import os
import time

import pytest

from conftest import endpoint

from fencelock import AuthError, Client, PermissionDenied, Unavailable


class _Ctx:
    """What the integration helpers (certs, tls_server, _acl_server) need of a run.py ctx."""

    def __init__(self, nodes):
        self.nodes, self.binary = nodes, nodes.binary

    def tmp(self, name):
        return os.path.join(self.nodes.workdir, name)

    def server(self, *args, start=True):
        from server import Server
        n = len(self.nodes.servers) + 1
        s = Server(self.binary, os.path.join(self.nodes.workdir, "srv%d" % n), args=args)
        self.nodes.servers.append(s)
        return s.start() if start else s


def _keepalive_seen(sess):
    """The safe deadline moves on: a keepalive, on a connection of its own, went through."""
    su = sess.safe_until()
    end = time.monotonic() + 10
    while sess.safe_until() == su and time.monotonic() < end:
        time.sleep(0.05)
    assert sess.safe_until() > su, "no keepalive acknowledged (lost: %s)" % sess.is_lost()


def test_tls_with_ca_dict_context_and_wrong_ca(nodes):
    from test_tls import client_ctx, tls_server
    s, d = tls_server(_Ctx(nodes), "--tls-client-auth", "optional")
    ep = endpoint(s)
    with Client(ep, ssl={"ca": os.path.join(d, "ca.crt")}) as c, c.session(10.0) as sess:
        with sess.lock("tls-lock") as token:
            sess.put("k", "v", fence=("tls-lock", token))
        _keepalive_seen(sess)
    with Client(ep, ssl=client_ctx(d, "app")) as c:  # an SSLContext with a client cert
        assert c.get("k") == b"v"
    with Client(ep, ssl={"ca": os.path.join(d, "otherca.crt")}, timeout=1.0) as c:
        with pytest.raises(Unavailable) as ei:
            c.get("k")
        assert "certificate verify failed" in str(ei.value), str(ei.value)
    with Client(ep, timeout=1.0) as c:  # plain on a TLS port
        with pytest.raises(Unavailable):
            c.get("k")


def test_acl_users(nodes):
    from test_auth import _acl_server
    s, _, _ = _acl_server(_Ctx(nodes))
    ep = endpoint(s)
    with Client(ep, username="app", password="apppw") as c, c.session(10.0) as sess:
        with sess.lock("job-1") as token:
            sess.put("app/x", "1", fence=("job-1", token))
        with pytest.raises(PermissionDenied):
            sess.put("other", "1")
        with pytest.raises(PermissionDenied):
            sess.acquire("notjob", wait=0.5)
        _keepalive_seen(sess)
    t0 = time.monotonic()
    with Client(ep, username="app", password="wrong", timeout=10.0) as c:
        with pytest.raises(AuthError):
            c.get("app/x")
    assert time.monotonic() - t0 < 9, "a wrong password is not retried until the deadline"
    with Client(ep) as c:
        with pytest.raises(AuthError):
            c.get("app/x")


def _bearer_get(s, path, token):
    import http.client
    h = http.client.HTTPConnection("127.0.0.1", s.http_port, timeout=30)
    try:
        h.request("GET", path, headers={"Authorization": "Bearer " + token})
        r = h.getresponse()
        return r.status, r.read()
    finally:
        h.close()


def test_auth_token_is_accepted_by_the_http_api_with_the_users_rights(nodes):
    """Client.auth_token and fencelock.aio's: a bearer token the HTTP API takes as the user
    (app sees only its locks= globs), refused once changed; a TTL under 1 s is a ValueError."""
    import asyncio
    import json
    from test_auth import _acl_server
    from fencelock.aio import AsyncClient
    s, _, _ = _acl_server(_Ctx(nodes))
    ep = endpoint(s)
    with Client(ep, username="admin", password="adminpw") as c, c.session(10.0) as sess:
        sess.acquire("job-1", wait=5)
        sess.acquire("other", wait=5)
        with Client(ep, username="app", password="apppw") as app:
            tok = app.auth_token(60)
            assert tok.startswith("flt1.app."), tok
            st, body = _bearer_get(s, "/v1/locks", tok)
            assert st == 200, body
            assert [x["name"] for x in json.loads(body)["locks"]] == ["job-1"]
            st, _ = _bearer_get(s, "/v1/locks", tok[:-1] + ("1" if tok[-1] == "0" else "0"))
            assert st == 401
            with pytest.raises(ValueError):
                app.auth_token(0.5)

        async def aio_token() -> str:
            async with AsyncClient(ep, username="admin", password="adminpw") as ac:
                return await ac.auth_token()

        st, body = _bearer_get(s, "/v1/locks", asyncio.run(aio_token()))
        assert st == 200 and [x["name"] for x in json.loads(body)["locks"]] == ["job-1",
                                                                                 "other"], body
