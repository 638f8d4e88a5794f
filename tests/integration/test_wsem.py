# SPDX-License-Identifier: Apache-2.0
"""Weighted semaphores: SEM.ACQUIRE name sid limit PERMITS k (k permits in one acquisition,
one token), strict FIFO (a queued request for k is not overtaken by a later one for fewer),
SEM.INFO's permits per holder, SEM.SETLIMIT (admin; holders above a lower limit keep their
permits, no grant until the head fits; the operator's limit as state: test_semlimit.py), and the permits in use never above the limit across a
kill -9 of the leader of 3 nodes."""

import os
import subprocess

from cluster import ready_leader, start_cluster
from helpers import eq, expect_err, expect_int, expect_nil, no_reply, ok, open_session, wait_until
from resp import Conn, RespError, as_map, text
from test_cli import cli_path
from test_client import Probe
from test_http_api import get_json, plain


def sem_info(c, name):
    r = c.call("SEM.INFO", name)
    assert not isinstance(r, RespError), "SEM.INFO %s: %r" % (name, r)
    return None if r is None else as_map(r)


def holds(info):
    """SEM.INFO's holders as {sid: permits}."""
    out = {}
    for h in info["holders"] or []:
        m = h if isinstance(h, dict) else dict(zip(h[::2], h[1::2]))
        m = {text(k): v for k, v in m.items()}
        out[m["sid"]] = m["permits"]
    return out


def checked(info):
    """The info, after checking its permits add up and stay within the limit."""
    eq(sum(holds(info).values()), info["permits"], "permits in use = the holders' sum")
    return info


def queued(c, name, sid):
    wait_until(lambda: sid in list((sem_info(c, name) or {}).get("waiters") or []), 5,
               what="session %d queued on %r" % (sid, name))


def test_k_permits_fifo_and_info(ctx):
    c = ctx.conn()
    a, b, d, e = (open_session(c) for _ in range(4))
    ta = expect_int(c.call("SEM.ACQUIRE", "w", a, 4, "PERMITS", 2))
    tb = expect_int(c.call("SEM.ACQUIRE", "w", b, 4, "PERMITS", 1))
    assert tb > ta
    info = checked(sem_info(c, "w"))
    eq(info["permits"], 3)
    eq(holds(info), {a: 2, b: 1})
    expect_nil(c.call("SEM.ACQUIRE", "w", d, 4, "PERMITS", 3), "3 do not fit in 1 free")
    cd, ce = ctx.conn(), ctx.conn()
    cd.send("SEM.ACQUIRE", "w", d, 4, "PERMITS", 3, "WAIT", 20000)
    queued(c, "w", d)
    ce.send("SEM.ACQUIRE", "w", e, 4, "WAIT", 20000, "PERMITS", 1)
    queued(c, "w", e)
    eq(list(sem_info(c, "w")["wanted"]), [3, 1], "the permits each waiter wants, FIFO")
    expect_nil(c.call("SEM.ACQUIRE", "w", open_session(c), 4), "a try does not overtake")
    ok(c.call("SEM.RELEASE", "w", b))  # 2 free: not the head's 3, and e waits behind it
    assert no_reply(cd) and no_reply(ce), "granted out of FIFO order or over the limit"
    ok(c.call("SEM.RELEASE", "w", a))  # 4 free: d (3), then e (1)
    td = expect_int(cd.read_reply(timeout=10), "the head's 3 permits")
    te = expect_int(ce.read_reply(timeout=10), "the next request's permit")
    assert te > td > tb
    info = checked(sem_info(c, "w"))
    eq(holds(info), {d: 3, e: 1})
    ok(c.call("FENCE.CHECK", "w", td), "one token fences the acquisition's permits")
    ok(c.call("SEM.RELEASE", "w", d))
    eq(checked(sem_info(c, "w"))["permits"], 1, "a release frees the acquisition's 3")


