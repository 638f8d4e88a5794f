# SPDX-License-Identifier: Apache-2.0
"""A follower's read-only HTTP API sends the client to the leader (docs/server.md "HTTP"): every
node's HTTP address is in the replicated member table (MEMBER_HTTP, announced by the node
itself), so a follower answers 307 with `Location: http://<leader's HTTP address><the same path
and query>`; following it gives the leader's linearizable 200. `?stale` still answers from the
follower with how stale it is. After a kill -9 of the leader the redirect names the new leader;
with no leader known it is 503. --http-advertise sets the address the others redirect to."""

import http.client
import json
import os
import urllib.parse

from cluster import TIMING, new_server, ready_leader, start_cluster, wait_announced
from helpers import eq, expect_int, open_session, wait_until
from resp import Conn, ConnectionClosed, ReplyTimeout, as_map, text
from test_http_api import get


def url_of(srv, path=""):
    return "http://127.0.0.1:%d%s" % (srv.http_port, path)


def answer(s, path):
    """(status, Location) of a follower's answer to path (no redirect followed)."""
    st, hd, _ = get(s, path)
    return st, hd.get("location")


def redirect_of(s, path, timeout=60):
    """The 307 a follower answers for path, waited for: each node announces its HTTP address
    once the cluster's log format is 2, a second or two after a leader."""
    def got():
        st, loc = answer(s, path)
        return loc if st == 307 else None
    return wait_until(got, timeout=timeout, interval=0.1, what="node %d's 307" % s.node_id)


def follow(location):
    """GET the Location of a 307 as a client that follows it does."""
    u = urllib.parse.urlsplit(location)
    h = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        h.request("GET", u.path + ("?" + u.query if u.query else ""))
        r = h.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        h.close()


def _found(reply):
    """A (status, headers, body) reply if it is a 200, else None (for wait_until)."""
    return reply if reply[0] == 200 else None


def test_http_follower_307_to_the_leader_stale_and_after_a_leader_kill9(ctx):
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    c = ctx.conn(leader)
    wait_announced(c, 3, http=False)  # the client addresses; the HTTP ones are waited for below
    sid = open_session(c)
    t = expect_int(c.call("LOCK", "inv/1", sid))
    want = json.loads(get(leader, "/v1/locks?prefix=inv")[2])
    eq([(x["name"], x["token"]) for x in want["locks"]], [("inv/1", t)])
    followers = [s for s in servers if s is not leader]
    for f in followers:
        loc = redirect_of(f, "/v1/locks?prefix=inv")
        eq(loc, url_of(leader, "/v1/locks?prefix=inv"), "the same path and query, on the leader")
        st, hd, body = follow(loc)
        eq((st, hd.get("content-type")), (200, "application/json"))
        eq(json.loads(body), want, "following it: the leader's linearizable answer")
        eq(answer(f, "/v1/locks/inv%2F1"), (307, url_of(leader, "/v1/locks/inv%2F1")),
           "a percent-encoded path is sent on as it came")
        eq(answer(f, "/v1/events?prefix=inv"), (307, url_of(leader, "/v1/events?prefix=inv")))
        # an admin's revoke (the one write on the port) is sent to the leader too, unapplied here
        h = http.client.HTTPConnection("127.0.0.1", f.http_port, timeout=30)
        try:
            h.request("POST", "/v1/locks/inv%2F1/revoke?deadline=60000",
                      headers={"X-Fencelock-Request": "1"})
            r = h.getresponse()
            r.read()
            eq((r.status, r.getheader("Location")),
               (307, url_of(leader, "/v1/locks/inv%2F1/revoke?deadline=60000")))
        finally:
            h.close()
        # ?stale: answered here, saying how stale; the leader's read above may have come under
        # its read lease, before this follower applied the LOCK, so wait for the follower to
        st, hd, body = wait_until(lambda: _found(get(f, "/v1/locks/inv%2F1?stale")), timeout=10,
                                  what="the follower applied the LOCK")
        eq(json.loads(body)["token"], t)
        assert int(hd["x-fencelock-applied-index"]) > 0, hd
        assert int(hd["x-fencelock-last-contact"]) >= 0, hd
    # CLUSTER.MEMBERS (and /v1/members) show each member's URL
    ms = {int(m["id"]): m["http_url"] for m in json.loads(get(leader, "/v1/members")[2])["members"]}
    eq(ms, {s.node_id: url_of(s) for s in servers})
    # the leader dies: the survivors redirect to the new one
    leader.kill9()
    rest = [s for s in servers if s.running()]
    new = ready_leader(rest, timeout=30)
    other = [s for s in rest if s is not new][0]
    def to_new():
        st, loc = answer(other, "/v1/sessions")
        return st == 307 and loc == url_of(new, "/v1/sessions")
    wait_until(to_new, timeout=60, interval=0.1, what="the redirect to the new leader")
    st, _, body = follow(url_of(new, "/v1/sessions"))
    eq(st, 200)
    eq([x["sid"] for x in json.loads(body)["sessions"]], [sid])
    # no leader at all: 503, saying so
    new.kill9()
    def no_leader():
        st, hd, body = get(other, "/v1/locks")
        return st == 503 and b"no leader known" in body
    wait_until(no_leader, timeout=60, interval=0.2, what="503 without a leader")


