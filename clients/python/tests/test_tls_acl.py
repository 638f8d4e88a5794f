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