def test_waiters_and_wanted_are_one_queue_in_sem_info_and_v1_semaphores(ctx):
    """SEM.INFO's "waiters" and "wanted" (and /v1/semaphores' twins) are two columns of one read
    of the queue: row i is the i-th queued request's session and the permits it asks, whatever
    the protocol, when one leaves the middle and when the queue is longer than
    --max-keys-reply (which cuts neither list)."""
    srv = ctx.server("--max-keys-reply", "3")
    c = ctx.conn(srv)
    h = open_session(c)
    expect_int(c.call("SEM.ACQUIRE", "q", h, 5, "PERMITS", 5))
    asks = [2, 5, 1, 4, 3]
    sids = [open_session(c) for _ in asks]
    for sid, k in zip(sids, asks):
        w = ctx.conn(srv)
        w.send("SEM.ACQUIRE", "q", sid, 5, "PERMITS", k, "WAIT", 600000)
        queued(c, "q", sid)

    def check(want_sids, want_asks, what):
        for proto in (2, 3):
            r = ctx.conn(srv)
            if proto == 3:
                ok(r.call("HELLO", 3))
            m = as_map(r.call("SEM.INFO", "q"))
            eq((list(m["waiters"]), list(m["wanted"])), (want_sids, want_asks),
               "%s: SEM.INFO's waiters and wanted, RESP%d" % (what, proto))
        raw = as_map(c.call("SEM.INFO", "q"))
        want = plain(raw)
        want["holders"] = [plain(as_map(x)) for x in raw["holders"]]
        got = get_json(srv, "/v1/semaphores?prefix=q")["semaphores"]
        eq(len(got), 1)
        eq(got[0].pop("name"), "q")
        eq(got[0], want, "%s: /v1/semaphores == SEM.INFO" % what)

    check(sids, asks, "five queued")
    ok(c.call("SEM.RELEASE", "q", sids[2]), "the middle one leaves the queue")
    check(sids[:2] + sids[3:], asks[:2] + asks[3:], "one left the middle")


def test_permits_arguments_are_checked(ctx):
    c = ctx.conn()
    a = open_session(c)
    expect_err(c.call("SEM.ACQUIRE", "v", a, 2, "PERMITS", 3), "ERR", "over the limit")
    expect_err(c.call("SEM.ACQUIRE", "v", a, 2, "PERMITS", 0), "ERR", "0 permits")
    expect_err(c.call("SEM.ACQUIRE", "v", a, 2, "PERMITS", "x"), "ERR", "not a number")
    expect_err(c.call("SEM.ACQUIRE", "v", a, 2, "PERMITS"), "ERR", "no value")
    expect_err(c.call("SEM.ACQUIRE", "v", a, 2, "PERMITS", 1, "PERMITS", 1), "ERR", "twice")
    eq(sem_info(c, "v"), None, "nothing was created")
    expect_int(c.call("SEM.ACQUIRE", "v", a, 2, "PERMITS", 2))
    eq(holds(sem_info(c, "v")), {a: 2})


def test_setlimit_keeps_holders_above_a_lower_limit(ctx):
    c = ctx.conn()
    a, b, d = (open_session(c) for _ in range(3))
    expect_int(c.call("SEM.ACQUIRE", "s", a, 4, "PERMITS", 2))
    expect_int(c.call("SEM.ACQUIRE", "s", b, 4, "PERMITS", 2))
    cd = ctx.conn()
    cd.send("SEM.ACQUIRE", "s", d, 4, "WAIT", 20000)
    queued(c, "s", d)
    ok(c.call("SEM.SETLIMIT", "s", 2))
    info = checked(sem_info(c, "s"))
    eq((info["limit"], info["permits"]), (2, 4), "holders keep their permits")
    ok(c.call("SEM.RELEASE", "s", a))
    assert no_reply(cd), "granted while 2 of a limit of 2 were in use"
    ok(c.call("SEM.RELEASE", "s", b))
    expect_int(cd.read_reply(timeout=10), "granted once the permit fits the new limit")
    # the operator's limit wins: an acquirer still passing the old 4 is accepted
    expect_int(c.call("SEM.ACQUIRE", "s", a, 4), "the old limit under the operator's")
    expect_int(c.call("SEM.ACQUIRE", "s", a, 2))
    ok(c.call("SEM.SETLIMIT", "s", 3))
    eq(sem_info(c, "s")["limit"], 3)
    ok(c.call("SEM.SETLIMIT", "nosuch", 3), "an operator's limit before its semaphore exists")
    expect_int(c.call("LOCK", "l", a))
    expect_err(c.call("SEM.SETLIMIT", "l", 3), "WRONGTYPE")
    expect_err(c.call("SEM.SETLIMIT", "s", 0), "ERR")
    expect_err(c.call("SEM.SETLIMIT", "s"), "ERR")


