# SPDX-License-Identifier: Apache-2.0
"""What the console's "who blocks whom" and locks views read on any number of locks
(docs/server.md "HTTP"): GET /v1/waits answers LOCK.WAITS's rows (lock, object, sid,
waits_for, any, cut) with the prefix, paged like /v1/locks and filtered by the user's locks=
globs; /v1/locks pages through 10,000 locks with limit/after and finds a prefix among them.

Both HTTP readers of the wait-for rows (/v1/waits and /v1/locks/{name}'s waits_for) are the
RESP ones' (LOCK.WAITS, LOCK.INFO): row by row the same lists, at most --max-keys-reply sids
over one answer, and the rows cut there marked (`cut` 1, `waits_for_cut` 1), so a READ user
cannot make the loop thread write n^2 sids for a queue of n."""

import json
import urllib.parse

from helpers import eq, expect_int, ok, open_session, wait_queued, wait_until
from resp import RespError, as_map, text
from test_http_api import _acl_server, enc, get, get_json, plain


def lock_waits(c, prefix=None):
    r = c.call("LOCK.WAITS", *([prefix] if prefix is not None else []))
    assert not isinstance(r, RespError), r
    out = []
    for row in r:
        m = as_map(row)
        out.append({"lock": text(m["lock"]), "object": text(m["object"]), "sid": m["sid"],
                    "waits_for": list(m["waits_for"]), "any": m["any"], "cut": m["cut"]})
    return out


def lock_info(c, name):
    """LOCK.INFO as GET /v1/locks/{name} carries it (less the name)."""
    raw = as_map(ok(c.call("LOCK.INFO", name)))
    raw["holders"] = [as_map(x) for x in raw["holders"]]
    return plain(raw)


def park(ctx, srv, c, name, sid, *mode):
    """A LOCK ... WAIT parked on its own connection, once LOCK.INFO shows it queued."""
    w = ctx.conn(srv)
    w.send("LOCK", name, sid, *mode, "WAIT", 600000)
    wait_queued(c, name, sid)
    return w


def test_http_waits_and_lock_agree_with_resp_row_by_row(ctx):
    srv = ctx.server()
    c = ctx.conn(srv)
    h = open_session(c)
    expect_int(c.call("LOCK", "q", h))
    parked, readers = [], []
    for _ in range(3):
        r = open_session(c)
        parked.append(park(ctx, srv, c, "q", r, "SHARED"))
        readers.append(r)
    w = open_session(c)
    parked.append(park(ctx, srv, c, "q", w))  # exclusive behind the readers
    late = open_session(c)
    parked.append(park(ctx, srv, c, "q", late, "SHARED"))  # shared behind the writer
    expect_int(c.call("SEM.ACQUIRE", "pool", h, 1))
    sw = ctx.conn(srv)
    sw.send("SEM.ACQUIRE", "pool", w, 1, "WAIT", 600000)
    parked.append(sw)
    wait_until(lambda: ("pool", w) in [(r["lock"], r["sid"]) for r in lock_waits(c)],
               timeout=30, what="session %d queued on the semaphore" % w)
    # the rule (docs/protocol.md "Deadlocks"), so the agreement below is not of two empty lists
    rows = lock_waits(c)
    want_q = [r["waits_for"] for r in rows if r["lock"] == "q"]
    eq([want_q[:3], want_q[3][0], sorted(want_q[3][1:]), want_q[4]],
       [[[h]] * 3, h, readers, [w]], "LOCK.WAITS on q: the writer waits for h and the readers")
    eq([(r["lock"], r["any"], r["cut"]) for r in rows],
       [("pool", 1, 0)] + [("q", 0, 0)] * 5, "LOCK.WAITS: any, nothing cut")
    got = get_json(srv, "/v1/waits")
    eq(got["waits"], rows, "/v1/waits == LOCK.WAITS row by row")
    info = lock_info(c, "q")
    eq(info["waits_for"], want_q, "LOCK.INFO's waits_for")
    eq("waits_for_cut" in info, False, "nothing cut: LOCK.INFO as it was")
    one = get_json(srv, "/v1/locks/q")
    eq(one.pop("name"), "q")
    eq(one, info, "/v1/locks/q == LOCK.INFO (no waits_for_cut)")
    for x in parked:
        x.close()


CAP = 8


def test_http_waits_and_lock_cap_their_lists_at_max_keys_reply_and_mark_the_cut(ctx):
    srv = ctx.server("--max-keys-reply", CAP)
    c = ctx.conn(srv)
    h = open_session(c)
    expect_int(c.call("LOCK", "L", h))
    parked = []
    for _ in range(12):  # a shared run: each waits for h
        parked.append(park(ctx, srv, c, "L", open_session(c), "SHARED"))
    x = open_session(c)
    parked.append(park(ctx, srv, c, "L", x))  # waits for h and all 12 readers: 25 sids in all
    h2 = open_session(c)
    expect_int(c.call("LOCK", "M", h2))
    for _ in range(3):  # another lock, after L in byte order: past the cap on one page
        parked.append(park(ctx, srv, c, "M", open_session(c), "SHARED"))
    # /v1/waits: one page lists at most CAP sids over all its rows, the rows past it say so
    page = get_json(srv, "/v1/waits")["waits"]
    eq(sum(len(r["waits_for"]) for r in page), CAP, "CAP sids over the page, not 12 + 13 + 3")
    eq([(r["lock"], r.get("cut")) for r in page],
       [("L", 0)] * CAP + [("L", 1)] * 5 + [("M", 1)] * 3, "a row per waiter, cut marked")
    eq([r["waits_for"] for r in page[:CAP]], [[h]] * CAP, "the first readers wait for h")
    eq(page, lock_waits(c), "/v1/waits == LOCK.WAITS, cut rows included")
    eq(get_json(srv, "/v1/waits?prefix=M")["waits"], lock_waits(c, "M"), "M's own page")
    eq([r["cut"] for r in lock_waits(c, "M")], [0] * 3, "alone, M's lists fit")
    # /v1/locks/{name}: at most CAP sids over its waits_for, "waits_for_cut" only when cut
    one = get_json(srv, "/v1/locks/L")
    eq(sum(len(l) for l in one["waits_for"]), CAP, "CAP sids over the lists")
    eq(len(one["waits_for"]), 13, "a list per waiter")
    eq(one["waits_for_cut"], 1, "it says it cut")
    eq(one["waiters"], [r["sid"] for r in page if r["lock"] == "L"],
       "every waiter listed whatever the cut: LOCK.WAITS's rows, in order")
    eq(one.pop("name"), "L")
    eq(one, lock_info(c, "L"), "/v1/locks/L == LOCK.INFO, waits_for_cut included")
    m = get_json(srv, "/v1/locks/" + enc("M"))
    eq((m["waits_for"], "waits_for_cut" in m), ([[h2]] * 3, False), "a reply's own budget")
    for w in parked:
        w.close()


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
