# SPDX-License-Identifier: Apache-2.0
"""The two probes on the HTTP port (docs/server.md "HTTP", docs/operations.md "Probes"):
/livez answers 200 whenever the process and its event loop run, whatever the cluster's state;
/readyz (and its older name /health) is 200 on a ready leader or a follower that knows a
leader, 503 otherwise. A 3-node cluster that loses its quorum: /readyz 503, /livez still 200,
so a liveness probe on /livez does not restart the pods that wait for their peers."""

import http.client
import json

from cluster import ready_leader, start_cluster
from helpers import eq, wait_until


def get(srv, path):
    h = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=30)
    try:
        h.request("GET", path)
        r = h.getresponse()
        return r.status, r.getheader("Content-Type"), r.read()
    finally:
        h.close()


def test_livez_stays_200_when_the_quorum_is_lost(ctx):
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    for s in servers:
        # every node serves once it knows the leader
        wait_until(lambda: get(s, "/readyz")[0] == 200, timeout=30,
                   what="/readyz 200 on node %d" % s.node_id)
        st, ctype, body = get(s, "/livez")
        eq((st, ctype, json.loads(body)["status"]), (200, "application/json", "alive"),
           "/livez on node %d" % s.node_id)
        st, _, body = get(s, "/health")
        eq((st, json.loads(body)["status"]), (200, "ok"), "/health (the alias) on node %d"
           % s.node_id)
    # the quorum goes: two of three stopped, the one left cannot lead nor know a leader
    left = [s for s in servers if s is not leader][0]
    for s in servers:
        if s is not left:
            s.stop()
    wait_until(lambda: get(left, "/readyz")[0] == 503, timeout=60,
               what="/readyz 503 on the node left without a quorum")
    st, _, body = get(left, "/readyz")
    eq(json.loads(body)["status"], "unavailable", "/readyz body")
    eq(get(left, "/health")[0], 503, "/health, the alias, agrees")
    st, _, body = get(left, "/livez")
    eq((st, json.loads(body)["status"]), (200, "alive"), "/livez without a quorum")


test_livez_stays_200_when_the_quorum_is_lost.timeout = 180
