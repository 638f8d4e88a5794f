# SPDX-License-Identifier: Apache-2.0
"""The web console at GET /ui/ (docs/server.md "The web console"), in a real browser: Debian's
headless chromium driven through chromium-driver by Selenium (pinned in build/pyvenv,
scripts/deps.sh), against real 3-node fencelockd clusters. The locks page shows a lock a test
client took, with its token and its waiter, and follows a release without a reload; a name
that is HTML stays text; the members page shows three members and the leader; the event tail
shows a PUT made after it opened; a follower's console shows its own state and names the
leader; under --acl-file a user whose locks= globs exclude a lock
does not see it. Every page is checked for browser log entries of level SEVERE (a script
error, a CSP violation, a failed load): one fails the test. The files' headers (Content-Type,
the Content-Security-Policy, no-cache) and the gate (401 with a Basic challenge) are checked
over plain HTTP.

Without chromium this file is skipped with its reason, unless CI=true: CI installs it
(scripts/deps.sh test) and a missing browser is a failure there."""

import base64
import glob
import http.client
import os
import subprocess
import sys

from cluster import ready_leader, start_cluster, wait_announced
from helpers import eq, expect_int, expect_ok, open_session, wait_queued, wait_until
from test_acl_cluster import _leader, _start_cluster

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
XSS = "<img src=x onerror=alert(1)>"


def _selenium():
    """The selenium package from build/pyvenv (made on demand), or the reason it is missing."""
    if not (os.access(CHROMIUM, os.X_OK) and os.access(DRIVER, os.X_OK)):
        return None, "chromium/chromium-driver not installed (scripts/deps.sh test)"
    site = glob.glob(os.path.join(ROOT, "build/pyvenv/lib/python3*/site-packages"))
    if not site or not os.path.isdir(os.path.join(site[0], "selenium")):
        p = subprocess.run([os.path.join(ROOT, "scripts/deps.sh"), "pyvenv"],
                           capture_output=True, timeout=600)
        site = glob.glob(os.path.join(ROOT, "build/pyvenv/lib/python3*/site-packages"))
        if p.returncode or not site:
            return None, "build/pyvenv: %s" % p.stderr.decode(errors="replace")[-500:]
    if site[0] not in sys.path:
        sys.path.append(site[0])
    try:
        import selenium  # noqa: F401
    except ImportError as e:
        return None, "selenium: %s" % e
    return True, ""


def _need_browser(name):
    """True when the browser tests can run; False (after printing the skip) when not; raises
    under CI=true, where the browser must be there."""
    have, why = _selenium()
    if have:
        return True
    if os.environ.get("CI") == "true":
        raise AssertionError("CI=true needs the browser test: %s" % why)
    print("# SKIP %s: %s" % (name, why))
    return False


class Browser:
    """A headless chromium through chromium-driver. HTTP Basic credentials go into the URL of
    the first page: the browser keeps them in its authentication cache for the realm and sends
    them with the console's API reads, as it does after its login prompt."""

    def __init__(self, ctx):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--no-first-run", "--disable-extensions", "--disable-background-networking",
                  "--user-data-dir=" + ctx.tmp("chromium-%d" % id(self))):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.d = webdriver.Chrome(options=opts, service=Service(
            executable_path=DRIVER, log_output=ctx.tmp("chromedriver.log")))
        ctx.defer(self.d.quit)
        self.d.set_page_load_timeout(60)
        self.severe = []

    def open(self, srv, hash_, auth=None):
        cred = "%s:%s@" % auth if auth else ""
        self.d.get("http://%s127.0.0.1:%d/ui/#%s" % (cred, srv.http_port, hash_))

    def go(self, hash_):
        self.d.execute_script("location.hash = arguments[0]", hash_)

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def until(self, script, what, timeout=30, *args):
        """Wait until script returns a truthy value (a generous bound: ASan, a loaded machine)."""
        try:
            return wait_until(lambda: self.js(script, *args), timeout=timeout, interval=0.2,
                              what=what)
        except AssertionError as e:  # what the page showed, for the failure's message
            raise AssertionError("%s\n  page: %r\n  banner: %r\n  browser log: %r" % (
                e, self.js("return document.body.innerText"),
                self.js("return document.getElementById('banner').textContent"),
                self.d.get_log("browser"))) from None

    def check_log(self, what):
        """No SEVERE entry in the browser log since the last check."""
        bad = [e for e in self.d.get_log("browser") if e.get("level") == "SEVERE"]
        if bad:
            raise AssertionError("%s: browser log has SEVERE entries: %r" % (what, bad))


# the locks table's row of a name: holder, token, waiter sessions (each with whom it waits for)
ROW = """
const r = [...document.querySelectorAll('#locks tbody tr')].find((x) => x.dataset.name === arguments[0]);
if (!r) return null;
return {holder: r.querySelector('.holder').textContent, token: r.querySelector('.token').textContent,
        since: r.querySelector('.since').textContent, name: r.cells[0].textContent,
        waiters: [...r.querySelectorAll('.waiter')].map((w) => w.dataset.sid + ':' + w.textContent)};
"""


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


