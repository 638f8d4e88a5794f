# SPDX-License-Identifier: Apache-2.0
"""The conformance scenarios: each runs against one agent (ctx.spec) and 3 real fencelockd
processes, makes its fault, and states properties of what the client reported and what the
servers hold; never how long anything took. Every wait is a generous bound.

Each scenario's docstring says what it proves; docs/clients.md "What the conformance suite
proves" lists them for readers. A scenario is a function named scenario_*; its `timeout`
attribute bounds it (seconds)."""

import calendar
import re
import time

from faults import ReplyDrop, call_leader, conn, grants, kv, leader_of, plain_cluster, \
    secure_cluster
from helpers import eq, wait_until
from resp import RespError, as_map, text


def _sid(r):
    return r["session"], r["sid"]


def _lock_info(servers, name):
    r = call_leader(servers, "LOCK.INFO", name)
    if isinstance(r, RespError):
        raise AssertionError("LOCK.INFO %s -> -%s" % (name, r.text))
    return None if r is None else as_map(r)


def _nosession(servers, sid):
    r = call_leader(servers, "SESSION.INFO", sid)
    return isinstance(r, RespError) and r.code == "NOSESSION"


# ---- 1. kill -9 of the leader while a lock waits ----

def scenario_lock_wait_across_leader_kill(ctx):
    """A lock waiting while the leader is kill -9'd is granted once, on the new leader, with a
    token above the holder's; the holder's unlock itself crosses the fail-over. Proves: REQ
    numbering makes the re-sent LOCK one grant (the survivors applied exactly two grants),
    and the token the client reports is the one the servers hold."""
    servers, leader = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    h, _ = _sid(a.ok("session.open", ttl=10))
    w, sid_w = _sid(a.ok("session.open", ttl=10))
    t1 = a.ok("lock", session=h, name="job", wait=5)["token"]
    pending = a.send("lock", session=w, name="job", wait=60)
    wait_until(lambda: (_lock_info(servers, "job") or {}).get("waiters") == [sid_w], timeout=15,
               interval=0.05, what="the waiter queued on the servers")
    survivors = [s for s in servers if s is not leader]
    eq([grants(s) for s in survivors], [1, 1], "one grant before the kill")

    leader.kill9()
    a.ok("unlock", timeout=60, session=h, name="job")
    t2 = a.ok_of(pending, timeout=90, what=" (the waiting lock)")["token"]
    assert t2 > t1, ("the waiter's token is not above the holder's", t1, t2)
    new = leader_of(survivors)
    with conn(new) as c:
        li = as_map(c.call("LOCK.INFO", "job"))
    eq((li["holder"], li["token"], li["waiters"]), (sid_w, t2, []),
       "LOCK.INFO on the new leader: the waiter holds with the token it was told")
    a.ok("unlock", session=w, name="job")
    wait_until(lambda: min(grants(s) for s in survivors) >= 2, timeout=15, interval=0.05,
               what="both survivors applied the second grant")
    for s in (h, w):
        a.ok("session.close", session=s)
    eq([grants(s) for s in survivors], [2, 2], "exactly two grants: none repeated")


scenario_lock_wait_across_leader_kill.timeout = 150


# ---- 2. SIGSTOP of every server until safe_until passes ----

LOG_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z ")


def _log_ms(line):
    m = LOG_TIME.match(line)
    if not m:
        return None
    y, mo, d, h, mi, s, ms = (int(x) for x in m.groups())
    return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) * 1000 + ms


def expiry_ms(servers, sid):
    """The earliest wall time (ms) at which a node logged the expiry of session sid: the line
    every node writes when it applies the expiry of a session holding a lock (lease/timers.c
    log_lost_hold: "session N expired while holding 'name' (token T): ..."); None if none."""
    pat = " session %d expired while holding " % sid
    times = [_log_ms(line) for s in servers for line in s.log_text().splitlines() if pat in line]
    times = [t for t in times if t is not None]
    return min(times) if times else None


def scenario_lost_before_servers_expire(ctx):
    """Every server SIGSTOPped while the agent holds a lock: the agent's `lost` event comes
    (the safe deadline passed without an acknowledged keepalive), its wall clock is before the
    first expiry line the servers log after SIGCONT, and session.safe then says lost. Before the
    freeze, the client's safe deadline is never after the leader's own (SESSION.INFO
    remaining_ms, bounded by the harness's round trip). Proves: the client stops the holder's
    work before the servers can give the lock to anyone else."""
    ttl = 3
    servers, leader = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=5)
    s, sid = _sid(a.ok("session.open", ttl=ttl))
    a.ok("lock", session=s, name="held", wait=5)
    for _ in range(5):
        t0 = time.monotonic()
        r = a.ok("session.safe", session=s)
        with conn(leader) as c:
            srv_left = as_map(c.call("SESSION.INFO", sid))["remaining_ms"]
        rtt_ms = (time.monotonic() - t0) * 1000.0
        assert r["lost"] is False and 0 < r["remaining_ms"] <= ttl * 1000, r
        assert r["remaining_ms"] <= srv_left + rtt_ms + 2, (
            "the client's safe deadline is after the leader's", r, srv_left, rtt_ms)
        time.sleep(0.2)

    for x in servers:
        x.sigstop()
    ctx.defer(lambda: [x.sigcont() for x in servers])
    lost = a.wait_event(lambda e: e.get("event") == "lost" and e.get("session") == s,
                        ttl + 20, "lost event while every server is stopped")
    r = a.ok("session.safe", session=s)
    assert r["lost"] is True and r["remaining_ms"] <= 0, ("session.safe after lost", r)
    for x in servers:
        x.sigcont()
    expired = wait_until(lambda: expiry_ms(servers, sid), timeout=ttl + 30, interval=0.1,
                         what="a server's log line for the expiry of session %d" % sid)
    assert lost["wall_ms"] < expired, ("lost came after the servers expired the session",
                                       lost["wall_ms"], expired)
    wait_until(lambda: _nosession(servers, sid), timeout=20, interval=0.1,
               what="the servers dropped the session")
    eq(len(a.events_of(lambda e: e.get("event") == "lost")), 1, "one lost event")


scenario_lost_before_servers_expire.timeout = 120


# ---- 3. a paused holder's fenced write refused ----

def scenario_paused_holder_fenced_out(ctx):
    """Agent A holds a lock and is SIGSTOPped past its TTL; the servers expire its session and
    agent B (a second process of the same client) takes the lock and writes. A resumed: its
    `lost` event comes, its write fenced with the old token fails STALE, a write through its
    lost session fails SESSION, and the key holds B's write. Proves: a paused holder cannot
    overwrite its successor's work."""
    ttl = 2
    servers, _ = plain_cluster(ctx)
    A = ctx.agent(servers, label="A", timeout=5)
    B = ctx.agent(servers, label="B", timeout=10)
    sa, sid_a = _sid(A.ok("session.open", ttl=ttl))
    ta = A.ok("lock", session=sa, name="res", wait=5)["token"]
    A.ok("put", key="data", value="A", session=sa, fence=["res", ta])

    A.sigstop()
    wait_until(lambda: _nosession(servers, sid_a), timeout=ttl + 30, interval=0.1,
               what="the servers expire the paused holder's session")
    sb, _ = _sid(B.ok("session.open", ttl=10))
    tb = B.ok("lock", session=sb, name="res", wait=10)["token"]
    assert tb > ta, ("the new holder's token is not above the old one", ta, tb)
    B.ok("put", key="data", value="B", session=sb, fence=["res", tb])

    A.sigcont()
    A.wait_event(lambda e: e.get("event") == "lost" and e.get("session") == sa, ttl + 30,
                 "A's lost event after SIGCONT")
    A.err("put", "STALE", key="data", value="A-late", fence=["res", ta])
    A.err("put", "SESSION", key="data", value="A-late", session=sa, fence=["res", ta])
    eq(kv(servers, "data")["value"], b"B", "the key holds B's write (servers)")
    eq(B.ok("get", key="data")["value"], "B", "the key holds B's write (B's get)")
    B.ok("unlock", session=sb, name="res")
    B.ok("session.close", session=sb)


scenario_paused_holder_fenced_out.timeout = 120


# ---- 4. ambiguous outcomes ----

def scenario_unknown_outcome_without_session(ctx):
    """A write without a session whose answer is lost (the leader's replies to this agent are
    dropped: the request applies, the answer never arrives) is reported UNKNOWN: never a
    success, never a failure. Proves: a client does not turn a write it cannot judge into a
    claim either way."""
    servers, leader = plain_cluster(ctx)
    a = ctx.agent(servers, cgroup=True, timeout=5)
    a.ok("put", key="warm", value="0")  # the client's connection to the leader exists
    drop = ReplyDrop(leader, a)
    ctx.defer(drop.lift)
    drop.start()
    r = a.call("put", timeout=90, key="u", value="1")
    drop.lift()
    got = kv(servers, "u")
    assert got is not None and got["value"] == b"1", (
        "the put did not reach the leader: the scenario needs one that applied "
        "(did the client open a new connection for it?)", r, got)
    assert r.get("ok") is False and r.get("error") == "UNKNOWN", (
        "an applied write whose answer was lost must be UNKNOWN", r)


scenario_unknown_outcome_without_session.timeout = 120


