# SPDX-License-Identifier: Apache-2.0
"""Membership changes across a leader change (docs/server.md "libraft 0.22.1"): a change the old leader proposed and
could not commit before it lost leadership must never stay "in progress" once it committed,
failed or was abandoned, whoever leads. The node the change was about is then wiped and joins
again with --join through the members: it must become a voter again (bounded poll, generous).

How each test forces it: both followers are killed, the leader appends a command and then the
change (neither can commit), steps down for want of a majority, and wins the next term once the
followers are back (their logs are shorter). Its new term's first entry commits the change; the
followers receive [command, change, barrier] in one AppendEntries. libraft 0.22.1 records such
a change, on a follower, as uncommitted at the index of the batch's *first* new entry
(src/replication.c, replicationAppend), so applying the real entry never clears it. Leadership
then goes to such a follower (CLUSTER.TRANSFER) and the node the change was about joins again:
before the fix the new leader answered "a configuration change is already in progress" to every
CLUSTER.ADD/REMOVE for good.
"""

import shutil
import socket
import threading
import time

from helpers import eq, expect_err, expect_ok, ok, wait_until
from resp import Conn, RespError, as_map, text, ConnectionClosed, ReplyTimeout
from cluster import TIMING, RaftSink, info, info_now, make_leader, new_server, ready_leader, start_cluster

VOTER_ROLES = ("leader", "follower")


def members(s):
    try:
        with Conn(s.port, timeout=2.0) as c:
            r = c.call("CLUSTER.MEMBERS")
    except (OSError, ConnectionClosed, ReplyTimeout):
        return None
    if isinstance(r, RespError):
        return None
    return {m["id"]: text(m["role"]) for m in map(as_map, r)}


def voters(s):
    ms = members(s)
    return None if ms is None else sorted(i for i, r in ms.items() if r in VOTER_ROLES)


def role(s):
    return text((info(s) or {}).get("role"))


def slow_elections(args):
    """The same arguments with a 4 s election timeout: this node never campaigns first."""
    args = list(args)
    i = args.index("--election-ms")
    args[i + 1] = "4000"
    return args


def call_async(port, *args):
    """Send one command from a thread; the reply (or the exception) lands in the list."""
    out = []

    def run():
        try:
            with Conn(port, timeout=30.0) as c:
                out.append(c.call(*args, timeout=30))
        except Exception as e:  # noqa: BLE001 - the answer may never come
            out.append(e)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return out


def rejoin(ctx, node, through):
    """Kill `node`, wipe its data and start it again with --join through `through`."""
    if node.running():
        node.kill9()
    if getattr(node, "sink", None) is not None:
        node.sink.close()
    shutil.rmtree(node.data_dir, ignore_errors=True)
    node.extra_args = ["--join", ",".join("127.0.0.1:%d" % s.port for s in through)] + TIMING
    node.start(wait=False)


def wait_voter(servers, node, timeout=30.0):
    """Until the ready leader among `servers` lists `node` as a voter (bounded, generous)."""
    def is_voter():
        ld = ready_leader([s for s in servers if s.running()], timeout=10)
        v = voters(ld)
        return v is not None and node.node_id in v
    wait_until(is_voter, timeout=timeout, interval=0.2,
               what="node %d a voter again after --join" % node.node_id)


def settle(leader, others):
    """Until every node applied the same index and announced its client address: the killed
    nodes then acknowledged everything committed (CLUSTER.REMOVE's quorum check counts them)."""
    def settled():
        idx = {(info(s) or {}).get("applied_index") for s in [leader] + list(others)}
        ms = None
        with Conn(leader.port, timeout=2.0) as c:
            ms = [as_map(m) for m in ok(c.call("CLUSTER.MEMBERS"))]
        return len(idx) == 1 and None not in idx and all(text(m["client_address"]) for m in ms)
    wait_until(settled, timeout=15, interval=0.05, what="the cluster settled")


def sink(ctx, s):
    """Kill `s` and put a RaftSink on its Raft port (cluster.RaftSink)."""
    s.kill9()
    s.sink = RaftSink(s.raft_port)
    ctx.defer(s.sink.close)


