# SPDX-License-Identifier: Apache-2.0
"""The web console's files at GET /ui/ over plain HTTP (docs/console.md): their types, the
Content-Security-Policy without inline script, no-cache, nosniff, 404s, and the gate under
--acl-file (401 with a Basic challenge). The console in a real browser (headless Chromium
driven by playwright-core, against 3-node clusters) is tests/console/console.test.js, run by
scripts/run-tests.sh."""

import base64
import http.client
import os

from helpers import eq
from test_http_api import _acl_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _http(srv, path, auth=None):
    h = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=30)
    try:
        headers = {}
        if auth:
            headers["Authorization"] = "Basic " + base64.b64encode(
                ("%s:%s" % auth).encode()).decode()
        h.request("GET", path, headers=headers)
        r = h.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        h.close()


def test_console_files_headers_and_csp(ctx):
    """The embedded files with their types; a CSP without inline script; no-cache; 404."""
    s = ctx.server()
    st, hd, body = _http(s, "/ui/")
    eq(st, 200, body)
    eq(hd["content-type"], "text/html; charset=utf-8")
    csp = hd["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp, csp
    assert "unsafe" not in csp, "no inline script or eval: %r" % csp
    eq(hd["cache-control"], "no-cache")
    eq(hd["x-content-type-options"], "nosniff")
    assert b"<script src=\"/ui/console.js\"" in body, body
    assert b"<script>" not in body and b"style=" not in body, "inline script or style"
    eq(_http(s, "/ui")[0], 200, "/ui without its slash")
    for path, ctype in (("/ui/console.js", "text/javascript; charset=utf-8"),
                        ("/ui/console.css", "text/css; charset=utf-8"),
                        ("/ui/favicon.svg", "image/svg+xml")):
        st, hd, body = _http(s, path)
        eq((st, hd["content-type"]), (200, ctype), path)
        assert body and "content-security-policy" in hd, path
    with open(os.path.join(ROOT, "src/server/obs/ui/console.js"), "rb") as f:
        eq(_http(s, "/ui/console.js")[2], f.read(), "the embedded file is the source file")
    eq(_http(s, "/ui/nope.js")[0], 404)
    eq(_http(s, "/ui/../v1/locks")[0], 404)


def test_console_needs_a_login_under_acl(ctx):
    """Under --acl-file the console's files are behind the gate: no credentials is a Basic
    challenge (the browser asks), a wrong password 401, a user with read 200."""
    s = _acl_server(ctx)
    st, hd, _ = _http(s, "/ui/")
    eq(st, 401)
    assert hd.get("www-authenticate", "").startswith("Basic realm="), hd
    eq(_http(s, "/ui/console.js", ("app", "wrong"))[0], 401)
    st, hd, body = _http(s, "/ui/", ("app", "apppw"))
    eq(st, 200, body)
    assert "script-src 'self'" in hd["content-security-policy"], hd
    eq(_http(s, "/ui/", ("lockonly", "lockonlypw"))[0], 403, "no read permission")
