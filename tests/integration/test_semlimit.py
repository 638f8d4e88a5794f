# SPDX-License-Identifier: Apache-2.0
"""An operator's semaphore limit as state (SEM.SETLIMIT name limit | RESET): it wins over the
acquirers' limit argument (clients still passing the old limit acquire up to the new one), is
shown by SEM.INFO (limit_set_by_operator), survives the semaphore being dropped and created
again, a kill -9 of the leader of 3 nodes and a restart from a snapshot, counts as a lock for
--max-locks, and is removed by RESET."""

from cluster import ready_leader, start_cluster
from helpers import eq, expect_err, expect_int, expect_nil, ok, open_session, wait_until
from resp import Conn
from test_wsem import checked, holds, sem_info

SNAP = ["--snapshot-threshold", "16", "--snapshot-trailing", "4"]


def acquire_all(c, name, limit, n):
    """n sessions each SEM.ACQUIRE name with `limit` (try only): their replies."""
    return [c.call("SEM.ACQUIRE", name, open_session(c), limit) for _ in range(n)]


def test_old_limit_clients_acquire_up_to_the_operators_limit(ctx):
    c = ctx.conn()
    got = acquire_all(c, "pool", 3, 2)
    for r in got:
        expect_int(r)
    ok(c.call("SEM.SETLIMIT", "pool", 5))
    # still passing 3 (the limit they were configured with): accepted, up to 5 in all
    for r in acquire_all(c, "pool", 3, 3):
        expect_int(r, "an acquirer with the old limit under the operator's 5")
    expect_nil(c.call("SEM.ACQUIRE", "pool", open_session(c), 3), "the 6th of 5")
    info = checked(sem_info(c, "pool"))
    eq((info["limit"], info["permits"], info["limit_set_by_operator"]), (5, 5, 1))
    # PERMITS is checked against the operator's limit, not the argument
    expect_int(c.call("SEM.ACQUIRE", "big", open_session(c), 9, "PERMITS", 1))
    ok(c.call("SEM.SETLIMIT", "big", 12))
    expect_int(c.call("SEM.ACQUIRE", "big", open_session(c), 9, "PERMITS", 11))
    expect_err(c.call("SEM.ACQUIRE", "big", open_session(c), 9, "PERMITS", 13), "ERR")


def test_the_override_survives_the_semaphore_being_dropped_and_reset_removes_it(ctx):
    c = ctx.conn()
    a, b = open_session(c), open_session(c)
    expect_int(c.call("SEM.ACQUIRE", "early", a, 7))
    ok(c.call("SEM.SETLIMIT", "early", 2))
    ok(c.call("SEM.RELEASE", "early", a))  # dropped: nothing holds or waits
    expect_int(c.call("SEM.ACQUIRE", "early", b, 4, "PERMITS", 2), "4 ignored: 2 rules")
    expect_nil(c.call("SEM.ACQUIRE", "early", a, 4), "the override holds after the drop")
    eq(sem_info(c, "early")["limit"], 2)
    ok(c.call("SEM.RELEASE", "early", b))
    ok(c.call("SEM.SETLIMIT", "early", 2), "set while the semaphore does not exist")
    info = sem_info(c, "early")
    eq((info["limit"], info["permits"], info["limit_set_by_operator"]), (2, 0, 1))
    expect_int(c.call("SEM.ACQUIRE", "early", b, 4, "PERMITS", 2))
    eq(c.call("SEM.SETLIMIT", "early", "RESET"), 1)
    eq(c.call("SEM.SETLIMIT", "early", "reset"), 0, "none left")
    eq(sem_info(c, "early")["limit_set_by_operator"], 0)
    expect_err(c.call("SEM.ACQUIRE", "early", a, 4), "ERR", "the acquirers' rule is back")
    ok(c.call("SEM.RELEASE", "early", b))
    expect_nil(c.call("SEM.INFO", "early"), "no semaphore and no override")
    expect_int(c.call("LOCK", "lk", a))
    expect_err(c.call("SEM.SETLIMIT", "lk", 3), "WRONGTYPE")
    expect_err(c.call("SEM.SETLIMIT", "x", 0), "ERR")
    expect_err(c.call("SEM.SETLIMIT", "x", "RESETX"), "ERR")


def test_an_override_counts_against_max_locks(ctx):
    srv = ctx.server("--max-locks", 2)
    c = ctx.conn(srv)
    ok(c.call("SEM.SETLIMIT", "q1", 2))
    ok(c.call("SEM.SETLIMIT", "q2", 2))
    expect_err(c.call("SEM.SETLIMIT", "q3", 2), "NOSPACE", "a third object over --max-locks 2")
    ok(c.call("SEM.SETLIMIT", "q2", 3), "changing an existing one adds nothing")
    eq(c.call("SEM.SETLIMIT", "q1", "RESET"), 1)
    ok(c.call("SEM.SETLIMIT", "q3", 2))


def test_the_override_holds_across_a_leader_kill9_and_a_restart_from_a_snapshot(ctx):
    servers = start_cluster(ctx, extra=SNAP)
    leader = ready_leader(servers)
    with Conn(leader.port, timeout=10) as c:
        for r in acquire_all(c, "k", 3, 3):
            expect_int(r)
        ok(c.call("SEM.SETLIMIT", "k", 5))
        ok(c.call("SEM.SETLIMIT", "idle", 4))  # no semaphore: the override alone
    leader.kill9()
    rest = [s for s in servers if s is not leader]
    new = ready_leader(rest, timeout=30)
    with Conn(new.port, timeout=10) as c:
        for r in acquire_all(c, "k", 3, 2):
            expect_int(r, "the old limit after the kill: up to 5")
        expect_nil(c.call("SEM.ACQUIRE", "k", open_session(c), 3))
        info = checked(sem_info(c, "k"))
        eq((info["limit"], info["limit_set_by_operator"], len(holds(info))), (5, 1, 5))
        eq(sem_info(c, "idle")["limit"], 4)
        for i in range(40):  # past --snapshot-threshold: the overrides are in a snapshot
            expect_int(c.call("PUT", "sl/k%d" % i, "v"))
    wait_until(lambda: "raft: snapshot of" in new.log_text(), timeout=30, what="a snapshot")
    for s in rest:
        s.stop()
    for s in rest:
        s.start(wait=False)
    new = ready_leader(rest, timeout=60)
    with Conn(new.port, timeout=10) as c:
        wait_until(lambda: (sem_info(c, "idle") or {}).get("limit") == 4, timeout=30,
                   what="the idle override after the restart")
        info = checked(sem_info(c, "k"))
        eq((info["limit"], info["limit_set_by_operator"]), (5, 1))
        eq(c.call("SEM.SETLIMIT", "idle", "RESET"), 1)


test_the_override_holds_across_a_leader_kill9_and_a_restart_from_a_snapshot.timeout = 150