def unsink_start(s):
    """Free `s`'s Raft port from its sink and start it: it receives only what is sent from now
    on."""
    s.sink.close()
    s.start(wait=False)


def proposed(leader, what):
    """Call before sending a command to `leader`; returns a function that waits until the
    leader proposed it (appended: a membership change or barrier goes behind it in the log)."""
    n = metric(leader, "fencelock_proposals_total")
    return lambda: wait_until(lambda: metric(leader, "fencelock_proposals_total") > n,
                              timeout=15, what="%s proposed" % what)


def flushed(nodes, leader):
    """After `leader` stepped down: until every sink of `nodes` received bytes `leader` sent
    after that (a RequestVote). Its link to the sink was up then, so whatever it had queued for
    that node while it led went out before it, into the sink. Only the old leader's bytes count:
    another node's RequestVote (a promoted spare campaigning) once passed for it while the
    leader's queue still held its last AppendEntries, which then reached the restarted node and
    gave it as long a log."""
    mark = {s: s.sink.received_from(leader.node_id) for s in nodes}
    wait_until(lambda: all(s.sink.received_from(leader.node_id) > mark[s] for s in nodes),
               timeout=15, what="a message from the old leader after its step-down at the sinks")


def change_across_leader_change(ctx, leader, down, restart, *change, pause=0.0):
    """Kill every node of `down` and put a sink on its Raft port, send a PUT and then the
    membership command `change` to `leader` (neither can commit), wait until it stepped down
    (and `pause` seconds more), restart the nodes of `restart` and check that `leader` leads
    again. Returns the change's answer list.

    The sinks take every message the leader sends while the nodes are down, so a restarted
    node has neither the PUT nor the change: its log is shorter than the old leader's and it
    cannot win an election (a vote goes only to a log at least as up to date), while the old
    leader gets its vote. Without the sinks the leader's last messages would wait in libraft's
    queue and could reach the restarted node first, giving it as long a log."""
    settle(leader, down)
    for s in down:
        sink(ctx, s)
    wait_put = proposed(leader, "the PUT")
    put = call_async(leader.port, "PUT", "before-change", "x")
    wait_put()  # the change goes behind it in the log
    ans = call_async(leader.port, *change)
    wait_until(lambda: role(leader) != "leader", timeout=15, interval=0.05,
               what="the leader stepping down without a majority")
    wait_until(lambda: put and ans, timeout=15, what="both answered after the step-down")
    flushed(restart, leader)
    time.sleep(pause)
    for s in restart:
        unsink_start(s)
    ld = ready_leader([leader] + list(restart), timeout=20)
    eq(ld, leader, "the old leader leads again (the others' logs are shorter)")
    return ans


def transfer_to(old, new, *others):
    """Make `new` lead (cluster.make_leader) among `old`, `new` and `others`."""
    make_leader([old, new] + list(others), new)


def test_remove_across_leader_change_then_rejoin(ctx):
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    victim, keeper = [s for s in servers if s is not leader]
    ans = change_across_leader_change(ctx, leader, [victim, keeper], [keeper],
                                      "CLUSTER.REMOVE", victim.node_id)
    wait_until(lambda: voters(leader) == sorted([leader.node_id, keeper.node_id]), timeout=10,
               what="the REMOVE in the configuration")
    transfer_to(leader, keeper)
    rejoin(ctx, victim, [keeper, leader])
    wait_voter([leader, keeper, victim], victim)


test_remove_across_leader_change_then_rejoin.timeout = 90


def test_add_across_leader_change_then_join(ctx):
    """The spare entry of CLUSTER.ADD is what the old leader could not commit."""
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    keeper, other = [s for s in servers if s is not leader]
    n4 = new_server(ctx, 4)
    change_across_leader_change(ctx, leader, [keeper, other], [keeper], "CLUSTER.ADD", 4,
                                "127.0.0.1:%d" % n4.raft_port)
    wait_until(lambda: (members(leader) or {}).get(4) == "spare", timeout=10,
               what="node 4 a spare in the configuration")
    unsink_start(other)  # gets the spare entry in a batch too
    wait_until(lambda: role(other) == "follower", timeout=20, what="the other node back")
    transfer_to(leader, keeper)
    rejoin(ctx, n4, [keeper, leader])
    wait_voter(servers + [n4], n4)


