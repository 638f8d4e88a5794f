"""Linearizable reads under concurrency on a 3-node leader: reads arriving while a barrier is
in flight are answered by the next one, which the server now issues from a libuv check
handle, after libraft returned. Issuing it from inside libraft's barrier callback crashed
libraft 0.15 (SEGV in raft_barrier) about one run in five of
test_client.test_session_lost_when_every_server_stops_and_safe_until_is_never_late; this
load does not reproduce that crash reliably, it guards the read path's behaviour under it."""

import threading
import time

from cluster import ready_leader, start_cluster
from helpers import eq, expect_int, ok
from resp import Conn, RespError, as_map


def test_concurrent_reads_and_keepalives_keep_the_leader_up(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        sids = [expect_int(c.call("SESSION.OPEN", 10000)) for _ in range(4)]
        expect_int(c.call("PUT", "k", "v"))
    errors, answered = [], [0]
    lock = threading.Lock()

    def reader(i):
        end = time.monotonic() + 3.0
        with Conn(leader.port) as rc:
            for n in range(5000):
                if time.monotonic() > end:
                    break
                if n % 2:
                    r = rc.call("SESSION.KEEPALIVE", sids[i % len(sids)])
                else:
                    r = rc.call("GET", "k")
                if isinstance(r, RespError) or r not in (10000, b"v"):
                    errors.append(r)
                    return
                with lock:
                    answered[0] += 1

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    eq(errors, [], "every read answered correctly")
    assert answered[0] >= 100, answered[0]
    assert leader.running(), "the leader survived"
    with Conn(leader.port) as c:
        eq(as_map(ok(c.call("CLUSTER.INFO")))["role"], b"leader")