def scenario_session_retry_applies_once(ctx):
    """A write through a session whose answers are lost the same way, the drop lifted while
    the client still retries: the write succeeds, applied once (the key's version rose by
    exactly 1, and the revision the client reports is the key's). Proves: REQ numbering makes
    a retried write exactly-once."""
    servers, leader = plain_cluster(ctx)
    a = ctx.agent(servers, cgroup=True, timeout=60)  # retries outlast the drop by far
    s, _ = _sid(a.ok("session.open", ttl=60))
    a.ok("put", key="v", value="0", session=s)
    before = kv(servers, "v")
    drop = ReplyDrop(leader, a)
    ctx.defer(drop.lift)
    drop.start()
    pending = a.send("put", key="v", value="1", session=s)
    wait_until(lambda: kv(servers, "v")["value"] == b"1", timeout=30, interval=0.05,
               what="the write applied on the servers")
    time.sleep(2.5)  # the client's resends run into the drop meanwhile (not a check)
    assert not a.answered(pending), ("answered while its answers were dropped",
                                     a.reply(pending))
    drop.lift()
    r = a.ok_of(pending, timeout=60, what=" (the session put)")
    after = kv(servers, "v")
    eq(after["version"], before["version"] + 1, "the key's version rose by exactly 1")
    eq(r["rev"], after["mod_rev"], "the revision reported is the key's")
    eq(a.ok("session.safe", session=s)["lost"], False, "the session survived")
    a.ok("session.close", session=s)


scenario_session_retry_applies_once.timeout = 150


# ---- 5. watch across a leader kill ----

def _rev_of(event_id):
    return int(event_id.split("-")[0])


def scenario_watch_across_leader_kill(ctx):
    """A watcher sees a stream of PUTs made before, during (one in flight) and after a kill -9
    of the leader: exactly one event per acknowledged PUT, in order, at the revision the PUT
    reported; no gap, no duplicate. Then a watcher asked to start before the servers' retained
    history ends COMPACTED and delivers nothing: never a silent gap, never back. Proves: a
    watch resumes across fail-over exactly where it stopped."""
    servers, leader = plain_cluster(ctx, extra=["--event-history", "60"])
    a = ctx.agent(servers, timeout=20)
    s, _ = _sid(a.ok("session.open", ttl=20))
    with conn(leader) as c:
        start = as_map(c.call("CLUSTER.INFO"))["revision"]
    w = a.ok("watch.start", prefix="wk/", **{"from": "%d-0" % start})["watch"]
    acks = []
    for i in range(15):
        acks.append((a.ok("put", key="wk/%d" % i, value=str(i), session=s)["rev"], "wk/%d" % i))
    during = a.send("put", key="wk/15", value="15", session=s)
    leader.kill9()
    acks.append((a.ok_of(during, timeout=60, what=" (the PUT during the kill)")["rev"], "wk/15"))
    for i in range(16, 40):
        acks.append((a.ok("put", key="wk/%d" % i, value=str(i), session=s, timeout=60)["rev"],
                     "wk/%d" % i))

    def mine(e):
        return e.get("event") == "watch" and e.get("watch") == w
    a.wait_event(lambda e: mine(e) and e.get("name") == "wk/39", 60, "the last PUT's event")
    stopped = a.ok("watch.stop", watch=w)
    got = [(_rev_of(e["id"]), e["name"]) for e in a.events_of(mine)]
    eq(got, acks, "one event per acknowledged PUT, in order, at its revision")
    assert all(e.get("type") == "put" for e in a.events_of(mine))
    eq(_rev_of(stopped["last"]), acks[-1][0], "watch.stop's last id")
    ends = a.events_of(lambda e: e.get("event") == "watch_end" and e.get("watch") == w)
    eq([e.get("error") for e in ends], [None], "one watch_end, without error")

    # Push the PUTs out of the retained history, then ask for them.
    survivors = [x for x in servers if x is not leader]
    new = leader_of(survivors)
    with conn(new) as c:
        for i in range(80):
            r = c.call("PUT", "fill/%d" % i, "x")
            assert not isinstance(r, RespError), r
    first = "%d-0" % acks[0][0]
    w2 = a.ok("watch.start", prefix="wk/", **{"from": first})["watch"]
    end = a.wait_event(lambda e: e.get("event") == "watch_end" and e.get("watch") == w2, 30,
                       "watch_end of a watcher started before the retained history")
    eq(end.get("error"), "COMPACTED", "the watcher ends COMPACTED")
    eq(a.events_of(lambda e: e.get("event") == "watch" and e.get("watch") == w2), [],
       "nothing delivered: no silent gap, nothing from before")
    a.ok("session.close", session=s)


scenario_watch_across_leader_kill.timeout = 150


# ---- 6. TLS and AUTH ----

def scenario_tls_and_auth(ctx):
    """On a cluster with client TLS (client certificates required), peer mutual TLS and ACLs:
    an agent trusting another CA is refused with TLS, one with a wrong password with AUTH
    (at ready, or on its first call), and one with the right CA and password opens a session,
    locks, writes fenced and reads. Proves: the server's certificate is checked, credentials
    are sent, and both refusals are typed."""
    sec = ctx.secure()
    servers, _ = secure_cluster(ctx, sec)
    good = dict(FL_TLS_CA=sec.ca, FL_TLS_CERT=sec.cert, FL_TLS_KEY=sec.key,
                FL_USER=sec.user, FL_PASSWORD=sec.password)

    def refused(label, word, **env):
        x = ctx.agent(servers, label=label, timeout=3, ready=False, **dict(good, **env))
        r = x.wait_ready()
        if r.get("ready") is False:
            eq(r.get("error"), word, "%s: the client could not be made" % label)
        else:
            x.err("session.open", word, ttl=10)
            x.err("put", word, key="k", value="x")
        x.quit()

    refused("wrong-ca", "TLS", FL_TLS_CA=sec.other_ca)
    refused("wrong-password", "AUTH", FL_PASSWORD="not-" + sec.password)
    ok = ctx.agent(servers, label="right", timeout=10, **good)
    s, _ = _sid(ok.ok("session.open", ttl=10))
    t = ok.ok("lock", session=s, name="l", wait=5)["token"]
    ok.ok("put", key="k", value="secure", session=s, fence=["l", t])
    eq(ok.ok("get", key="k")["value"], "secure")
    ok.ok("session.close", session=s)


scenario_tls_and_auth.timeout = 150
scenario_tls_and_auth.needs_secure = True


# ---- the basics ----

def scenario_basics_sessions_and_locks(ctx):
    """Sessions open and close (a closed session's locks are released and its handle answers
    SESSION); lock, try (BUSY), a wait that runs out (TIMEOUT), unlock by a non-holder
    (NOTHOLDER), tokens rising, fence.check (STALE for an old token); shared locks: two
    readers at once, a writer's try BUSY, a reader's try on a held lock BUSY, a reader's token
    refused for a fenced write."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    s1, sid1 = _sid(a.ok("session.open", ttl=10, name="conf-a"))
    s2, sid2 = _sid(a.ok("session.open", ttl=10))
    assert s1 != s2 and sid1 != sid2, (s1, s2, sid1, sid2)
    r = a.ok("session.safe", session=s1)
    assert r["lost"] is False and 0 < r["remaining_ms"] <= 10000, r
    t1 = a.ok("lock", session=s1, name="l", wait=5)["token"]
    a.err("lock", "BUSY", session=s2, name="l", wait=0)
    a.err("lock", "TIMEOUT", session=s2, name="l", wait=0.3)
    a.ok("fence.check", name="l", token=t1)
    a.err("fence.check", "STALE", name="l", token=t1 + 1000)
    a.err("unlock", "NOTHOLDER", session=s2, name="l")
    a.ok("unlock", session=s1, name="l")
    t2 = a.ok("lock", session=s2, name="l", wait=0)["token"]
    assert t2 > t1, (t1, t2)
    a.err("fence.check", "STALE", name="l", token=t1)
    li = _lock_info(servers, "l")
    eq((li["holder"], li["token"]), (sid2, t2), "LOCK.INFO")

    s3, sid3 = _sid(a.ok("session.open", ttl=10))
    ra = a.ok("lock", session=s1, name="rw", wait=0, shared=True)["token"]
    rb = a.ok("lock", session=s3, name="rw", wait=5, shared=True)["token"]
    assert rb > ra, (ra, rb)
    li = _lock_info(servers, "rw")
    eq(text(li["mode"]), "shared", "LOCK.INFO mode")
    eq(sorted(as_map(h)["sid"] for h in li["holders"]), sorted([sid1, sid3]),
       "both readers hold")
    a.ok("fence.check", name="rw", token=rb)
    a.err("lock", "BUSY", session=s2, name="rw", wait=0)
    a.err("lock", "BUSY", session=s3, name="l", wait=0, shared=True)  # s2 holds it
    a.err("put", "STALE", key="rw-key", value="x", session=s3, fence=["rw", rb])
    a.ok("unlock", session=s1, name="rw")
    a.ok("unlock", session=s3, name="rw")
    a.ok("session.close", session=s3)

    a.ok("session.close", session=s2)  # holds "l": released with it
    eq(_lock_info(servers, "l"), None, "the closed session's lock is free")
    assert _nosession(servers, sid2), "the closed session is gone on the servers"
    a.err("lock", "SESSION", session=s2, name="l", wait=0)
    a.ok("session.close", session=s1)


scenario_basics_sessions_and_locks.timeout = 90


def scenario_basics_semaphore_and_election(ctx):
    """Semaphore: `limit` permits at once, the next waits (TIMEOUT) until one is released,
    release by a non-holder NOTHOLDER; a name of another kind WRONGTYPE. Election: campaign,
    leader, observe a change, a second candidate leads after the first resigns with a higher
    token, observe sees it and then the leaderless state; leader of a leaderless election
    NOTFOUND."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    s1, sid1 = _sid(a.ok("session.open", ttl=10))
    s2, sid2 = _sid(a.ok("session.open", ttl=10))
    s3, _ = _sid(a.ok("session.open", ttl=10))
    p1 = a.ok("sem.acquire", session=s1, name="pool", limit=2, wait=5)["token"]
    p2 = a.ok("sem.acquire", session=s2, name="pool", limit=2, wait=5)["token"]
    assert p2 > p1, (p1, p2)
    a.err("sem.acquire", "TIMEOUT", session=s3, name="pool", limit=2, wait=0.3)
    a.ok("sem.release", session=s1, name="pool")
    a.ok("sem.acquire", session=s3, name="pool", limit=2, wait=5)
    a.err("sem.release", "NOTHOLDER", session=s1, name="pool")
    a.err("lock", "WRONGTYPE", session=s1, name="pool", wait=0)
    a.ok("sem.release", session=s2, name="pool")
    a.ok("sem.release", session=s3, name="pool")

    ta = a.ok("elect.campaign", session=s1, name="el", value="a", wait=5)["token"]
    ld = a.ok("elect.leader", name="el")
    eq((ld["sid"], ld["value"], ld["token"]), (sid1, "a", ta), "elect.leader")
    ob = a.ok("elect.observe", name="el", after_rev=0, wait=5)
    eq((ob["sid"], ob["value"]), (sid1, "a"), "observe: the current state")
    pending = a.send("elect.campaign", session=s2, name="el", value="b", wait=30)
    a.err("elect.resign", "NOTHOLDER", session=s3, name="el")
    a.ok("elect.resign", session=s1, name="el")
    tb = a.ok_of(pending, what=" (the second campaign)")["token"]
    assert tb > ta, (ta, tb)
    ob2 = a.ok("elect.observe", name="el", after_rev=ob["rev"], wait=10)
    seen = [ob2]
    while seen[-1]["sid"] != sid2:  # every change after ob, one by one (bounded: two)
        assert len(seen) < 3, seen
        seen.append(a.ok("elect.observe", name="el", after_rev=seen[-1]["rev"], wait=10))
    eq((seen[-1]["sid"], seen[-1]["value"]), (sid2, "b"), "observe: the new leader")
    a.ok("elect.resign", session=s2, name="el")
    ob3 = a.ok("elect.observe", name="el", after_rev=seen[-1]["rev"], wait=10)
    eq(ob3["sid"], 0, "observe: leaderless")
    a.err("elect.leader", "NOTFOUND", name="el")
    for s in (s1, s2, s3):
        a.ok("session.close", session=s)


