# SPDX-License-Identifier: Apache-2.0
"""What the console's "who blocks whom" and locks views read on any number of locks
(docs/server.md "HTTP"): GET /v1/waits answers LOCK.WAITS's rows (lock, object, sid,
waits_for, any) with the prefix, paged like /v1/locks and filtered by the user's locks= globs;
/v1/locks pages through 10,000 locks with limit/after and finds a prefix among them."""

import json
import urllib.parse

from helpers import eq, expect_int, ok, open_session, wait_until
from resp import RespError, as_map, text
from test_http_api import _acl_server, get, get_json


def lock_waits(c, prefix=None):
    r = c.call("LOCK.WAITS", *([prefix] if prefix is not None else []))
    assert not isinstance(r, RespError), r
    out = []
    for row in r:
        m = as_map(row)
        out.append({"lock": text(m["lock"]), "object": text(m["object"]), "sid": m["sid"],
                    "waits_for": list(m["waits_for"]), "any": m["any"]})
    return out


def test_http_waits_matches_lock_waits_pages_and_filters(ctx):
    s = _acl_server(ctx)
    c = ctx.conn(s)
    ok(c.call("AUTH", "admin", "adminpw"))
    a, b, d = open_session(c), open_session(c), open_session(c)
    odd = "job-<img src=x onerror=alert(1)>"
    expect_int(c.call("LOCK", odd, a))
    expect_int(c.call("LOCK", "secret", a))
    expect_int(c.call("SEM.ACQUIRE", "job-pool", a, 1))
    parked = []
    for name, sid, cmd in ((odd, b, ("LOCK", odd, b, "WAIT", 600000)),
                           (odd, d, ("LOCK", odd, d, "WAIT", 600000)),
                           ("secret", b, ("LOCK", "secret", b, "WAIT", 600000)),
                           ("job-pool", d, ("SEM.ACQUIRE", "job-pool", d, 1,
                                            "WAIT", 600000))):
        w = ctx.conn(s)
        ok(w.call("AUTH", "admin", "adminpw"))
        w.send(*cmd)
        parked.append(w)
        wait_until(lambda: (name, sid) in [(r["lock"], r["sid"]) for r in lock_waits(c)],
                   timeout=30, what="session %d queued on %r" % (sid, name))
    admin = ("admin", "adminpw")
    want = lock_waits(c)
    eq(len(want), 4, "LOCK.WAITS rows: %r" % want)
    got = get_json(s, "/v1/waits", admin)
    eq(got["waits"], want, "/v1/waits == LOCK.WAITS")
    eq(got["next"], None)
    eq(get_json(s, "/v1/waits?prefix=sec", admin)["waits"], lock_waits(c, "sec"), "prefix")
    # paged: one name looked at per page, "next" is the after of the next page
    rows, after = [], None
    for _ in range(10):
        q = "/v1/waits?limit=1" + ("&after=" + urllib.parse.quote(after, safe="") if after else "")
        page = get_json(s, q, admin)
        rows += page["waits"]
        after = page["next"]
        if after is None:
            break
    eq(rows, want, "the pages add up to LOCK.WAITS")
    # locks=job-*: the user sees the waits on its locks only
    eq(get_json(s, "/v1/waits", ("app", "apppw"))["waits"],
       [r for r in want if r["lock"].startswith("job-")], "locks= globs filter /v1/waits")
    eq(get(s, "/v1/waits")[0], 401, "credentials needed")
    eq(get(s, "/v1/waits", ("lockonly", "lockonlypw"))[0], 403, "read permission needed")
    eq(get(s, "/v1/waits?limit=0", admin)[0], 400, "bad input")
    eq(lock_waits(c), want, "nothing changed")


def test_http_locks_pages_and_searches_10000_locks(ctx):
    c = ctx.conn()
    sid = open_session(c)
    n = 10000
    names = ["k%05d" % i for i in range(n)]
    for i in range(0, n, 1000):  # pipelined, 10 round trips
        for r in c.pipeline([("LOCK", x, sid) for x in names[i:i + 1000]], timeout=120):
            expect_int(r)
    seen, after, pages = [], None, 0
    while pages < 20:  # bounded: 10 pages expected
        q = "/v1/locks?limit=1000" + ("&after=" + after if after else "")
        page = get_json(ctx.srv, q)
        seen += [x["name"] for x in page["locks"]]
        pages += 1
        after = page["next"]
        if after is None or not page["locks"]:
            break
    eq(seen, names, "every lock once, in order, over the pages")
    got = get_json(ctx.srv, "/v1/locks?prefix=k0042&limit=50")
    eq([x["name"] for x in got["locks"]], ["k0042%d" % i for i in range(10)], "prefix search")
    eq(got["next"], None)


test_http_locks_pages_and_searches_10000_locks.timeout = 300