test_add_across_leader_change_then_join.timeout = 90


def test_promotion_across_leader_change_then_remove_and_rejoin(ctx):
    """The promotion entry of CLUSTER.ADD is what the old leader could not commit; afterwards
    the next change (a REMOVE of the promoted node) and its rejoin work on a new leader."""
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    keeper, other = [s for s in servers if s is not leader]
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # nothing listens: node 4 asks nobody to add it
    ctx.defer(dead.close)
    n4 = new_server(ctx, 4, ["--join", "127.0.0.1:%d" % dead.getsockname()[1]] + TIMING)
    n4.start(wait=False)
    wait_until(lambda: "raft role unavailable -> follower" in n4.log_text(), timeout=20,
               what="node 4 up")
    n4.sigstop()  # its catch-up waits: the promotion comes after the followers are gone
    ans = call_async(leader.port, "CLUSTER.ADD", 4, "127.0.0.1:%d" % n4.raft_port)
    wait_until(lambda: (members(keeper) or {}).get(4) == "spare", timeout=10,
               what="the spare entry on the followers")
    with Conn(leader.port, timeout=20) as c:  # committed after it: the spare entry is too
        ok(c.call("PUT", "spare-committed", "x", timeout=20), "a PUT behind the spare entry")
    for s in (keeper, other):
        sink(ctx, s)  # see change_across_leader_change
    wait_put = proposed(leader, "the PUT")
    put = call_async(leader.port, "PUT", "before-promotion", "x")
    wait_put()
    n4.sigcont()  # caught up at once: the promotion entry follows the PUT
    wait_until(lambda: role(leader) != "leader", timeout=15, interval=0.05,
               what="the leader stepping down without a majority")
    wait_until(lambda: put and ans, timeout=15, what="both answered after the step-down")
    assert (members(leader) or {}).get(4) in VOTER_ROLES, \
        "the promotion was appended on the old leader: %r" % members(leader)
    flushed([keeper], leader)
    unsink_start(keeper)
    ld = ready_leader([leader, keeper, n4], timeout=20)
    assert ld is not keeper, "the keeper's log is shorter"
    unsink_start(other)
    wait_until(lambda: role(other) == "follower", timeout=20, what="the other node back")
    transfer_to(ld, keeper, leader, n4, other)
    with Conn(keeper.port, timeout=20) as c:
        expect_ok(c.call("CLUSTER.REMOVE", 4, timeout=20), "the next change on the new leader")
    rejoin(ctx, n4, [keeper, leader, other])
    wait_voter(servers + [n4], n4)


test_promotion_across_leader_change_then_remove_and_rejoin.timeout = 90


def test_remove_never_leaves_no_voter(ctx):
    """One node: CLUSTER.REMOVE of itself (the last voter) is refused, FORCE or not, and the
    node keeps serving, also after a restart. (It used to answer -UNKNOWN, then -NOLEADER to
    everything for good.)"""
    s = ctx.server()
    c = ctx.conn()
    for args in (("CLUSTER.REMOVE", 1), ("CLUSTER.REMOVE", 1, "FORCE")):
        r = expect_err(c.call(*args), "ERR", "%r" % (args,))
        assert "last voter" in r.text, r.text
    expect_err(c.call("CLUSTER.REMOVE", 1, "NOW"), "ERR", "only FORCE")
    expect_err(c.call("CLUSTER.REMOVE", 1, "FORCE", "x"), "ERR", "arity")
    eq(voters(s), [1])
    ok(c.call("PUT", "k", "v"), "still serving")
    s.stop()
    s.start()
    with Conn(s.port) as c2:
        ok(c2.call("PUT", "k", "w"), "serving after a restart")