def test_console_locks_members_events_in_a_browser(ctx):
    if not _need_browser("test_console_locks_members_events_in_a_browser"):
        return
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers, timeout=30)
    c = ctx.conn(leader)
    wait_announced(c, 3)
    s1, s2 = open_session(c, 120000), open_session(c, 120000)
    t1 = expect_int(c.call("LOCK", "job/a", s1))
    expect_int(c.call("LOCK", XSS, s1))
    w = ctx.conn(leader)
    w.send("LOCK", "job/a", s2, "WAIT", 600000)
    wait_queued(c, "job/a", s2)

    b = Browser(ctx)
    b.open(leader, "/locks")
    want = {"holder": str(s1), "token": str(t1), "waiters": ["%d:session %d waits for %d"
                                                             % (s2, s2, s1)]}
    row = b.until("const r = (function () {%s}).apply(null, arguments); return r && r.waiters.length ? r : null;"
                  % ROW, "job/a with its holder, token and waiter on the locks page",
                  30, "job/a")
    eq({k: row[k] for k in want}, want, "the locks page's row of job/a")
    assert row["since"], "held since is shown"
    # the HTML name is shown as its text, and no element came out of it
    xrow = b.until("return (function () {%s}).apply(null, arguments);" % ROW, "the HTML-named lock's row", 30, XSS)
    eq(xrow["name"], XSS)
    eq(b.js("return document.querySelectorAll('main img').length"), 0, "no <img> from a name")
    b.check_log("locks page")

    # a release hands job/a to the waiter: the open page follows without a reload
    marker = b.js("window.__same_page = 1; return 1")
    expect_ok(c.call("UNLOCK", "job/a", s1))
    t2 = expect_int(w.read_reply())
    row = b.until("const r = (function () {%s}).apply(null, arguments); return r && r.holder === arguments[1] ? r : null;"
                  % ROW, "the page showing the waiter as the new holder", 30, "job/a", str(s2))
    eq((row["token"], row["waiters"]), (str(t2), []), "job/a after the release")
    eq(b.js("return window.__same_page"), marker, "no reload")

    # one lock's page
    b.go("/lock/" + "job%2Fa")
    b.until("const e = document.getElementById('lock-token'); "
            "return e && e.textContent === arguments[0]", "the lock page's token", 30, str(t2))
    eq(b.js("return document.getElementById('lock-holder').textContent"), str(s2))
    b.check_log("lock page")

    # the cluster: three members, the leader marked
    b.go("/cluster")
    b.until("return document.querySelectorAll('#members tbody tr').length === 3",
            "three members on the cluster page")
    eq(b.js("return [...document.querySelectorAll('#members tr.leader')].map((r) => r.dataset.id)"),
       [str(leader.node_id)], "the leader's row")
    eq(b.js("return document.getElementById('leader-id').textContent"),
       "node %d" % leader.node_id)
    b.check_log("cluster page")

    # a follower's console: its own (stale) state, a banner naming the leader
    follower = next(x for x in servers if x is not leader)
    f = Browser(ctx)
    f.open(follower, "/locks")
    row = f.until("const r = (function () {%s}).apply(null, arguments); "
                  "return r && r.holder === arguments[1] ? r : null;" % ROW,
                  "the follower's console showing job/a's holder", 30, "job/a", str(s2))
    eq(row["token"], str(t2), "the follower's console")
    banner = f.js("return document.getElementById('banner').textContent")
    assert "follower" in banner and "node %d" % leader.node_id in banner, banner
    f.check_log("a follower's locks page")

    # the event tail: a PUT made after it opened
    b.go("/events")
    b.until("const e = document.getElementById('events-status'); return e && e.textContent === 'live'",
            "the event stream open")
    rev = expect_int(c.call("PUT", "console/k", "v-%d" % os.getpid()))
    line = b.until("const e = [...document.querySelectorAll('#events-log .event')]"
                   ".find((x) => x.dataset.type === 'put' && x.textContent.includes('console/k'));"
                   " return e && e.textContent", "the PUT in the event tail")
    assert ("v-%d" % os.getpid()) in line and line.startswith("%d-" % rev), line
    b.check_log("events page")

    # sessions, elections and semaphores render
    expect_int(c.call("SEM.ACQUIRE", "pool", s1, 2))
    expect_int(c.call("ELECT.CAMPAIGN", "boss", s1, "me"))
    for page, table, name in (("/sessions", "sessions", None), ("/semaphores", "semaphores", "pool"),
                              ("/elections", "elections", "boss")):
        b.go(page)
        if name:
            b.until("return [...document.querySelectorAll('#%s tbody tr')]"
                    ".some((r) => r.dataset.name === arguments[0])" % table, page, 30, name)
        else:
            b.until("return [...document.querySelectorAll('#sessions tbody tr')]"
                    ".map((r) => r.dataset.sid).join(',') === arguments[0]", page, 30,
                    "%d,%d" % (s1, s2))
    b.check_log("sessions, semaphores and elections pages")
    w.close()