scenario_basics_semaphore_and_election.timeout = 90


def scenario_basics_keys(ctx):
    """put (with and without a session, fenced with the holder's token; STALE with an older
    one), get (value, mod_rev, version; NOTFOUND), ifrev (IFREV when it does not hold; 0:
    create only), del (fenced), UTF-8 values round-trip."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    s, _ = _sid(a.ok("session.open", ttl=10))
    t = a.ok("lock", session=s, name="inv", wait=5)["token"]
    r1 = a.ok("put", key="stock", value="10", session=s, fence=["inv", t])["rev"]
    assert r1 > t, (t, r1)
    g = a.ok("get", key="stock")
    eq((g["value"], g["mod_rev"], g["version"]), ("10", r1, 1), "get after put")
    a.err("put", "STALE", key="stock", value="9", session=s, fence=["inv", t - 1])
    r2 = a.ok("put", key="stock", value="11", ifrev=r1)["rev"]
    a.err("put", "IFREV", key="stock", value="12", ifrev=r1)
    g = a.ok("get", key="stock")
    eq((g["value"], g["mod_rev"], g["version"]), ("11", r2, 2), "get after the CAS")
    a.ok("put", key="fresh", value="v", ifrev=0)
    a.err("put", "IFREV", key="fresh", value="w", ifrev=0)
    a.ok("del", key="stock", session=s, fence=["inv", t])
    a.err("get", "NOTFOUND", key="stock")
    a.err("del", "STALE", key="fresh", fence=["inv", t - 1])
    text_value = "v\u00e4lue \u2713 \U0001F512"
    a.ok("put", key="utf8", value=text_value)
    eq(a.ok("get", key="utf8")["value"], text_value, "UTF-8 value")
    eq(kv(servers, "utf8")["value"], text_value.encode(), "UTF-8 value on the servers")
    a.ok("unlock", session=s, name="inv")
    a.ok("session.close", session=s)


scenario_basics_keys.timeout = 90


# ---- multi-lock and deadlock ----

def scenario_multi_lock_across_leader_kill(ctx):
    """LOCK.MULTI is all or nothing with a token per name, across a kill -9 of the leader: a
    try over a held name is BUSY and takes none of the free ones; a waiting multi-request (it
    holds nothing while it waits) crosses the kill and is granted once, every name in one
    entry: the survivors applied exactly one grant per name, the tokens are above the
    holder's, consecutive in the names' byte order and listed in the order asked, and the new
    leader's LOCK.INFO of every name shows the waiter with the token the client reported.
    unlock.multi releases them all."""
    servers, leader = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    h, _ = _sid(a.ok("session.open", ttl=10))
    w, sid_w = _sid(a.ok("session.open", ttl=10))
    names = ["stock/paris", "stock/lyon", "prices"]
    t1 = a.ok("lock", session=h, name="stock/lyon", wait=5)["token"]
    a.err("lock.multi", "BUSY", session=w, names=names, wait=0)
    for n in ("stock/paris", "prices"):
        eq(_lock_info(servers, n), None, "a refused try took nothing: %s" % n)
    pending = a.send("lock.multi", session=w, names=names, wait=60)
    wait_until(lambda: all((_lock_info(servers, n) or {}).get("waiters") == [sid_w]
                           for n in names),
               timeout=15, interval=0.05, what="the multi-request queued on every name")
    eq(_lock_info(servers, "stock/paris").get("holder") or 0, 0,
       "a waiting multi-request holds nothing")
    survivors = [s for s in servers if s is not leader]
    wait_until(lambda: [grants(s) for s in survivors] == [1, 1], timeout=15, interval=0.05,
               what="both survivors applied the one grant before the kill")

    leader.kill9()
    a.ok("unlock", timeout=60, session=h, name="stock/lyon")
    toks = a.ok_of(pending, timeout=90, what=" (the waiting lock.multi)")["tokens"]
    eq(len(toks), len(names), "a token per name")
    assert all(t > t1 for t in toks), ("a token not above the holder's", t1, toks)
    by_name = dict(zip(names, toks))
    ordered = [by_name[n] for n in sorted(names, key=lambda n: n.encode())]
    eq(ordered, list(range(ordered[0], ordered[0] + len(names))),
       "one entry: consecutive tokens in the names' byte order, listed in the order asked")
    new = leader_of(survivors)
    with conn(new) as c:
        for n, t in by_name.items():
            li = as_map(c.call("LOCK.INFO", n))
            eq((li["holder"], li["token"], li["waiters"]), (sid_w, t, []),
               "LOCK.INFO %s on the new leader" % n)
    wait_until(lambda: min(grants(s) for s in survivors) >= 1 + len(names), timeout=15,
               interval=0.05, what="both survivors applied the multi-grant")
    a.ok("unlock.multi", session=w, names=names)
    for n in names:
        eq(_lock_info(servers, n), None, "unlock.multi released %s" % n)
    for s in (h, w):
        a.ok("session.close", session=s)
    eq([grants(s) for s in survivors], [1 + len(names)] * 2,
       "exactly one grant per name: none repeated")


scenario_multi_lock_across_leader_kill.timeout = 150


def scenario_deadlock_refused(ctx):
    """A wait that closes a cycle of sessions waiting for each other is refused DEADLOCK, with
    the cycle in the message, and is not queued; nothing else changes: the other wait stays
    and is granted once the holder lets go. And lock.multi over the same names in opposite
    orders never deadlocks (a multi-request holds nothing while it waits)."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    s1, sid1 = _sid(a.ok("session.open", ttl=10))
    s2, sid2 = _sid(a.ok("session.open", ttl=10))
    a.ok("lock", session=s1, name="dl/a", wait=5)
    tb = a.ok("lock", session=s2, name="dl/b", wait=5)["token"]
    pending = a.send("lock", session=s1, name="dl/b", wait=60)
    wait_until(lambda: (_lock_info(servers, "dl/b") or {}).get("waiters") == [sid1],
               timeout=15, interval=0.05, what="s1 queued on dl/b")
    r = a.err("lock", "DEADLOCK", session=s2, name="dl/a", wait=30)
    assert "cycle of 2" in r["message"], r
    assert "-dl/a->" in r["message"] and "-dl/b->" in r["message"], r
    eq((_lock_info(servers, "dl/a") or {}).get("waiters"), [],
       "the refused wait was not queued")
    eq((_lock_info(servers, "dl/b") or {}).get("waiters"), [sid1], "the other wait stays")
    a.ok("unlock", session=s2, name="dl/b")
    t = a.ok_of(pending, timeout=60, what=" (s1's wait)")["token"]
    assert t > tb, (tb, t)
    a.ok("unlock.multi", session=s1, names=["dl/a", "dl/b"])

    # Multi-requests over the same names in opposite orders: no cycle, both granted in turn.
    a.ok("lock", session=s2, name="dl/x", wait=5)
    p1 = a.send("lock.multi", session=s1, names=["dl/x", "dl/y"], wait=60)
    wait_until(lambda: (_lock_info(servers, "dl/x") or {}).get("waiters") == [sid1],
               timeout=15, interval=0.05, what="s1's multi-request queued")
    a.ok("unlock", session=s2, name="dl/x")
    a.ok_of(p1, timeout=60, what=" (s1's lock.multi)")
    p2 = a.send("lock.multi", session=s2, names=["dl/y", "dl/x"], wait=60)
    wait_until(lambda: (_lock_info(servers, "dl/y") or {}).get("waiters") == [sid2],
               timeout=15, interval=0.05, what="s2's multi-request queued")
    a.ok("unlock.multi", session=s1, names=["dl/x", "dl/y"])
    a.ok_of(p2, timeout=60, what=" (s2's lock.multi)")
    a.ok("unlock.multi", session=s2, names=["dl/y", "dl/x"])
    for s in (s1, s2):
        a.ok("session.close", session=s)


