# SPDX-License-Identifier: Apache-2.0
"""Disaster recovery: a cluster that lost its majority for good comes back on one survivor
with `fencelockd --recover` (libraft's raft_recover), keeping what that survivor had."""

import subprocess
import time

from cluster import info, ready_leader, start_cluster
from helpers import eq, expect_int, ok
from resp import Conn, as_map, text


def test_recover_survivor_after_losing_the_majority(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        sid = expect_int(c.call("SESSION.OPEN", 60000))
        token = expect_int(c.call("LOCK", "l", sid))
        rev = expect_int(c.call("PUT", "k", "v", "FENCE", "l", token))
    survivor = servers[0]
    wait = time.monotonic() + 10
    while (info(survivor) or {}).get("applied_index", 0) < (info(leader) or {}).get(
            "applied_index", 1) and time.monotonic() < wait:
        time.sleep(0.05)
    for s in servers:
        s.kill9()

    # Alone, the survivor cannot elect itself: 2 of 3 voters are gone.
    survivor.start(wait=False)
    time.sleep(2.0)
    assert (info(survivor) or {}).get("ready") != 1, "a minority of one became a ready leader"
    survivor.kill9()

    p = subprocess.run([survivor.binary, "--id", "1", "--data-dir", survivor.data_dir,
                        "--recover", "1=127.0.0.1:%d" % survivor.raft_port],
                       capture_output=True, text=True, timeout=30)
    eq(p.returncode, 0, "fencelockd --recover: %s" % p.stderr[-500:])
    survivor.start(wait=False)
    eq(ready_leader([survivor], timeout=15), survivor)
    with Conn(survivor.port) as c:
        eq(c.call("GET", "k"), b"v", "the survivor kept the acknowledged write")
        eq(as_map(ok(c.call("KV.GET", "k")))["mod_rev"], rev)
        li = as_map(ok(c.call("LOCK.INFO", "l")))
        eq((li["holder"], li["token"]), (sid, token))
        members = [as_map(m) for m in ok(c.call("CLUSTER.MEMBERS"))]
        eq([(m["id"], text(m["role"])) for m in members], [(1, "leader")])
        expect_int(c.call("PUT", "k2", "after"), "writes are acknowledged again")
