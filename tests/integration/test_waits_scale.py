# SPDX-License-Identifier: Apache-2.0
"""The wait-for graph at scale, and a LOCK.MULTI retried with its REQ, on a real fencelockd.

- A deadlock behind a long run of shared waiters is found inside the default search limit
  (docs/protocol.md "Deadlocks": the limit counts sessions and edges; a run of k shared waiters
  costs O(k) to read, never O(k^2)), so it is refused, not queued past a given-up search.
- LOCK.INFO's waits_for and LOCK.WAITS list at most --max-keys-reply sids per reply and say
  where they cut (`waits_for_cut`, a row's `cut`).
- A LOCK.MULTI retried with the REQ of a request answered QUEUED answers for every name: a
  single LOCK of the same session on its first name is not its wait; a grant of which one
  name was since released is not its grant. Both answer an error saying the outcome is gone."""

from helpers import eq, expect_err, expect_int, ok, open_session, wait_queued, wait_until
from resp import RespError, as_map
from test_deadlock import format_2
from test_http import metric

READERS = 100


def test_a_cycle_behind_a_hundred_shared_waiters_is_refused_not_let_in(ctx):
    c = ctx.conn()
    format_2(c)
    w, v = open_session(c), open_session(c)
    expect_int(c.call("LOCK", "L", w))
    expect_int(c.call("LOCK", "M", v))
    cw = ctx.conn()
    cw.send("LOCK", "M", w, "WAIT", 60000)  # W waits for V
    wait_queued(c, "M", w)
    readers = []
    for _ in range(READERS):
        r = open_session(c)
        cr = ctx.conn()
        cr.send("LOCK", "L", r, "SHARED", "WAIT", 60000)
        readers.append((r, cr))
    wait_until(lambda: len(as_map(c.call("LOCK.INFO", "L"))["waiters"]) == READERS, 60,
               what="%d readers queued on L" % READERS)
    given_up = metric(ctx.srv, "fencelock_deadlock_searches_given_up_total")
    r = c.call("LOCK", "L", v, "WAIT", 60000)
    expect_err(r, "DEADLOCK", "V and W wait for each other: 102 sessions, about 200 edges")
    eq(r.text, "DEADLOCK cycle of 2: %d -L-> %d -M-> %d" % (v, w, v), "the reply names it")
    eq(len(as_map(c.call("LOCK.INFO", "L"))["waiters"]), READERS, "V was not queued")
    eq(metric(ctx.srv, "fencelock_deadlock_searches_given_up_total"), given_up,
       "the search did not give up")
    for _, cr in readers:
        cr.close()
    cw.close()


def test_waits_for_lists_are_capped_at_max_keys_reply_and_say_so(ctx):
    srv = ctx.server("--max-keys-reply", "5")
    c = ctx.conn(srv)
    h, x = open_session(c), open_session(c)
    expect_int(c.call("LOCK", "L", h))
    conns = []
    readers = []
    for _ in range(8):
        r = open_session(c)
        cr = ctx.conn(srv)
        cr.send("LOCK", "L", r, "SHARED", "WAIT", 60000)
        readers.append(r)
        conns.append(cr)
    cx = ctx.conn(srv)
    cx.send("LOCK", "L", x, "WAIT", 60000)  # behind 8 readers: waits for h and all 8
    conns.append(cx)
    wait_queued(c, "L", x)
    info = as_map(c.call("LOCK.INFO", "L"))
    lists = [list(l) for l in info["waits_for"]]
    eq(len(lists), 9, "one list per waiter")
    eq(sum(len(l) for l in lists), 5, "5 sids in all (--max-keys-reply)")
    eq(lists[:5], [[h]] * 5, "the first readers wait for the holder")
    eq(info["waits_for_cut"], 1, "LOCK.INFO says it cut")
    eq(list(info["waiters"]), readers + [x],
       "every waiter listed whatever the cut (one read of the queue gives both lists)")
    rows = [as_map(m) for m in c.call("LOCK.WAITS")]
    eq(len(rows), 9, "a row per waiter")
    eq(sum(len(m["waits_for"]) for m in rows), 5)
    eq([m["cut"] for m in rows], [0] * 5 + [1] * 4, "the rows past the cap say so")
    for cr in conns:
        cr.close()
    c2 = ctx.conn()  # the default cap lists everything
    h2, x2 = open_session(c2), open_session(c2)
    expect_int(c2.call("LOCK", "K", h2))
    cx2 = ctx.conn()
    cx2.send("LOCK", "K", x2, "WAIT", 60000)
    wait_queued(c2, "K", x2)
    info = as_map(c2.call("LOCK.INFO", "K"))
    eq(([list(l) for l in info["waits_for"]], "waits_for_cut" in info), ([[h2]], False),
       "nothing cut: the reply is as it was")
    cx2.close()