def test_weighted_permits_never_exceed_the_limit_across_a_leader_kill(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        a, b, d, e = (expect_int(c.call("SESSION.OPEN", 60000)) for _ in range(4))
        expect_int(c.call("SEM.ACQUIRE", "k", a, 5, "PERMITS", 3))
        expect_int(c.call("SEM.ACQUIRE", "k", b, 5, "PERMITS", 2))
        with Conn(leader.port) as cd, Conn(leader.port) as ce:
            cd.send("SEM.ACQUIRE", "k", d, 5, "PERMITS", 4, "WAIT", 60000)
            queued(c, "k", d)
            ce.send("SEM.ACQUIRE", "k", e, 5, "PERMITS", 1, "WAIT", 60000)
            queued(c, "k", e)
    leader.kill9()
    new = ready_leader([s for s in servers if s is not leader], timeout=15)
    with Conn(new.port) as c:
        info = checked(sem_info(c, "k"))
        eq(holds(info), {a: 3, b: 2}, "the acquisitions and their permits on the new leader")
        eq(list(info["waiters"]), [d, e])
        eq(list(info["wanted"]), [4, 1])
        ok(c.call("SEM.RELEASE", "k", a))
        info = checked(sem_info(c, "k"))
        eq(holds(info), {b: 2}, "3 free: the head's 4 does not fit, and e waits behind it")
        ok(c.call("SEM.RELEASE", "k", b))
        info = wait_until(lambda: (lambda i: i if len(holds(i)) == 2 else None)(
            checked(sem_info(c, "k"))), 10, what="the queued requests granted")
        eq(holds(info), {d: 4, e: 1})
        assert info["permits"] <= info["limit"]


test_weighted_permits_never_exceed_the_limit_across_a_leader_kill.timeout = 60


def test_cli_sem_permits_and_fl_sem_acquire_n(ctx):
    ep = "127.0.0.1:%d" % ctx.srv.port
    d = ctx.tmp("wsem")
    os.makedirs(d, exist_ok=True)

    def cli(*args):
        p = subprocess.Popen([cli_path(ctx), "--endpoints", ep] + [str(a) for a in args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ctx.defer(lambda: p.poll() is None and (p.kill(), p.wait()))
        return p

    bad = cli("sem", "q", 3, "--permits", 4, "--", "true")
    _, err = bad.communicate(timeout=20)
    assert bad.returncode != 0 and "--permits 4 is over LIMIT 3" in err, (bad.returncode, err)
    first = cli("sem", "q", 3, "--permits", 2, "--", "sh", "-c",
                "touch %s/a; while [ ! -e %s/go ]; do sleep 0.05; done" % (d, d))
    wait_until(lambda: os.path.exists(os.path.join(d, "a")), timeout=20, what="first runs")
    c = ctx.conn()
    eq(list(holds(sem_info(c, "q")).values()), [2], "the CLI took 2 permits at once")
    second = cli("sem", "q", 3, "--permits", 2, "--", "sh", "-c", "touch %s/b" % d)
    wait_until(lambda: list(sem_info(c, "q").get("wanted") or []) == [2], timeout=10,
               what="the second waits for its 2")
    assert not os.path.exists(os.path.join(d, "b")), "4 permits of 3 in use"
    open(os.path.join(d, "go"), "w").close()
    _, err = first.communicate(timeout=20)
    eq(first.returncode, 0, err)
    _, err = second.communicate(timeout=20)
    eq(second.returncode, 0, err)
    assert os.path.exists(os.path.join(d, "b"))
    p = Probe(ctx, "prims", ep)  # fl_sem_acquire_n among the semaphore calls
    summary = p.expect("tests:", timeout=50)
    eq(p.wait(), 0, "fl_probe prims exit status (%s)" % summary)
    assert summary.endswith(" 0 failed"), summary


test_cli_sem_permits_and_fl_sem_acquire_n.timeout = 90


def test_setlimit_needs_admin_under_an_acl_file(ctx):
    from test_auth import _acl_server, _authed
    s, _, _ = _acl_server(ctx)
    app = _authed(ctx, s, "app", "apppw")
    a = open_session(app)
    expect_int(app.call("SEM.ACQUIRE", "job-s", a, 3, "PERMITS", 2), "a lock user's PERMITS")
    expect_err(app.call("SEM.SETLIMIT", "job-s", 1), "NOPERM", "a lock user's SETLIMIT")
    eq(sem_info(app, "job-s")["limit"], 3, "nothing changed")
    admin = _authed(ctx, s, "admin", "adminpw")
    ok(admin.call("SEM.SETLIMIT", "job-s", 1))
    eq(checked(sem_info(admin, "job-s"))["permits"], 2, "the holder keeps its 2 over limit 1")