test_http_follower_307_to_the_leader_stale_and_after_a_leader_kill9.timeout = 240


def test_http_advertise_is_the_address_the_others_redirect_to(ctx):
    """--http-advertise: the address the member table holds and a follower's 307 names (here
    "localhost:port", which the followers may announce under --announce-any-host)."""
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    peers = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", peers, "--announce-any-host",
                        "--http-advertise", "localhost:%d" % s.http_port] + TIMING
        s.start(wait=False)
    leader = ready_leader(servers, timeout=30)
    want = {s.node_id: "http://localhost:%d" % s.http_port for s in servers}
    def advertised():
        ms = json.loads(get(leader, "/v1/members")[2])["members"]
        return {m["id"]: m["http_url"] for m in ms} == want
    wait_until(advertised, timeout=60, interval=0.2, what="the advertised addresses")
    f = [s for s in servers if s is not leader][0]
    eq(redirect_of(f, "/v1/locks"), "http://localhost:%d/v1/locks" % leader.http_port)


test_http_advertise_is_the_address_the_others_redirect_to.timeout = 240


def test_http_follower_307_is_https_under_http_tls(ctx):
    """--http-tls: the member table says the leader's HTTP port speaks TLS, so a follower's
    Location is https:// (and following it over TLS gives the leader's answer)."""
    from test_tls import certs, client_ctx
    d = certs(ctx)
    tls = ["--tls-cert", os.path.join(d, "server.crt"), "--tls-key",
           os.path.join(d, "server.key"), "--tls-ca", os.path.join(d, "ca.crt"), "--http-tls"]
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    peers = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    cctx = client_ctx(d)
    for s in servers:
        s.extra_args = ["--initial-cluster", peers] + tls + TIMING
        s.tls = cctx
        s.start(wait=False)

    def role(s):
        try:
            with Conn(s.port, timeout=2.0, ssl_context=cctx) as c:
                m = as_map(c.call("CLUSTER.INFO"))
                return text(m.get("role")) if m.get("ready") == 1 else None
        except (OSError, ConnectionClosed, ReplyTimeout):
            return None
    leader = wait_until(lambda: ([s for s in servers if role(s) == "leader"] or [None])[0],
                        timeout=30, interval=0.1, what="a ready leader")
    f = [s for s in servers if s is not leader][0]

    def location():
        h = http.client.HTTPSConnection("127.0.0.1", f.http_port, timeout=30, context=cctx)
        try:
            h.request("GET", "/v1/locks?limit=5")
            r = h.getresponse()
            r.read()
            return r.getheader("Location") if r.status == 307 else None
        finally:
            h.close()
    loc = wait_until(location, timeout=60, interval=0.2, what="the follower's 307")
    eq(loc, "https://127.0.0.1:%d/v1/locks?limit=5" % leader.http_port)
    u = urllib.parse.urlsplit(loc)
    h = http.client.HTTPSConnection(u.hostname, u.port, timeout=30, context=cctx)
    try:
        h.request("GET", u.path + "?" + u.query)
        r = h.getresponse()
        eq((r.status, json.loads(r.read())["locks"]), (200, []))
    finally:
        h.close()


test_http_follower_307_is_https_under_http_tls.timeout = 240