test_console_locks_members_events_in_a_browser.timeout = 300


def test_console_lock_page_shows_the_history_timeline_after_three_grants(ctx):
    if not _need_browser("test_console_lock_page_shows_the_history_timeline_after_three_grants"):
        return
    from test_history import history, three_grants
    srv = ctx.srv
    c = ctx.conn(srv)
    name = "h/" + XSS  # a name that is HTML: text in the timeline as everywhere
    (a, b, s3), (t1, t2, t3) = three_grants(ctx, c, name)
    want = history(c, name)
    br = Browser(ctx)
    br.open(srv, "/lock/" + "h%2F" + XSS.replace("<", "%3C").replace(">", "%3E").replace(" ", "%20"))
    rows = br.until("const r = [...document.querySelectorAll('#history tbody tr')]; "
                    "return r.length === 3 ? r.map((x) => [x.dataset.token, "
                    "x.querySelector('.held-for').textContent, "
                    "x.querySelector('.ended-by').textContent, "
                    "[...x.querySelectorAll('.waiter')].map((w) => w.dataset.sid)]) : null",
                    "three grants in the lock page's timeline")
    eq([r[0] for r in rows], [str(t3), str(t2), str(t1)], "newest first, with tokens")
    eq([r[1] for r in rows][0], "held")
    eq([r[2] for r in rows], ["-", "unlock", "unlock"])
    eq([r[3] for r in rows], [[], [str(s3)], []], "c was queued at b's grant")
    assert all(r[1] != "held" for r in rows[1:]), rows
    assert "worker-b" in br.js("return document.querySelector('#history tbody tr[data-token=\"%d\"]')"
                               ".textContent" % t2)
    eq(br.js("return document.querySelectorAll('main img').length"), 0, "no <img> from a name")
    eq(br.js("return document.getElementById('lock-name').textContent"), name)
    assert want[1]["waiters"][0]["session"] == s3
    br.check_log("lock page with its history")


test_console_lock_page_shows_the_history_timeline_after_three_grants.timeout = 300


def test_console_under_acl_shows_only_the_users_locks(ctx):
    if not _need_browser("test_console_under_acl_shows_only_the_users_locks"):
        return
    acl = ctx.tmp("acl")
    hashes = {}
    for u in ("admin", "peer", "jobs"):
        p = subprocess.run([ctx.binary, "--hash-password"], input=(u + "pw\n").encode(),
                           capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr
        hashes[u] = p.stdout.decode().strip()
    with open(acl, "w") as f:
        f.write("user admin %s perm=all\n" % hashes["admin"])
        f.write("user peer %s perm=peer\n" % hashes["peer"])
        f.write("user jobs %s perm=read,lock locks=job/*\n" % hashes["jobs"])
    pwfile = ctx.tmp("peerpw")
    with open(pwfile, "w") as f:
        f.write("peerpw\n")
    for p in (acl, pwfile):
        os.chmod(p, 0o600)
    servers = _start_cluster(ctx, acl, pwfile)
    for s in servers:
        s.auth = ("admin", "adminpw")
    leader = _leader(servers, timeout=30)
    # the gate: no credentials is a Basic challenge, so the browser asks for them
    st, hd, _ = _http(leader, "/ui/")
    eq(st, 401)
    assert hd.get("www-authenticate", "").startswith("Basic realm="), hd
    c = ctx.conn(leader)
    expect_ok(c.call("AUTH", "admin", "adminpw"))
    sid = open_session(c, 120000)
    t = expect_int(c.call("LOCK", "job/1", sid))
    expect_int(c.call("LOCK", "secret/1", sid))
    eq(_http(leader, "/v1/locks/secret%2F1", ("admin", "adminpw"))[0], 200)

    b = Browser(ctx)
    b.open(leader, "/locks", ("jobs", "jobspw"))
    row = b.until("return (function () {%s}).apply(null, arguments);" % ROW, "job/1 on the jobs user's page", 30,
                  "job/1")
    eq(row["token"], str(t))
    names = b.js("return [...document.querySelectorAll('#locks tbody tr')].map((r) => r.dataset.name)")
    eq(names, ["job/1"], "the jobs user sees only the locks its globs allow")
    b.go("/lock/secret%2F1")
    b.until("return !!document.getElementById('no-lock')", "secret/1's page: no such lock")
    logs = [e for e in b.d.get_log("browser") if e.get("level") == "SEVERE"]
    # the lock outside the globs is 404 to this user (a logged failed load): that one only
    eq([e for e in logs if "/v1/locks/secret%2F1" not in e.get("message", "")], [],
       "no other SEVERE entries")

    # the admin sees both
    a = Browser(ctx)
    a.open(leader, "/locks", ("admin", "adminpw"))
    a.until("return document.querySelectorAll('#locks tbody tr').length === 2",
            "the admin sees both locks")
    a.check_log("the admin's locks page")


test_console_under_acl_shows_only_the_users_locks.timeout = 300