def test_remove_down_to_one_voter_needs_force(ctx):
    """3 nodes: TRANSFER, REMOVE the old leader (3 -> 2 voters: fine), REMOVE a second one
    (2 -> 1: refused without FORCE, the reason given), with FORCE it goes; the last voter is
    never removed. The cluster keeps serving throughout."""
    servers = start_cluster(ctx, 3)
    first = ready_leader(servers)
    second, third = [s for s in servers if s is not first]
    transfer_to(first, second)
    with Conn(second.port, timeout=20) as c:
        expect_ok(c.call("CLUSTER.REMOVE", first.node_id, timeout=20), "3 -> 2 voters")
        r = expect_err(c.call("CLUSTER.REMOVE", third.node_id), "ERR", "2 -> 1 without FORCE")
        assert "one voter" in r.text and "FORCE" in r.text, r.text
        eq(voters(second), sorted([second.node_id, third.node_id]), "nothing changed")
        expect_ok(c.call("CLUSTER.REMOVE", third.node_id, "FORCE", timeout=20), "2 -> 1 FORCE")
        for args in (("CLUSTER.REMOVE", second.node_id),
                     ("CLUSTER.REMOVE", second.node_id, "FORCE")):
            r = expect_err(c.call(*args), "ERR", "the last voter: %r" % (args,))
            assert "last voter" in r.text, r.text
        eq(voters(second), [second.node_id])
        ok(c.call("PUT", "k", "v"), "the one voter serves")


def test_remove_that_cannot_commit_needs_force(ctx):
    """3 nodes, one follower down and behind: removing the other follower would leave two
    voters, one of them unable to acknowledge; refused without FORCE, nothing changes. Under
    load with every node up, removals go through (the torture's membership nemesis)."""
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    down, up = [s for s in servers if s is not leader]
    settle(leader, [down, up])
    down.kill9()
    with Conn(leader.port) as c:
        ok(c.call("PUT", "after", "x"), "committed without the dead follower")
        # The leader counts a voter as caught up when it acknowledged the commit index of one
        # to two election timeouts ago (a live follower always has): let that reach the PUT.
        time.sleep(1.0)
        r = expect_err(c.call("CLUSTER.REMOVE", up.node_id), "ERR", "no quorum after it")
        assert "caught up" in r.text and "FORCE" in r.text, r.text
        eq(voters(leader), sorted(s.node_id for s in servers), "nothing changed")
        ok(c.call("PUT", "after", "y"), "still serving")


def metric(s, name):
    import http.client
    h = http.client.HTTPConnection("127.0.0.1", s.http_port, timeout=5)
    try:
        h.request("GET", "/metrics")
        body = h.getresponse().read().decode()
    finally:
        h.close()
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("%s not in /metrics" % name)


def test_change_in_progress_is_visible(ctx):
    """While a REMOVE cannot commit (both followers down; 3 s election timeout so the leader
    keeps trying a while): CLUSTER.INFO names it (kind, server, age), the metric counts its age,
    and the next change is refused with an error naming it. Afterwards: none, 0."""
    servers = start_cluster(ctx, 3, extra=["--election-ms", "3000", "--heartbeat-ms", "100"])
    leader = ready_leader(servers)
    f1, f2 = [s for s in servers if s is not leader]
    i = info(leader)
    eq((text(i["change"]), i["change_id"], i["change_ms"]), ("none", 0, 0), "idle")
    eq(metric(leader, "fencelock_membership_change_seconds"), 0.0, "idle metric")
    settle(leader, [f1, f2])
    for s in (f1, f2):
        s.kill9()
    ans = call_async(leader.port, "CLUSTER.REMOVE", f2.node_id, "FORCE")
    wait_until(lambda: text((info(leader) or {}).get("change")) == "remove", timeout=5,
               what="CLUSTER.INFO change remove")
    time.sleep(0.2)
    i = info(leader)
    eq(i["change_id"], f2.node_id, "change_id")
    assert i["change_ms"] >= 200, i
    assert metric(leader, "fencelock_membership_change_seconds") >= 0.2
    with Conn(leader.port) as c:
        r = expect_err(c.call("CLUSTER.ADD", 9, "127.0.0.1:9"), "ERR", "a second change")
        assert "already in progress: remove of server %d, for " % f2.node_id in r.text, r.text
    wait_until(lambda: ans, timeout=15, what="the REMOVE answered (leader stepped down)")
    expect_err(ans[0], ("UNKNOWN", "NOTLEADER"), "the REMOVE's outcome")
    for s in (f1, f2):
        s.start(wait=False)
    ld = ready_leader(servers, timeout=30)
    wait_until(lambda: text((info(ld) or {}).get("change")) == "none", timeout=15,
               what="no change in progress once a new term committed")
    eq(metric(ld, "fencelock_membership_change_seconds"), 0.0, "metric back to 0")


