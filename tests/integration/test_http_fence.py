# SPDX-License-Identifier: Apache-2.0
"""GET /v1/fence on the HTTP port (docs/fencing.md "nginx"): FENCE.CHECK's answer for nginx's
auth_request. 200 for a current holder's token, 409 for any other, 400 on bad input (changing
nothing), 503 on a node that cannot answer linearizably (a follower; a leader whose quorum is
gone), from the query string or the Fencing-Lock / Fencing-Token headers."""

import http.client
import threading
import time
import urllib.parse

from cluster import ready_leader, start_cluster
from helpers import eq, expect_int, ok, open_session, revision


def fence(srv, query="", headers=None, method="GET", timeout=30):
    h = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=timeout)
    try:
        h.request(method, "/v1/fence" + ("?" + query if query else ""), headers=headers or {})
        r = h.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        h.close()


def q(lock, token):
    return "lock=%s&token=%s" % (urllib.parse.quote(lock, safe=""), token)


def test_http_fence_current_stale_and_kinds_of_holder(ctx):
    c = ctx.conn()
    s1, s2 = open_session(c), open_session(c)
    t1 = expect_int(c.call("LOCK", "inv", s1))
    st, body = fence(ctx.srv, q("inv", t1))
    eq(st, 200, "current token: %s" % body)
    assert body.startswith("ok: token %d is current for lock inv" % t1), body
    eq(fence(ctx.srv, headers={"Fencing-Lock": "inv", "Fencing-Token": str(t1)})[0], 200,
       "from the headers")
    eq(fence(ctx.srv, q("inv", t1), {"Fencing-Lock": "inv", "Fencing-Token": str(t1)})[0], 200,
       "both, agreeing")
    eq(fence(ctx.srv, q("inv", t1), method="HEAD")[0], 200, "HEAD")
    ok(c.call("UNLOCK", "inv", s1))
    st, body = fence(ctx.srv, q("inv", t1))
    eq(st, 409, "released: %s" % body)
    assert body.startswith("stale: token %d is not the current token of lock inv" % t1), body
    t2 = expect_int(c.call("LOCK", "inv", s2))
    eq(fence(ctx.srv, q("inv", t1))[0], 409, "the old holder's token")
    eq(fence(ctx.srv, q("inv", t2))[0], 200, "the new holder's")
    eq(fence(ctx.srv, q("other", t2))[0], 409, "another lock's name")
    eq(fence(ctx.srv, q("never-held", 1))[0], 409, "a lock nobody holds")
    eq(fence(ctx.srv, q("inv", 0))[0], 409, "token 0")
    # the rule of FENCE.CHECK: shared holders, semaphore permits, an election's leader
    r1 = expect_int(c.call("LOCK", "rw", s1, "SHARED"))
    r2 = expect_int(c.call("LOCK", "rw", s2, "SHARED"))
    eq((fence(ctx.srv, q("rw", r1))[0], fence(ctx.srv, q("rw", r2))[0]), (200, 200), "shared")
    p = expect_int(c.call("SEM.ACQUIRE", "pool", s1, 2))
    eq(fence(ctx.srv, q("pool", p))[0], 200, "a permit")
    e = expect_int(c.call("ELECT.CAMPAIGN", "boss", s2, "v"))
    eq(fence(ctx.srv, q("boss", e))[0], 200, "an election's leader")
    # a name with bytes that need percent-encoding in the query, raw in the header
    name = "caf\u00e9 & co/1"
    u = expect_int(c.call("LOCK", name, s1))
    eq(fence(ctx.srv, q(name, u))[0], 200, "percent-encoded UTF-8 name")
    eq(fence(ctx.srv, q(name, u)[:-1] + str(u + 1))[0], 409)


def test_http_fence_bad_input_is_400_and_changes_nothing(ctx):
    c = ctx.conn()
    sid = open_session(c)
    t = expect_int(c.call("LOCK", "inv", sid))
    rev = revision(c)
    bad = [
        ("", None, "no lock, no token"),
        ("lock=inv", None, "no token"),
        ("token=%d" % t, None, "no lock"),
        ("lock=&token=%d" % t, None, "an empty lock"),
        ("lock=inv&token=", None, "an empty token"),
        ("lock=inv&token=-1", None, "a sign"),
        ("lock=inv&token=+%d" % t, None, "a plus"),
        ("lock=inv&token=1x", None, "not a number"),
        ("lock=inv&token=18446744073709551616", None, "2^64"),
        ("lock=inv&token=%d&token=%d" % (t, t), None, "token twice"),
        ("lock=inv&lock=inv&token=%d" % t, None, "lock twice"),
        ("lock=in%%zzv&token=%d" % t, None, "bad percent-encoding"),
        ("lock=inv%%&token=%d" % t, None, "a cut percent-encoding"),
        ("lock=%s&token=%d" % ("x" * 1025, t), None, "a name over --max-key"),
        (q("inv", t), {"Fencing-Lock": "other"}, "query and header disagree on the lock"),
        (q("inv", t), {"Fencing-Token": str(t + 1)}, "query and header disagree on the token"),
        ("", {"Fencing-Lock": "inv"}, "a header lock, no token"),
        ("", {"Fencing-Lock": "inv", "Fencing-Token": "abc"}, "a header token not a number"),
    ]
    for query, headers, what in bad:
        st, body = fence(ctx.srv, query, headers)
        eq(st, 400, "%s: %s" % (what, body))
    # the same header twice is ambiguous too
    h = http.client.HTTPConnection("127.0.0.1", ctx.srv.http_port, timeout=30)
    h.putrequest("GET", "/v1/fence")
    h.putheader("Fencing-Lock", "inv")
    h.putheader("Fencing-Lock", "other")
    h.putheader("Fencing-Token", str(t))
    h.endheaders()
    eq(h.getresponse().status, 400, "Fencing-Lock twice")
    h.close()
    eq(fence(ctx.srv, "lock=%s&token=%d" % ("x" * 1024, t))[0], 409, "a name at --max-key")
    eq(fence(ctx.srv, "lock=i%6Ev&token=" + str(t))[0], 200, "percent-encoded ASCII")
    eq(fence(ctx.srv, "lock=inv&token=%d&other=1" % t)[0], 200, "other parameters are ignored")
    eq(revision(c), rev, "the revision (nothing was written)")
    eq(fence(ctx.srv, q("inv", t))[0], 200, "the holder still holds")