def _gone(r, what):
    assert isinstance(r, RespError) and "outcome of this LOCK.MULTI is gone" in r.text, \
        "%s: %r" % (what, r)


def test_a_multi_retry_does_not_take_a_single_lock_of_its_first_name_as_its_wait(ctx):
    c = ctx.conn()
    o, m = open_session(c), open_session(c)
    expect_int(c.call("LOCK", "a", o))
    c1 = ctx.conn()
    c1.send("LOCK.MULTI", m, 2, "a", "b", "WAIT", 5000, "REQ", m, 7)  # long enough to be seen
    wait_queued(c, "a", m)
    c1.close()  # the connection is lost; the wait's timer ends it on both names
    wait_until(lambda: m not in (as_map(c.call("LOCK.INFO", "a"))["waiters"] or []), 30,
               what="the multi-request's wait ended")
    eq(c.call("LOCK.INFO", "b"), None, "b: nobody waits")
    c2 = ctx.conn()
    c2.send("LOCK", "a", m, "WAIT", 60000)  # another thread of the same session, a alone
    wait_queued(c, "a", m)
    c3 = ctx.conn()
    c3.send("LOCK.MULTI", m, 2, "a", "b", "WAIT", 1000, "REQ", m, 7)  # the client's retry
    ok(c.call("UNLOCK", "a", o))  # a goes to the single LOCK
    t = expect_int(c2.read_reply(timeout=30), "the single LOCK gets a")
    _gone(c3.read_reply(timeout=30), "the retry")
    eq(c.call("LOCK.INFO", "b"), None, "and nobody holds b")
    ok(c.call("UNLOCK", "a", m))
    eq(t > 0, True)


def test_a_multi_retry_after_one_name_was_released_is_not_nil(ctx):
    c = ctx.conn()
    o, m = open_session(c), open_session(c)
    expect_int(c.call("LOCK", "a", o))
    c1 = ctx.conn()
    c1.send("LOCK.MULTI", m, 2, "a", "b", "WAIT", 60000, "REQ", m, 8)
    wait_queued(c, "a", m)
    c1.close()
    ok(c.call("UNLOCK", "a", o))  # granted whole while nobody listens
    wait_until(lambda: (as_map(c.call("LOCK.INFO", "b")) or {}).get("holder") == m, 30,
               what="the multi-request granted")
    ok(c.call("UNLOCK", "a", m))  # a released (an UNLOCK, or a revoke's deadline)
    _gone(c.call("LOCK.MULTI", m, 2, "a", "b", "WAIT", 60000, "REQ", m, 8), "the retry")
    eq(as_map(c.call("LOCK.INFO", "b"))["holder"], m, "b stays held, and the retry says so")


def _waiters(info):
    """LOCK.INFO's waiters; None for a lock that does not exist (yet)."""
    return None if info is None else as_map(info).get("waiters")


def test_sighup_rechecks_every_name_of_a_parked_multi_request(ctx):
    """A parked LOCK.MULTI is parked under its first name; a SIGHUP that takes away a later
    name must still answer it -NOPERM and cancel its wait on every name."""
    import os
    import signal
    from test_tenant import _acl_node, _as, _users
    spec = {"app": "perm=read,lock"}
    s, path = _acl_node(ctx, spec)
    admin = _as(ctx, s, "admin")
    hold = expect_int(admin.call("SESSION.OPEN", 60000))
    expect_int(admin.call("LOCK", "a", hold))
    app = _as(ctx, s, "app")
    sid = expect_int(app.call("SESSION.OPEN", 60000))
    locker = _as(ctx, s, "app")
    locker.send("LOCK.MULTI", sid, 2, "a", "b", "WAIT", 60000)
    # LOCK.INFO answers nil until the queueing request's entry applied (a read under the
    # leader's lease does not wait for it: the request is not acknowledged yet)
    wait_until(lambda: _waiters(admin.call("LOCK.INFO", "b")) == [sid],
               timeout=15, what="app's multi-request queued on b")
    with open(path, "w") as f:  # a stays allowed, b does not
        f.write("\n".join(_users(ctx, {"admin": "perm=all", "app": "perm=read,lock locks=a"}))
                + "\n")
    os.kill(s.proc.pid, signal.SIGHUP)
    r = locker.read_reply(timeout=15)
    assert isinstance(r, RespError) and r.code == "NOPERM", r
    wait_until(lambda: admin.call("LOCK.INFO", "b") is None, timeout=15,
               what="the multi-request's wait cancelled on every name")
    eq(as_map(admin.call("LOCK.INFO", "a")).get("waiters") or [], [], "nor queued on a")