test_change_in_progress_is_visible.timeout = 90


def test_add_unreachable_fails_and_leaves_nothing(ctx):
    """`fencelock members add` of a node that is not running, with a long --timeout: the
    server's answer arrives (libraft gives up catching it up after 5 s) and names the reason;
    the spare it added is gone, and the next change works. (It used to print 'outcome unknown'
    after 1 s, leave a spare behind, and refuse the next change.)"""
    from test_cli import run, run_ok
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # nothing listens there
    ctx.defer(dead.close)
    addr = "127.0.0.1:%d" % dead.getsockname()[1]
    r = run(ctx, servers, "--timeout", "30s", "members", "add", 9, addr, timeout=60)
    assert r.rc != 0, r
    assert "server 9 did not catch up" in r.err and "removed again" in r.err, r.err
    assert 9 not in (members(leader) or {}), members(leader)
    eq(text(info_now(leader)["change"]), "none")
    with Conn(leader.port, timeout=30) as c:  # the same over RESP
        r2 = expect_err(c.call("CLUSTER.ADD", 10, addr, timeout=30), "ERR", "unreachable")
        assert "did not catch up" in r2.text and "removed again" in r2.text, r2.text
    assert 10 not in (members(leader) or {}), members(leader)
    target = next(s for s in servers if s is not leader)
    eq(run_ok(ctx, servers, "members", "transfer", target.node_id, timeout=30).out, "OK\n",
       "the next change works")


test_add_unreachable_fails_and_leaves_nothing.timeout = 90


def test_join_list_with_own_address_first(ctx):
    """--join given every member's client address, the joiner's own first (the same list on
    every node): it skips itself, and after -NOLEADER from a member that knows no leader it
    moves on to the next address. (It used to ask itself once a second for good.)"""
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    gone, other = [s for s in servers if s is not leader]
    with Conn(leader.port, timeout=20) as c:
        expect_ok(c.call("CLUSTER.REMOVE", gone.node_id, timeout=20), "remove a follower")
    gone.kill9()
    # A member that answers -NOLEADER: a 4th process of its own, never bootstrapped, whose own
    # --join points where nothing listens (it asks nobody to add it).
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    ctx.defer(dead.close)
    idle = new_server(ctx, 9, ["--join", "127.0.0.1:%d" % dead.getsockname()[1]] + TIMING)
    idle.start(wait=False)
    wait_until(lambda: role(idle) == "follower", timeout=20, what="the idle node up")
    order = [gone, idle, other, leader]  # own address first, then one that knows no leader
    rejoin(ctx, gone, order)
    wait_voter([leader, other, gone], gone)
    log = gone.log_text()
    assert "join: 127.0.0.1:%d answered -NOLEADER" % idle.port in log, "asked the idle node"
    assert "join: 127.0.0.1:%d answered" % gone.port not in log, "never asked itself"