def test_http_fence_many_at_once_share_barriers(ctx):
    """40 checks at once, half current, half stale: each gets its own right answer."""
    c = ctx.conn()
    sid = open_session(c)
    old = expect_int(c.call("LOCK", "inv", sid))
    ok(c.call("UNLOCK", "inv", sid))
    cur = expect_int(c.call("LOCK", "inv", sid))
    got, errors = {}, []

    def one(i):
        try:
            got[i] = fence(ctx.srv, q("inv", cur if i % 2 else old))[0]
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    ts = [threading.Thread(target=one, args=(i,)) for i in range(40)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
    eq(sorted(got.items()), [(i, 200 if i % 2 else 409) for i in range(40)])


def test_http_fence_follower_and_lost_quorum_answer_503(ctx):
    """Only a ready leader answers: a follower says 503 (nginx then asks the next node), and so
    does a leader that lost its quorum (its barrier cannot commit), never a stale 200."""
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    c = ctx.conn(leader)
    sid = open_session(c)
    t = expect_int(c.call("LOCK", "inv", sid))
    eq(fence(leader, q("inv", t))[0], 200, "the leader")
    for s in servers:
        if s is not leader:
            st, body = fence(s, q("inv", t))
            eq(st, 503, "a follower: %s" % body)
    for s in servers:
        if s is not leader:
            s.sigstop()
    # The read lease (at most 20 ms after the leader's last commit) answers 200 until it ends;
    # without a quorum nothing commits, so it cannot be renewed.
    time.sleep(0.1)
    try:
        try:
            st, body = fence(leader, q("inv", t), timeout=60)
        except (http.client.RemoteDisconnected, ConnectionResetError):
            st, body = "closed", ""  # --http-idle-ms passed before the step-down
        assert st in (503, "closed"), "a leader without its quorum: %s %s" % (st, body)
    finally:
        for s in servers:
            if s is not leader:
                s.sigcont()


test_http_fence_follower_and_lost_quorum_answer_503.timeout = 120


def test_http_fence_skips_parameters_not_its_own(ctx):
    """nginx's auth_request may forward parameters of its own: /v1/fence reads only its lock=
    and token= pairs (the HTTP port's one query parser, in the mode that skips other pairs) and
    skips everything else, names of other routes, bare names, other cases, bad escapes in
    another's value, while its own two stay as strict as ever (the message of each refusal is
    the one /v1/fence always gave)."""
    c = ctx.conn()
    sid = open_session(c)
    t = expect_int(c.call("LOCK", "inv", sid))
    rev = revision(c)
    own = "lock=inv&token=%d" % t
    skipped = [
        "proxy=nginx&" + own + "&uri=%2Fdata%3Fx%3D1",
        "X-Original-URI=/a&" + own,
        "stale&prefix=a&limit=0&after=&" + own,        # another route's names, bad values too
        "deadline=0&reason=%zz&" + own,                # and POST .../revoke's
        "lock&" + own + "&token",                      # bare names are not lock=/token= pairs
        "Lock=other&TOKEN=1&" + own,                   # names are matched exactly
        "lock%3Dother&" + own,                         # and not decoded
        "=x&&c=%zz&%&" + own + "&",                    # empty pairs, empty names, bad escapes
    ]
    for query in skipped:
        st, body = fence(ctx.srv, query)
        eq(st, 200, "%r: the other pairs are skipped: %s" % (query, body))
    refused = [
        ("lock=inv&lock=other&token=%d" % t, "lock given twice\n"),
        ("lock=%%zz&lock=inv&token=%d" % t, "lock given twice\n"),
        ("other=1&lock=inv&token=%d&token=%d" % (t, t), "token given twice\n"),
        ("other=1&lock=in%%zzv&token=%d" % t, "lock: bad percent-encoding, or longer than 1024 "
         "bytes\n"),
        ("other=1&lock=&token=%d" % t, "missing lock (lock=NAME or the Fencing-Lock header)\n"),
        ("lock&token=%d" % t, "missing lock (lock=NAME or the Fencing-Lock header)\n"),
        ("other=1&lock=inv&token=%2B1", "token: not a decimal number of at most 20 digits that "
         "fits 64 bits\n"),
        ("lock=inv&token=" + "0" * 32, "token: bad percent-encoding, or longer than 31 bytes\n"),
    ]
    for query, msg in refused:
        st, body = fence(ctx.srv, query)
        eq((st, body), (400, msg), "%r is refused as it always was" % query)
    eq(revision(c), rev, "the revision (nothing was written)")