scenario_deadlock_refused.timeout = 120


# ---- cooperative revocation ----

def _revoke_events(a, session):
    return a.events_of(lambda e: e.get("event") == "revoke" and e.get("session") == session)


def _check_revoke_event(ev, session, name, token, deadline_ms, reason):
    eq((ev.get("session"), ev.get("name"), ev.get("token"), ev.get("deadline_ms"),
        ev.get("reason")), (session, name, token, deadline_ms, reason),
       "the revoke event: session, name, token, deadline_ms, reason as asked")
    assert "127.0.0.1:" in (ev.get("by") or ""), ("the revoke event names who asked", ev)


def scenario_revoke_holder_lets_go(ctx):
    """A holder registered with on_revoke hears a LOCK.REVOKE of its grant (name, token,
    deadline, reason, who asked: exactly as asked, once, after the reply to on_revoke) and
    lets go; the queued waiter is granted with a larger token, the old token is refused by
    FENCE.CHECK, and no grant was taken by force (the holder's unlock found it holding).
    Proves: the request reaches the holder's code through the client's public API."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    h, sid_h = _sid(a.ok("session.open", ttl=10))
    w, sid_w = _sid(a.ok("session.open", ttl=10))
    name = "rv/job"
    t1 = a.ok("lock", session=h, name=name, wait=5)["token"]
    reg = a.send("on_revoke", session=h, name=name, token=t1)
    a.ok_of(reg, what=" (on_revoke)")
    pending = a.send("lock", session=w, name=name, wait=60)
    wait_until(lambda: (_lock_info(servers, name) or {}).get("waiters") == [sid_w], timeout=15,
               interval=0.05, what="the waiter queued on the servers")
    eq(a.ok("revoke", name=name, deadline_ms=120000, reason="maintenance \u2713")["token"], t1,
       "revoke answers the holder's token")
    ev = a.wait_event(lambda e: e.get("event") == "revoke" and e.get("session") == h, 30,
                      "the holder's revoke event")
    _check_revoke_event(ev, h, name, t1, 120000, "maintenance \u2713")
    assert a.before(reg, ev), "the revoke event came before the reply to on_revoke"
    eq((_lock_info(servers, name) or {}).get("holder"), sid_h, "asked, not yet taken")

    a.ok("unlock", session=h, name=name)  # the holder lets go (it still held: no force)
    t2 = a.ok_of(pending, timeout=60, what=" (the waiting lock)")["token"]
    assert t2 > t1, ("the waiter's token is not above the holder's", t1, t2)
    li = _lock_info(servers, name)
    eq((li["holder"], li["token"], li["waiters"]), (sid_w, t2, []),
       "LOCK.INFO: the waiter holds with the token it was told")
    a.err("fence.check", "STALE", name=name, token=t1)
    a.ok("fence.check", name=name, token=t2)
    a.err("revoke", "NOTHOLDER", name="rv/free", deadline_ms=1000, reason="x")
    a.ok("unlock", session=w, name=name)
    for s in (h, w):
        a.ok("session.close", session=s)
    eq(len(_revoke_events(a, h)), 1, "one revoke event: one request")
    eq(_revoke_events(a, w), [], "no revoke event for the waiter's grant")


scenario_revoke_holder_lets_go.timeout = 120


def scenario_revoke_deadline_across_leader_kill(ctx):
    """A holder that ignores a revoke loses the grant at the deadline, as an expiry: the
    request is made before the holder registers on_revoke (the client reads from the grant
    on, so it still hears it, after the reply to on_revoke), the leader is kill -9'd between
    the request and its deadline, and the new leader applies the replicated deadline: the
    queued waiter is granted once (the survivors applied exactly two grants) with a larger
    token, the old token is refused by FENCE.CHECK and by a fenced write, the holder's unlock
    finds nothing to release, and its session lives on. Proves: the deadline survives a
    fail-over and the fence holds across a forced release."""
    deadline_ms = 8000
    servers, leader = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    h, sid_h = _sid(a.ok("session.open", ttl=30))
    w, sid_w = _sid(a.ok("session.open", ttl=30))
    name = "rv/batch"
    t1 = a.ok("lock", session=h, name=name, wait=5)["token"]
    a.ok("put", key="rv/out", value="old", session=h, fence=[name, t1])
    pending = a.send("lock", session=w, name=name, wait=120)
    wait_until(lambda: (_lock_info(servers, name) or {}).get("waiters") == [sid_w], timeout=15,
               interval=0.05, what="the waiter queued on the servers")
    eq(a.ok("revoke", name=name, deadline_ms=deadline_ms, reason="drain")["token"], t1,
       "revoke answers the holder's token")
    # the revoke is applied on the leader: kill it now, well inside the deadline
    survivors = [s for s in servers if s is not leader]
    leader.kill9()
    reg = a.send("on_revoke", session=h, name=name, token=t1)
    a.ok_of(reg, timeout=60, what=" (on_revoke)")
    ev = a.wait_event(lambda e: e.get("event") == "revoke" and e.get("session") == h, 60,
                      "the holder's revoke event (asked before it registered)")
    _check_revoke_event(ev, h, name, t1, deadline_ms, "drain")
    assert a.before(reg, ev), "the revoke event came before the reply to on_revoke"

    # the holder ignores it; the new leader releases the grant at the deadline
    t2 = a.ok_of(pending, timeout=120, what=" (the waiting lock)")["token"]
    assert t2 > t1, ("the waiter's token is not above the holder's", t1, t2)
    new = leader_of(survivors)
    with conn(new) as c:
        li = as_map(c.call("LOCK.INFO", name))
    eq((li["holder"], li["token"], li["waiters"]), (sid_w, t2, []),
       "LOCK.INFO on the new leader: the waiter holds with the token it was told")
    a.err("fence.check", "STALE", name=name, token=t1)
    a.err("put", "STALE", key="rv/out", value="late", fence=[name, t1])
    a.ok("put", key="rv/out", value="new", session=w, fence=[name, t2])
    eq(kv(servers, "rv/out")["value"], b"new", "the old holder's late write was refused")
    a.err("unlock", "NOTHOLDER", session=h, name=name)
    r = a.ok("session.safe", session=h)
    assert r["lost"] is False, ("the revoked holder's session lives on", r)
    assert not _nosession(servers, sid_h), "the servers kept the revoked holder's session"
    wait_until(lambda: min(grants(s) for s in survivors) >= 2, timeout=15, interval=0.05,
               what="both survivors applied the second grant")
    eq([grants(s) for s in survivors], [2, 2], "exactly two grants: none repeated")
    a.ok("unlock", session=w, name=name)
    for s in (h, w):
        a.ok("session.close", session=s)
    eq(len(_revoke_events(a, h)), 1, "one revoke event: one request, across the fail-over")


scenario_revoke_deadline_across_leader_kill.timeout = 180


# ---- NOTIFY, INCR, weighted permits ----

def _waiter_events(a, session):
    return a.events_of(lambda e: e.get("event") == "waiter" and e.get("session") == session)


def _sem_info(servers, name):
    r = call_leader(servers, "SEM.INFO", name)
    if isinstance(r, RespError):
        raise AssertionError("SEM.INFO %s -> -%s" % (name, r.text))
    return None if r is None else as_map(r)


def scenario_notify_holder_hears_waiters(ctx):
    """LOCK ... NOTIFY: a holder registered with on_waiter hears each session that queued
    behind its grant with notify (name, the holder's token, the waiter's sid, its wait),
    once each, in queue order, after the reply to on_waiter, also one that queued before the
    registration (the client reads from the grant on); a waiter that did not ask for notify
    is never told of, and notify changes no order: the first waiter is granted next, with a
    larger token. Proves: the client sends NOTIFY and hands the holder the server's notice."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    h, _ = _sid(a.ok("session.open", ttl=15))
    q, sid_q = _sid(a.ok("session.open", ttl=15))
    l1, sid_l1 = _sid(a.ok("session.open", ttl=15))
    l2, sid_l2 = _sid(a.ok("session.open", ttl=15))
    name = "nt/job"
    t1 = a.ok("lock", session=h, name=name, wait=5)["token"]
    queued, pending = [], {}
    for s, sid, notify in ((q, sid_q, False), (l1, sid_l1, True)):
        pending[s] = a.send("lock", session=s, name=name, wait=60, notify=notify)
        queued.append(sid)
        wait_until(lambda: (_lock_info(servers, name) or {}).get("waiters") == queued,
                   timeout=15, interval=0.05, what="the waiters queued on the servers")
    reg = a.send("on_waiter", session=h, name=name, token=t1)
    a.ok_of(reg, what=" (on_waiter)")
    pending[l2] = a.send("lock", session=l2, name=name, wait=60, notify=True)
    queued.append(sid_l2)
    wait_until(lambda: (_lock_info(servers, name) or {}).get("waiters") == queued,
               timeout=15, interval=0.05, what="the third waiter queued on the servers")
    wait_until(lambda: len(_waiter_events(a, h)) >= 2, timeout=30, interval=0.05,
               what="the holder told of both notifying waiters")
    evs = _waiter_events(a, h)
    eq([(e.get("name"), e.get("token"), e.get("sid")) for e in evs],
       [(name, t1, sid_l1), (name, t1, sid_l2)],
       "the waiter events: name, the holder's token, the notifying waiters in queue order")
    for e in evs:
        assert 0 < (e.get("wait_ms") or 0) <= 60000, ("wait_ms as the waiter asked", e)
        assert a.before(reg, e), "a waiter event came before the reply to on_waiter"

    a.ok("unlock", session=h, name=name)
    tq = a.ok_of(pending[q], timeout=60, what=" (the first waiter)")["token"]
    assert tq > t1, ("the first waiter's token is not above the holder's", t1, tq)
    a.ok("unlock", session=q, name=name)
    t_l1 = a.ok_of(pending[l1], timeout=60, what=" (the second waiter)")["token"]
    a.ok("unlock", session=l1, name=name)
    t_l2 = a.ok_of(pending[l2], timeout=60, what=" (the third waiter)")["token"]
    assert t1 < tq < t_l1 < t_l2, ("FIFO with rising tokens", t1, tq, t_l1, t_l2)
    a.ok("unlock", session=l2, name=name)
    for s in (h, q, l1, l2):
        a.ok("session.close", session=s)
    eq(len(_waiter_events(a, h)), 2, "two waiter events: one per notifying waiter")
    eq([e for e in a.events_of(lambda e: e.get("event") == "waiter") if e.get("session") != h],
       [], "no waiter event for a grant nobody registered")