def test_watchdog_hands_over_a_stuck_change(ctx):
    """The fallback when the repair does not act (switched off here with
    FENCELOCK_NO_CONFIG_REPAIR): the new leader's libraft keeps the REMOVE 'in progress' for
    good; after 20 election timeouts it hands leadership to another voter, whose bookkeeping is
    right, and the removed node's --join goes through there. Meanwhile the refusals name the
    stuck entry."""
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    members_arg = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", members_arg] + TIMING
        s.extra_env["FENCELOCK_NO_CONFIG_REPAIR"] = "1"
        s.start(wait=False)
    leader = ready_leader(servers)
    victim, keeper = [s for s in servers if s is not leader]
    change_across_leader_change(ctx, leader, [victim, keeper], [keeper],
                                "CLUSTER.REMOVE", victim.node_id)
    wait_until(lambda: voters(leader) == sorted([leader.node_id, keeper.node_id]), timeout=10,
               what="the REMOVE in the configuration")
    transfer_to(leader, keeper)
    i = info(keeper)
    eq(text(i["change"]), "uncommitted", "the stuck entry shows in CLUSTER.INFO")
    with Conn(keeper.port) as c:
        r = expect_err(c.call("CLUSTER.ADD", victim.node_id, "127.0.0.1:%d" % victim.raft_port),
                       "ERR", "refused while stuck")
        assert "the configuration entry at index %d, uncommitted for" % i["change_index"] \
            in r.text, r.text
    rejoin(ctx, victim, [keeper, leader])
    wait_voter([leader, keeper, victim], victim, timeout=45)
    assert "handing leadership to another voter" in keeper.log_text()
    assert "marked committed" not in keeper.log_text(), "the repair was off"


test_watchdog_hands_over_a_stuck_change.timeout = 120


def test_joiner_whose_promotion_was_lost_keeps_asking(ctx):
    """Found by the membership-weighted torture (seed 2855573936): the leader appends a
    joiner's promotion, replicates it to the joiner only, and loses leadership; the new leader
    has the joiner as a spare (and replicates nothing to spares). The joiner, counting itself a
    voter from the uncommitted entry, stopped asking to be added: a spare for good. It must
    count only a committed promotion and ask again, through --join."""
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    f1, f2 = [s for s in servers if s is not leader]
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # nothing listens: node 4 asks nobody until restarted
    ctx.defer(dead.close)
    n4 = new_server(ctx, 4, ["--join", "127.0.0.1:%d" % dead.getsockname()[1]] + TIMING)
    n4.start(wait=False)
    wait_until(lambda: role(n4) == "follower", timeout=20, what="node 4 up")
    settle(leader, [f1, f2])
    n4.sigstop()  # its catch-up waits until the followers are gone
    call_async(leader.port, "CLUSTER.ADD", 4, "127.0.0.1:%d" % n4.raft_port)
    wait_until(lambda: (members(f1) or {}).get(4) == "spare", timeout=10,
               what="the spare entry on a follower")
    with Conn(leader.port, timeout=20) as c:  # committed after it: the spare entry is too
        ok(c.call("PUT", "spare-committed", "x", timeout=20), "a PUT behind the spare entry")
    for s in (f1, f2):
        s.kill9()
    n4.sigcont()  # caught up at once: the promotion goes to node 4 alone
    wait_until(lambda: (members(n4) or {}).get(4) in VOTER_ROLES, timeout=10,
               what="node 4 holding its (uncommitted) promotion")
    n4.sigstop()  # must not campaign with its longer log while the others elect
    leader.kill9()  # has the promotion too: it must not lead the next term
    for s in (f1, f2):
        s.start(wait=False)
    new = ready_leader([f1, f2], timeout=30)
    eq((members(new) or {}).get(4), "spare", "the new leader has node 4 as a spare")
    n4.sigcont()
    n4.kill9()  # an ordinary restart, with --join through the members this time
    n4.extra_args = ["--join", ",".join("127.0.0.1:%d" % s.port for s in (f1, f2))] + TIMING
    n4.start(wait=False)
    leader.start(wait=False)
    wait_voter([f1, f2, leader, n4], n4, timeout=40)


test_joiner_whose_promotion_was_lost_keeps_asking.timeout = 120


def test_watchdog_ignores_a_change_pending_before_this_node_led(ctx):
    """Found by the soak: a node that was a candidate for longer than the watchdog's 20
    election timeouts, with an earlier leader's change uncommitted in its log, handed
    leadership away the moment it won (the wait counted from before it led). The wait counts
    only once the leader applied its own term's first entry, which commits that change."""
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    victim, keeper = [s for s in servers if s is not leader]
    change_across_leader_change(ctx, leader, [victim, keeper], [keeper],
                                "CLUSTER.REMOVE", victim.node_id, pause=10.0)
    time.sleep(1.0)
    eq(ready_leader([leader, keeper]), leader, "still the leader")
    assert "handing leadership" not in leader.log_text(), "the watchdog fired"
    eq(text(info_now(leader)["change"]), "none", "the REMOVE committed in the new term")


test_watchdog_ignores_a_change_pending_before_this_node_led.timeout = 90


def test_a_joined_node_that_hears_no_leader_asks_again_but_a_removal_sticks(ctx):
    """A node removed while it was stopped never learns of it (Raft sends nothing to a server
    it removed), so its own log still calls it a voter and it campaigns unheard. A --join node
    asks the leader again after 20 election timeouts without a leader, with CLUSTER.ADD ...
    PROMOTE, which would promote a spare but never adds back a node an operator removed: the
    removal sticks, and the node logs why it stays out. PROMOTE's answers are checked too."""
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    n4 = new_server(ctx, 4, ["--join", "127.0.0.1:%d" % leader.port] + TIMING)
    n4.start(wait=False)
    wait_until(lambda: 4 in (voters(leader) or []), timeout=30, what="node 4 a voter")
    wait_until(lambda: "join: this node is a voter" in n4.log_text(), timeout=20,
               what="node 4 knows it is a voter")
    with Conn(leader.port) as c:
        raddr = "127.0.0.1:%d" % n4.raft_port
        for args, words in (((4, raddr, "PROMOTE"), "member 4 is already a voter"),
                            ((4, raddr, "PROMOTE", "x"), "syntax error"),
                            ((4, raddr, "NOW"), "syntax error"),
                            ((9, "127.0.0.1:1", "PROMOTE"), "member 9 is not in the configuration")):
            e = expect_err(c.call("CLUSTER.ADD", *args), "ERR")
            assert words in e.text, (args, e.text)
    n4.sigstop()
    with Conn(leader.port) as c:
        expect_ok(c.call("CLUSTER.REMOVE", 4, timeout=15), "remove the stopped node")
    n4.sigcont()
    wait_until(lambda: "asking the cluster to add it again" in n4.log_text(), timeout=40,
               what="node 4 asks again after 20 election timeouts without a leader")
    wait_until(lambda: "is not in the configuration (removed?)" in n4.log_text(), timeout=20,
               what="the leader's refusal in node 4's log")
    eq(voters(ready_leader(servers)), [1, 2, 3], "the removal stuck")
    assert 4 not in (members(ready_leader(servers)) or {}), "node 4 was added back"