scenario_notify_holder_hears_waiters.timeout = 150


def scenario_incr_counter(ctx):
    """INCR: an absent key counts from 0, `by` is signed, the answer is the new value; through
    a session and fenced with the holder's token it applies (exactly once: the servers hold the
    sum of the increments answered), a stale token is STALE and changes nothing, a value that is
    no integer is refused and changes nothing; after a kill -9 of the leader the counter goes
    on from the same value. Proves: the client sends INCR BY n with its fence and reads the
    signed answer."""
    servers, leader = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    s, _ = _sid(a.ok("session.open", ttl=30))
    eq(a.ok("incr", key="ctr/a", by=1)["value"], 1, "incr of an absent key")
    eq(a.ok("incr", key="ctr/a", by=-5)["value"], -4, "incr by -5")
    eq(a.ok("incr", key="ctr/a")["value"], -3, "incr without by adds 1")
    t = a.ok("lock", session=s, name="ctr/lock", wait=5)["token"]
    eq(a.ok("incr", key="ctr/a", by=10, session=s, fence=["ctr/lock", t])["value"], 7,
       "a fenced incr through the session")
    a.err("incr", "STALE", key="ctr/a", by=100, fence=["ctr/lock", t + 1000])
    eq(kv(servers, "ctr/a")["value"], b"7", "the stale incr changed nothing")
    a.ok("put", key="ctr/text", value="abc")
    a.err("incr", ("OTHER",), key="ctr/text", by=1)
    eq(kv(servers, "ctr/text")["value"], b"abc", "the refused incr changed nothing")

    survivors = [x for x in servers if x is not leader]
    leader.kill9()
    eq(a.ok("incr", key="ctr/a", by=2, session=s, timeout=60)["value"], 9,
       "the incr after the fail-over goes on from the same value")
    eq(kv(survivors, "ctr/a")["value"], b"9", "the new leader holds the sum: each incr once")
    a.ok("unlock", session=s, name="ctr/lock")
    a.ok("session.close", session=s)


scenario_incr_counter.timeout = 150


def scenario_weighted_permits_fifo(ctx):
    """SEM.ACQUIRE ... PERMITS k: one acquisition of k permits with one token; a try for more
    than are free is BUSY; a queued request for k is not overtaken by a later one for fewer
    (a try for the one free permit is BUSY while it waits); when the holder releases, the
    queued request is granted whole with a larger token; SEM.INFO shows each holder's permits.
    Proves: the client sends PERMITS k and keeps FIFO semantics."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    s1, sid1 = _sid(a.ok("session.open", ttl=15))
    s2, sid2 = _sid(a.ok("session.open", ttl=15))
    s3, sid3 = _sid(a.ok("session.open", ttl=15))
    name = "ws/pool"
    p1 = a.ok("sem.acquire", session=s1, name=name, limit=3, permits=2, wait=5)["token"]
    si = _sem_info(servers, name)
    eq([(as_map(x)["sid"], as_map(x)["permits"]) for x in si["holders"]], [(sid1, 2)],
       "SEM.INFO: one acquisition of 2 permits")
    a.err("sem.acquire", "BUSY", session=s2, name=name, limit=3, permits=2, wait=0)
    pending = a.send("sem.acquire", session=s2, name=name, limit=3, permits=2, wait=60)
    wait_until(lambda: (_sem_info(servers, name) or {}).get("waiters") == [sid2], timeout=15,
               interval=0.05, what="the request for 2 permits queued on the servers")
    a.err("sem.acquire", "BUSY", session=s3, name=name, limit=3, wait=0)  # no overtaking
    eq(_sem_info(servers, name).get("wanted"), [2], "SEM.INFO: the waiter wants 2 permits")
    a.ok("sem.release", session=s1, name=name)
    p2 = a.ok_of(pending, timeout=60, what=" (the queued request for 2)")["token"]
    assert p2 > p1, ("the queued request's token is not above the first", p1, p2)
    p3 = a.ok("sem.acquire", session=s3, name=name, limit=3, wait=5)["token"]
    si = _sem_info(servers, name)
    eq(sorted((as_map(x)["sid"], as_map(x)["permits"]) for x in si["holders"]),
       sorted([(sid2, 2), (sid3, 1)]), "SEM.INFO: 2 + 1 permits of 3")
    a.err("fence.check", "STALE", name=name, token=p1)
    a.ok("fence.check", name=name, token=p2)
    a.ok("fence.check", name=name, token=p3)
    for x in (s2, s3):
        a.ok("sem.release", session=x, name=name)
    for x in (s1, s2, s3):
        a.ok("session.close", session=x)


scenario_weighted_permits_fifo.timeout = 120


# ---- latches, barriers, reentrancy, lock values, max hold, history ----

def _latch_info(servers, name):
    r = call_leader(servers, "LATCH.INFO", name)
    if isinstance(r, RespError):
        raise AssertionError("LATCH.INFO %s -> -%s" % (name, r.text))
    return None if r is None else as_map(r)


def scenario_latch_released_at_zero(ctx):
    """A latch of 3 joined by 3 sessions: each count-down answers the counts left (a joined
    session's second one changes nothing), a waiter parked before the count-downs stays
    parked and a wait of 0 is TIMEOUT while one count is left, and the waiter is answered
    once the last count-down made it zero; LATCH.INFO as the client reports it; then the
    latch is deleted and a wait on it is an error. Proves: the client sends WAIT, reads nil
    as not yet (never as open), and the remaining counts as the servers hold them."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    ss = [_sid(a.ok("session.open", ttl=30)) for _ in range(3)]
    name = "lt/zero"
    a.ok("latch.create", name=name, count=3)
    a.ok("latch.create", name=name, count=3)  # the same count again: no change
    a.err("latch.create", "OTHER", name=name, count=4)
    for s, _ in ss:
        a.ok("latch.join", session=s, name=name)
    pending = a.send("latch.wait", name=name, wait=60)
    left = [a.ok("latch.countdown", session=s, name=name)["remaining"] for s, _ in ss[:2]]
    eq(left, [2, 1], "the counts left after each count-down")
    eq(a.ok("latch.countdown", session=ss[0][0], name=name)["remaining"], 1,
       "a joined session counts down once")
    a.err("latch.wait", "TIMEOUT", name=name, wait=0)
    li = a.ok("latch.info", name=name)
    eq((li["type"], li["state"], li["count"], li["remaining"], li["broken_sid"]),
       ("latch", "counting", 3, 1, 0), "latch.info with one count left")
    srv = _latch_info(servers, name)
    eq((text(srv["state"]), srv["remaining"]), ("counting", 1), "LATCH.INFO on the servers")
    assert not a.answered(pending), ("the waiter was answered before zero", a.reply(pending))
    eq(a.ok("latch.countdown", session=ss[2][0], name=name)["remaining"], 0,
       "the last count-down")
    a.ok_of(pending, timeout=30, what=" (the parked latch.wait)")
    a.ok("latch.wait", name=name, wait=0)
    a.ok("latch.wait", name=name, wait=5)
    li = a.ok("latch.info", name=name)
    eq((li["state"], li["remaining"]), ("zero", 0), "latch.info at zero")
    eq(a.ok("latch.delete", name=name)["deleted"], True, "latch.delete of the latch")
    eq(a.ok("latch.delete", name=name)["deleted"], False, "latch.delete again")
    a.err("latch.info", "NOTFOUND", name=name)
    a.err("latch.wait", "OTHER", name=name, wait=0)
    for s, _ in ss:
        a.ok("session.close", session=s)


scenario_latch_released_at_zero.timeout = 120


def scenario_latch_broken_by_closed_session(ctx):
    """A latch of 2 joined by two sessions; one counts down, a waiter parks, and the other
    joined session is closed before it counted down: the waiter gets BROKEN, and so does every
    later wait, a create of it and a count-down, until it is deleted (then it is made afresh
    and counts again). Proves: the client hands the servers' -BROKEN over as its typed error,
    never as a timeout, a success or a generic error."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    s1, _ = _sid(a.ok("session.open", ttl=30))
    s2, sid2 = _sid(a.ok("session.open", ttl=30))
    s3, _ = _sid(a.ok("session.open", ttl=30))
    name = "lt/broken"
    a.ok("latch.create", name=name, count=2)
    a.ok("latch.join", session=s1, name=name)
    a.ok("latch.join", session=s2, name=name)
    eq(a.ok("latch.countdown", session=s1, name=name)["remaining"], 1, "one count left")
    pending = a.send("latch.wait", name=name, wait=60)
    a.ok("session.close", session=s2)
    r = a.reply(pending, timeout=30)
    eq((r.get("ok"), r.get("error")), (False, "BROKEN"), "the parked waiter: %r" % (r,))
    a.err("latch.wait", "BROKEN", name=name, wait=0)
    a.err("latch.wait", "BROKEN", name=name, wait=5)
    a.err("latch.create", "BROKEN", name=name, count=2)
    a.err("latch.countdown", "BROKEN", session=s3, name=name)
    li = a.ok("latch.info", name=name)
    eq((li["state"], li["broken_sid"]), ("broken", sid2), "latch.info names the session")
    eq(_latch_info(servers, name)["broken_sid"], sid2, "LATCH.INFO on the servers")
    eq(a.ok("latch.delete", name=name)["deleted"], True, "a broken latch is deleted")
    a.ok("latch.create", name=name, count=1)
    a.err("latch.wait", "TIMEOUT", name=name, wait=0)
    eq(a.ok("latch.countdown", session=s3, name=name)["remaining"], 0, "the new latch counts")
    a.ok("latch.wait", name=name, wait=0)
    a.ok("latch.delete", name=name)
    for s in (s1, s3):
        a.ok("session.close", session=s)


scenario_latch_broken_by_closed_session.timeout = 120


def scenario_barrier_of_three_agents(ctx):
    """A double barrier of 3 entered by three agents (processes) of the client: a try (wait 0)
    is TIMEOUT and stays inside, two waiting enters are not answered while the servers count
    two inside, the third enter releases all three; a newcomer to the full barrier is refused;
    two waiting leaves are answered once the third leaves, and then the barrier is gone.
    Proves: the client's enter and leave wait on the servers and read nil as not yet."""
    servers, _ = plain_cluster(ctx)
    A, B, C = (ctx.agent(servers, label=x, timeout=10) for x in "ABC")
    sa, sid_a = _sid(A.ok("session.open", ttl=30))
    sb, sid_b = _sid(B.ok("session.open", ttl=30))
    sc, sid_c = _sid(C.ok("session.open", ttl=30))
    name = "br/three"
    A.err("barrier.enter", "TIMEOUT", session=sa, name=name, count=3, wait=0)
    li = _latch_info(servers, name)
    eq((text(li["type"]), text(li["state"]), li["remaining"], li["joiners"]),
       ("barrier", "filling", 2, [sid_a]), "the try stayed inside")
    pa = A.send("barrier.enter", session=sa, name=name, count=3, wait=60)
    pb = B.send("barrier.enter", session=sb, name=name, count=3, wait=60)
    wait_until(lambda: (_latch_info(servers, name) or {}).get("remaining") == 1, timeout=15,
               interval=0.05, what="two sessions inside on the servers")
    assert not A.answered(pa) and not B.answered(pb), "an enter answered before the third came"
    C.ok("barrier.enter", session=sc, name=name, count=3, wait=60)
    A.ok_of(pa, timeout=30, what=" (A's enter)")
    B.ok_of(pb, timeout=30, what=" (B's enter)")
    li = C.ok("latch.info", name=name)
    eq((li["type"], li["state"], li["count"], li["remaining"]), ("barrier", "full", 3, 3),
       "latch.info of the full barrier")
    sx, _ = _sid(C.ok("session.open", ttl=30))
    C.err("barrier.enter", "OTHER", session=sx, name=name, count=3, wait=0)
    la = A.send("barrier.leave", session=sa, name=name, wait=60)
    lb = B.send("barrier.leave", session=sb, name=name, wait=60)
    wait_until(lambda: (_latch_info(servers, name) or {}).get("remaining") == 1, timeout=15,
               interval=0.05, what="two sessions left on the servers")
    assert not A.answered(la) and not B.answered(lb), "a leave answered before all had left"
    C.ok("barrier.leave", session=sc, name=name, wait=60)
    A.ok_of(la, timeout=30, what=" (A's leave)")
    B.ok_of(lb, timeout=30, what=" (B's leave)")
    eq(_latch_info(servers, name), None, "the barrier is gone once all left")
    for ag, s in ((A, sa), (B, sb), (C, sc), (C, sx)):
        ag.ok("session.close", session=s)


scenario_barrier_of_three_agents.timeout = 150


def scenario_reentrant_count_same_token(ctx):
    """A reentrant session (MAXCOUNT 3) locks one name three times: the same token each time,
    a count of 3 in LOCK.INFO and in the client's lock.info; a fourth is refused and changes
    nothing; unlocks count down, the lock stays held (a waiter stays queued) until the last,
    and then the waiter is granted with a larger token. A session opened without reentrant
    re-locks to the same token without a count, and one unlock releases. Proves: the client
    sends REENTRANT and MAXCOUNT and reports the hold count."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    r, sid_r = _sid(a.ok("session.open", ttl=30, reentrant=True, max_count=3))
    n, sid_n = _sid(a.ok("session.open", ttl=30))
    w, sid_w = _sid(a.ok("session.open", ttl=30))
    name = "re/job"
    toks = [a.ok("lock", session=r, name=name, wait=5)["token"] for _ in range(3)]
    eq(len(set(toks)), 1, "the same token for every hold: %r" % (toks,))
    li = a.ok("lock.info", name=name)
    eq((li["holder"], li["token"], li["count"]), (sid_r, toks[0], 3), "lock.info: 3 holds")
    eq(_lock_info(servers, name).get("count"), 3, "LOCK.INFO count")
    a.err("lock", "OTHER", session=r, name=name, wait=5)  # over MAXCOUNT
    eq(_lock_info(servers, name).get("count"), 3, "the refused lock changed nothing")
    pending = a.send("lock", session=w, name=name, wait=60)
    wait_until(lambda: (_lock_info(servers, name) or {}).get("waiters") == [sid_w], timeout=15,
               interval=0.05, what="the waiter queued on the servers")
    for left in (2, 1):
        a.ok("unlock", session=r, name=name)
        li = _lock_info(servers, name)
        eq((li["holder"], li.get("count")), (sid_r, left), "an unlock counts down")
    eq(a.ok("lock.info", name=name)["count"], 1, "lock.info: one hold left")
    assert not a.answered(pending), ("granted while the holder still held", a.reply(pending))
    a.ok("unlock", session=r, name=name)
    tw = a.ok_of(pending, timeout=30, what=" (the waiter)")["token"]
    assert tw > toks[0], ("the waiter's token is not above the holder's", toks[0], tw)
    a.ok("unlock", session=w, name=name)
    t1 = a.ok("lock", session=n, name=name, wait=5)["token"]
    eq(a.ok("lock", session=n, name=name, wait=5)["token"], t1, "a non-reentrant re-lock")
    li = _lock_info(servers, name)
    assert "count" not in li, ("a non-reentrant holder has no count on the servers", li)
    eq((a.ok("lock.info", name=name)["holder"], a.ok("lock.info", name=name)["count"]),
       (sid_n, 1), "lock.info: a non-reentrant holder holds once")
    a.ok("unlock", session=n, name=name)
    eq(_lock_info(servers, name), None, "one unlock released the non-reentrant hold")
    a.err("lock.info", "NOTFOUND", name=name)
    for s in (r, n, w):
        a.ok("session.close", session=s)


scenario_reentrant_count_same_token.timeout = 120


HISTORY_KEYS = ("session", "session_name", "value", "token", "ended_by", "granted_ms",
                "ended_ms", "held_ms", "waited_ms", "waiters_total")


def _history(servers, name, *args):
    """LOCK.HISTORY on the leader, each entry in the agent protocol's shape."""
    r = call_leader(servers, "LOCK.HISTORY", name, *args)
    if isinstance(r, RespError):
        raise AssertionError("LOCK.HISTORY %s -> -%s" % (name, r.text))
    out = []
    for e in r:
        m = as_map(e)
        d = {k: text(m[k]) for k in HISTORY_KEYS}
        d["waiters"] = [{"session": as_map(x)["session"], "waited_ms": as_map(x)["waited_ms"]}
                        for x in m["waiters"]]
        out.append(d)
    return out


def scenario_lock_value_in_info_and_history(ctx):
    """Three sessions with names take one lock in turn, each with a VALUE: lock.info shows the
    holder's value and the transitions (0, then 1, 2); lock.history gives the grants newest
    first with sessions, names, values, tokens, how each ended and the waiters queued at each
    grant, field for field as LOCK.HISTORY answers; COUNT and BEFORE page; a range the
    servers dropped is COMPACTED. Proves: the client sends VALUE and reads the lock's
    metadata and history."""
    servers, _ = plain_cluster(ctx, extra=["--history-per-lock", "3"])
    a = ctx.agent(servers, timeout=10)
    h, sid_h = _sid(a.ok("session.open", ttl=30, name="holder-a"))
    w1, sid_w1 = _sid(a.ok("session.open", ttl=30, name="waiter-1"))
    w2, sid_w2 = _sid(a.ok("session.open", ttl=30, name="waiter-2"))
    name = "lv/job"
    t1 = a.ok("lock", session=h, name=name, wait=5, value="host-a/job-7")["token"]
    li = a.ok("lock.info", name=name)
    eq((li["holder"], li["token"], li["value"], li["transitions"], li["max_hold_ms"]),
       (sid_h, t1, "host-a/job-7", 0, 0), "lock.info of the first grant")
    eq(text(_lock_info(servers, name)["value"]), "host-a/job-7", "LOCK.INFO value")
    queued, pending = [], []
    for s, sid, v in ((w1, sid_w1, "w-1"), (w2, sid_w2, "w-2")):
        pending.append(a.send("lock", session=s, name=name, wait=60, value=v))
        queued.append(sid)
        wait_until(lambda: (_lock_info(servers, name) or {}).get("waiters") == queued,
                   timeout=15, interval=0.05, what="the waiters queued on the servers")
    a.ok("unlock", session=h, name=name)
    t2 = a.ok_of(pending[0], timeout=30, what=" (waiter-1)")["token"]
    li = a.ok("lock.info", name=name)
    eq((li["holder"], li["value"], li["transitions"]), (sid_w1, "w-1", 1),
       "lock.info after the hand-over")
    a.ok("unlock", session=w1, name=name)
    t3 = a.ok_of(pending[1], timeout=30, what=" (waiter-2)")["token"]
    eq((a.ok("lock.info", name=name)["value"], a.ok("lock.info", name=name)["transitions"]),
       ("w-2", 2), "lock.info of the third grant")
    a.ok("unlock", session=w2, name=name)

    hist = a.ok("lock.history", name=name)["entries"]
    eq(hist, _history(servers, name), "lock.history is LOCK.HISTORY, field for field")
    eq([(e["token"], e["session"], e["session_name"], e["ended_by"]) for e in hist],
       [(t3, sid_w2, "waiter-2", "unlock"), (t2, sid_w1, "waiter-1", "unlock"),
        (t1, sid_h, "holder-a", "unlock")], "the grants, newest first")
    eq([(e["waiters_total"], [x["session"] for x in e["waiters"]]) for e in hist],
       [(0, []), (1, [sid_w2]), (0, [])], "the waiters queued at each grant")
    eq([e["token"] for e in a.ok("lock.history", name=name, count=1)["entries"]], [t3],
       "COUNT 1")
    eq([e["token"] for e in a.ok("lock.history", name=name, before=t3)["entries"]],
       [t2, t1], "BEFORE the newest")
    for _ in range(2):  # two more grants push t1 and t2 out (3 kept per lock)
        a.ok("lock", session=h, name=name, wait=5)
        a.ok("unlock", session=h, name=name)
    eq(len(a.ok("lock.history", name=name)["entries"]), 3, "3 grants kept")
    a.err("lock.history", "COMPACTED", name=name, before=t3)
    for s in (h, w1, w2):
        a.ok("session.close", session=s)


scenario_lock_value_in_info_and_history.timeout = 120


def scenario_maxhold_ends_grant(ctx):
    """A lock taken with MAXHOLD 2 s (and a value) while its session lives on: lock.info shows
    the max hold, a fenced write by the holder applies; the servers end the grant when the
    max hold passes and the queued waiter is granted with a larger token; the holder's next
    fenced write is STALE and changes nothing, its session is not lost, and the history says
    how the grant ended, as the servers do. Proves: the client sends MAXHOLD and the grant
    ends on the servers without the client's help."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    h, _ = _sid(a.ok("session.open", ttl=30))
    w, sid_w = _sid(a.ok("session.open", ttl=30))
    name = "mh/job"
    t1 = a.ok("lock", session=h, name=name, wait=5, value="bounded", max_hold=2.0)["token"]
    li = a.ok("lock.info", name=name)
    eq((li["token"], li["value"], li["max_hold_ms"]), (t1, "bounded", 2000),
       "lock.info shows the max hold")
    eq(_lock_info(servers, name)["max_hold_ms"], 2000, "LOCK.INFO max_hold_ms")
    a.ok("put", key="mh/data", value="first", session=h, fence=[name, t1])
    pending = a.send("lock", session=w, name=name, wait=60)
    t2 = a.ok_of(pending, timeout=60, what=" (the waiter, after the max hold)")["token"]
    assert t2 > t1, ("the waiter's token is not above the bounded grant's", t1, t2)
    a.err("put", "STALE", key="mh/data", value="late", session=h, fence=[name, t1])
    a.err("fence.check", "STALE", name=name, token=t1)
    eq(kv(servers, "mh/data")["value"], b"first", "the late write changed nothing")
    eq(a.ok("session.safe", session=h)["lost"], False, "the holder's session lives on")
    eq(a.ok("lock.info", name=name)["holder"], sid_w, "the waiter holds the lock")
    hist = a.ok("lock.history", name=name)["entries"]
    eq(hist, _history(servers, name), "lock.history is LOCK.HISTORY, field for field")
    eq([e["token"] for e in hist], [t2, t1], "two grants")
    assert hist[1]["ended_by"] not in ("", "unlock"), ("the bounded grant's end", hist[1])
    a.ok("unlock", session=w, name=name)
    for s in (h, w):
        a.ok("session.close", session=s)


scenario_maxhold_ends_grant.timeout = 120


# ---- TXN: compares, then all of one branch's writes ----

def _txn(a, compares, then, els=None, **kw):
    """The `txn` request's arguments (`if` and `else` are Python words)."""
    args = {"if": compares, "then": then}
    if els is not None:
        args["else"] = els
    args.update(kw)
    return args


def _announced(servers):
    """Every member's first announces (client address, then HTTP URL) applied: each takes a
    revision, a second or so after the cluster's first leader, and a scenario that checks that
    the revision does not move must not count them (cluster.wait_announced)."""
    ms = [as_map(x) for x in call_leader(servers, "CLUSTER.MEMBERS")]
    return len([m for m in ms if text(m.get("client_address") or b"") and
                text(m.get("http_url") or b"")]) == len(servers)


def _revision(servers):
    """The store's revision on the leader, once the members' announces are in."""
    wait_until(lambda: _announced(servers), timeout=20, interval=0.1, what="members announced")
    r = call_leader(servers, "CLUSTER.INFO")
    if isinstance(r, RespError):
        raise AssertionError("CLUSTER.INFO -> -%s" % r.text)
    return as_map(r)["revision"]


def scenario_txn_branches_and_results(ctx):
    """TXNs whose compares (rev, value, exists, missing, holds, token) all hold run THEN, one
    that fails runs ELSE; each reply names the branch, the store's revision after it and each
    op's result (a put's revision, a del's count, an incr's new value), field for field as the
    servers hold the keys; the ops of one TXN take consecutive revisions, a del of an absent
    key none, and a branch that changes nothing leaves the revision where it was. Proves: the
    client sends every compare and op as given and reads the typed result."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    s, sid = _sid(a.ok("session.open", ttl=30))
    r1 = a.ok("put", key="tx/cfg", value="v1", session=s)["rev"]
    a.ok("put", key="tx/gone", value="x")
    t = a.ok("lock", session=s, name="tx/L", wait=5)["token"]

    r = a.ok("txn", **_txn(a, [["rev", "tx/cfg", "=", r1], ["rev", "tx/cfg", ">", 0],
                              ["rev", "tx/cfg", "<", r1 + 1], ["rev", "tx/cfg", "!=", 0],
                              ["value", "tx/cfg", "=", "v1"], ["value", "tx/cfg", "!=", "v0"],
                              ["exists", "tx/cfg"], ["missing", "tx/none"]],
                           [["put", "tx/cfg", "v2"], ["incr", "tx/n", 5], ["del", "tx/gone"]],
                           [["put", "tx/log", "else"]], session=s))
    p = (r["results"] or [0])[0]
    eq((r["succeeded"], r["results"], r["rev"]), (True, [p, 5, 1], p + 2),
       "THEN ran: the put's revision, the new count, one deleted; consecutive revisions")
    cfg, n = kv(servers, "tx/cfg"), kv(servers, "tx/n")
    eq((cfg["value"], cfg["mod_rev"], n["value"], n["mod_rev"]), (b"v2", p, b"5", p + 1),
       "the keys as the servers hold them")
    eq((kv(servers, "tx/gone"), kv(servers, "tx/log")), (None, None),
       "the del applied, the ELSE branch did not")

    r = a.ok("txn", **_txn(a, [["holds", "tx/L", sid], ["token", "tx/L", "=", t],
                              ["token", "tx/L", "!=", t + 1]], [["incr", "tx/n", 1]]))
    eq((r["succeeded"], r["results"]), (True, [6]), "the ownership compares hold")
    eq(r["rev"], kv(servers, "tx/n")["mod_rev"], "the revision is the incr's")

    r = a.ok("txn", **_txn(a, [["rev", "tx/cfg", "=", r1]], [["put", "tx/cfg", "v3"]],
                           [["put", "tx/log", "lost"], ["incr", "tx/n", -2],
                            ["del", "tx/none"]], session=s))
    q = (r["results"] or [0])[0]
    eq((r["succeeded"], r["results"], r["rev"]), (False, [q, 4, 0], q + 1),
       "a stale rev runs ELSE: the put's revision, the new count, nothing deleted")
    eq((kv(servers, "tx/cfg")["value"], kv(servers, "tx/log")["value"],
        kv(servers, "tx/n")["value"]), (b"v2", b"lost", b"4"), "only ELSE's writes applied")

    for compares in ([["value", "tx/cfg", "=", "v1"]], [["missing", "tx/cfg"]],
                     [["exists", "tx/none"]], [["holds", "tx/L", sid + 1000]],
                     [["token", "tx/L", "=", t + 1]], [["rev", "tx/cfg", "<", 1]]):
        before = _revision(servers)
        r = a.ok("txn", **_txn(a, compares, [["put", "tx/cfg", "never"]], session=s))
        eq((r["succeeded"], r["results"], r["rev"]), (False, [], before),
           "%r fails: ELSE without ops changes nothing" % (compares,))
    eq(kv(servers, "tx/cfg")["value"], b"v2", "no THEN of a failing compare applied")
    a.ok("unlock", session=s, name="tx/L")
    a.ok("session.close", session=s)


scenario_txn_branches_and_results.timeout = 120


def scenario_txn_stale_fence_changes_nothing(ctx):
    """A TXN fenced with a token the lock no longer holds (the lock went to another session)
    is STALE, through a session or not, and changes nothing although its compares hold; an
    ownership compare of the old holder (IF HOLDS) runs ELSE instead; fenced with the current
    token it applies. Proves: the client sends FENCE on the whole TXN and types the refusal."""
    servers, _ = plain_cluster(ctx)
    a = ctx.agent(servers, timeout=10)
    h, sid_h = _sid(a.ok("session.open", ttl=30))
    w, _ = _sid(a.ok("session.open", ttl=30))
    t1 = a.ok("lock", session=h, name="tx/f", wait=5)["token"]
    a.ok("txn", **_txn(a, [], [["put", "tx/data", "h"]], fence=["tx/f", t1], session=h))
    a.ok("unlock", session=h, name="tx/f")
    t2 = a.ok("lock", session=w, name="tx/f", wait=5)["token"]
    assert t2 > t1, (t1, t2)
    before, rev = kv(servers, "tx/data"), _revision(servers)
    for kw in ({"session": h}, {}):
        a.err("txn", "STALE", **_txn(a, [["exists", "tx/data"]],
                                     [["put", "tx/data", "late"], ["incr", "tx/cnt", 1]],
                                     [["put", "tx/data", "late-else"]],
                                     fence=["tx/f", t1], **kw))
    eq(kv(servers, "tx/data"), before, "the stale TXN changed nothing")
    eq(kv(servers, "tx/cnt"), None, "no op of it applied")
    eq(a.ok("session.safe", session=h)["lost"], False, "a STALE TXN does not end the session")
    r = a.ok("txn", **_txn(a, [["holds", "tx/f", sid_h]], [["put", "tx/data", "late"]],
                           session=h))
    eq((r["succeeded"], r["results"], r["rev"]), (False, [], rev),
       "IF HOLDS of the old holder: ELSE, nothing written")
    r = a.ok("txn", **_txn(a, [], [["put", "tx/data", "w"]], fence=["tx/f", t2], session=w))
    eq((r["succeeded"], [kv(servers, "tx/data")["mod_rev"]]), (True, r["results"]),
       "fenced with the current token it applies")
    eq(kv(servers, "tx/data")["value"], b"w", "the holder's write")
    a.ok("unlock", session=w, name="tx/f")
    for s in (h, w):
        a.ok("session.close", session=s)


scenario_txn_stale_fence_changes_nothing.timeout = 120


def scenario_txn_retry_answered_once(ctx):
    """A TXN through a session whose answers are lost (the leader's replies to the agent are
    dropped: it applies, the answer never arrives), the drop lifted while the client still
    resends: it succeeds once, with the first outcome: the key's version rose by exactly 1, the
    counter by exactly its increment, and the results and revision the client reports are the
    keys'. Proves: the client's TXN carries REQ and its resend is answered from the servers'
    cache, not applied twice."""
    servers, leader = plain_cluster(ctx)
    a = ctx.agent(servers, cgroup=True, timeout=60)  # retries outlast the drop by far
    s, _ = _sid(a.ok("session.open", ttl=60))
    a.ok("put", key="tx/v", value="0", session=s)
    before = kv(servers, "tx/v")
    drop = ReplyDrop(leader, a)
    ctx.defer(drop.lift)
    drop.start()
    pending = a.send("txn", **_txn(a, [["value", "tx/v", "=", "0"]],
                                   [["put", "tx/v", "1"], ["incr", "tx/c", 7]],
                                   [["incr", "tx/c", 100]], session=s))
    wait_until(lambda: kv(servers, "tx/v")["value"] == b"1", timeout=30, interval=0.05,
               what="the TXN applied on the servers")
    time.sleep(2.5)  # the client's resends run into the drop meanwhile (not a check)
    assert not a.answered(pending), ("answered while its answers were dropped",
                                     a.reply(pending))
    drop.lift()
    r = a.ok_of(pending, timeout=60, what=" (the session TXN)")
    v, c = kv(servers, "tx/v"), kv(servers, "tx/c")
    eq(v["version"], before["version"] + 1, "the key's version rose by exactly 1")
    eq(c["value"], b"7", "the counter counted once, by THEN")
    eq((r["succeeded"], r["results"], r["rev"]), (True, [v["mod_rev"], 7], c["mod_rev"]),
       "the first outcome: THEN, each op's result, the revision")
    eq(a.ok("session.safe", session=s)["lost"], False, "the session survived")
    a.ok("session.close", session=s)


scenario_txn_retry_answered_once.timeout = 150


def scenario_txn_invalid_refused(ctx):
    """On servers with --max-txn-ops 4, TXNs the servers refuse whole: more compares and ops
    than that (TOOLARGE), a key written twice in one branch, a relation VALUE does not take,
    and a branch whose last op cannot apply (an INCR of a value that is no counter) are each the
    typed error, and none changes a key or the store's revision; a TXN of 4 then applies. The
    failing op is the reply's field `op` (2), which each agent takes from its client's own type
    (C fl_txn_failed_op, Python TxnOpError.op, Go TxnOpError.Op, Java op(), Node op), never
    from the message; the other refusals carry none. Proves: the client types the servers' TXN
    refusals, names the op that failed, and never turns one into a partial success."""
    servers, _ = plain_cluster(ctx, extra=["--max-txn-ops", "4"])
    a = ctx.agent(servers, timeout=10)
    s, _ = _sid(a.ok("session.open", ttl=30))
    a.ok("put", key="tx/word", value="abc")
    before, rev = kv(servers, "tx/word"), _revision(servers)
    five = [["put", "tx/k%d" % i, "x"] for i in range(3)]
    a.err("txn", "TOOLARGE", **_txn(a, [["exists", "tx/word"]], five, [["del", "tx/word"]],
                                    session=s))
    r = a.err("txn", "OTHER", **_txn(a, [], [["put", "tx/k0", "1"], ["del", "tx/k0"]],
                                     session=s))
    eq(r.get("op"), None, "a key written twice names no op (the command is refused whole)")
    r = a.err("txn", "OTHER", **_txn(a, [["value", "tx/word", "<", "b"]],
                                     [["put", "tx/k0", "1"]], session=s))
    eq(r.get("op"), None, "a refused relation names no op")
    r = a.err("txn", "OTHER", **_txn(a, [], [["put", "tx/k0", "1"], ["incr", "tx/word", 1]],
                                     session=s))
    eq(r.get("op"), 2, "the client's typed error names the op that failed (%r)" % r)
    eq((kv(servers, "tx/word"), [kv(servers, "tx/k%d" % i) for i in range(3)]),
       (before, [None] * 3), "no refused TXN changed a key")
    eq(_revision(servers), rev, "no refused TXN took a revision")
    eq(a.ok("session.safe", session=s)["lost"], False, "the refusals did not end the session")
    r = a.ok("txn", **_txn(a, [["exists", "tx/word"]], five, session=s))
    eq((r["succeeded"], len(r["results"]), r["rev"]), (True, 3, rev + 3), "a TXN of 4 applies")
    a.ok("session.close", session=s)


scenario_txn_invalid_refused.timeout = 120


def discover():
    """The scenarios in file order: [(name, fn)]."""
    return [(n[len("scenario_"):], f) for n, f in globals().items()
            if n.startswith("scenario_") and callable(f)]