def test_joiner_whose_catch_up_was_given_up_asks_again(ctx):
    """Found by the 5-node torture (seed 20261207): a node removed and joining again with an
    empty data dir replays the cluster's history, in which it was a voter, and libraft 0.22.1
    keeps the configuration a follower counts as committed stale while it replays (a batch's
    configuration entries are recorded at the batch's first index: rn_tick.c), so that is the
    old one. When the leader gave up catching the joiner up (a round of over 5 s) and took the
    spare out again, the joiner read the old configuration as its own, counted itself a voter
    and never asked again. A joiner now counts itself a voter only once the leader says so.
    Made here: the removal lands inside one of the joiner's AppendEntries batches (32 entries)
    and not first in it, the joiner is stopped half way through its catch-up until the leader
    gives up (libraft's round limits), and the leader takes the spare out again. In the torture
    the stale bookkeeping lasted because the joiner was still writing what it had received; rn
    repairs it once a follower has applied its whole log (rn_tick.c), so the joiner runs with
    FENCELOCK_NO_CONFIG_REPAIR here and keeps it for good: the old joiner then never became a
    voter again (3 of 3 runs)."""
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    victim = next(s for s in servers if s is not leader)
    others = [s for s in servers if s is not victim]
    with Conn(leader.port, timeout=20) as c:
        for i in range(100):  # one entry each: the removal lands at index 100 or more
            ok(c.call("PUT", "before-%d" % i, "x"))
        expect_ok(c.call("CLUSTER.REMOVE", victim.node_id, timeout=20), "remove the victim")
        removal = metric(leader, "fencelock_applied_index")
        # history to replay after the removal, in 32-entry AppendEntries: long enough that the
        # joiner is seen half way (its applied index polled every 5 ms) on a busy machine too
        for i in range(4000):
            ok(c.call("PUT", "after-%d" % i, "x"))
    stop = threading.Event()

    def writer():  # bounded in time and count: entries keep coming during the catch-up
        try:
            with Conn(leader.port, timeout=10) as c:
                for i in range(200000):
                    if stop.is_set():
                        return
                    c.call("PUT", "during-%d" % (i % 64), "x", timeout=10)
                    time.sleep(0.002)
        except (OSError, ConnectionClosed, ReplyTimeout):
            return
    t = threading.Thread(target=writer, daemon=True)
    ctx.defer(lambda: (stop.set(), t.join(15)))
    t.start()
    victim.extra_env["FENCELOCK_NO_CONFIG_REPAIR"] = "1"
    rejoin(ctx, victim, others)

    def mid_catch_up():
        try:
            return metric(victim, "fencelock_applied_index") > removal
        except (OSError, AssertionError):
            return False
    wait_until(mid_catch_up, timeout=60, interval=0.005,
               what="the joiner replayed the removal")
    victim.sigstop()
    assert victim.node_id not in (voters(leader) or []), \
        "the joiner became a voter before it was stopped: no catch-up left to give up"
    def spare_taken_out():
        ms = members(leader)
        return ms is not None and victim.node_id not in ms
    wait_until(lambda: "did not catch up" in leader.log_text(), timeout=30,
               what="the leader gave up catching the joiner up")
    wait_until(spare_taken_out, timeout=30, what="the leader took the spare out again")
    victim.sigcont()
    wait_voter(others + [victim], victim, timeout=60)
    stop.set()
    t.join(15)
    wait_until(lambda: "join: this node is a voter of the cluster" in victim.log_text(),
               timeout=20, what="the joiner knows it is a voter")


test_joiner_whose_catch_up_was_given_up_asks_again.timeout = 180


def test_a_members_restart_trusts_its_mark_and_a_removal_sticks(ctx):
    """A joined node writes `joined` into its data dir when the leader says it is a voter. A
    member restarted with --join (its unit file keeps the flag) then trusts its own
    configuration at once, as before, and does not ask to be added: removed by an operator
    while it was down, it stays out (the recheck's CLUSTER.ADD ... PROMOTE is refused). Without
    the mark it would ask like a joiner, and a plain CLUSTER.ADD adds it back."""
    import os
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    n4 = new_server(ctx, 4, ["--join", "127.0.0.1:%d" % leader.port] + TIMING)
    n4.start(wait=False)
    wait_until(lambda: 4 in (voters(leader) or []), timeout=30, what="node 4 a voter")
    mark = os.path.join(n4.data_dir, "joined")
    wait_until(lambda: os.path.exists(mark), timeout=20, what="node 4's joined mark")
    with open(mark) as f:
        eq(f.read(), "fencelock member 4\n", "the mark names the member")
    n4.kill9()
    with Conn(leader.port) as c:
        expect_ok(c.call("CLUSTER.REMOVE", 4, timeout=15), "remove the stopped node")
    n4.start(wait=False)
    wait_until(lambda: "a member's restart" in n4.log_text(), timeout=20,
               what="node 4 trusts its own configuration at its restart")
    wait_until(lambda: "is not in the configuration (removed?)" in n4.log_text(), timeout=40,
               what="the recheck's PROMOTE refused")
    assert "added to the cluster by" not in n4.log_text().split("a member's restart")[-1]
    eq(voters(ready_leader(servers)), [1, 2, 3], "the removal stuck")
    assert 4 not in (members(ready_leader(servers)) or {}), "node 4 was added back"


test_a_members_restart_trusts_its_mark_and_a_removal_sticks.timeout = 120
