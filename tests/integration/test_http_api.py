# SPDX-License-Identifier: Apache-2.0
"""The read-only JSON API on the HTTP port (docs/server.md "HTTP"): each endpoint against its
RESP twin's answer, paging, bad input (400, nothing changes), linearizable answers from the
leader only (a follower 307 to the leader's HTTP port, test_http_redirect.py, or ?stale with
X-Fencelock-Last-Contact and X-Fencelock-Applied-Index), and HTTP Basic under --acl-file (401 / 403 / 200, the locks= globs
filtering what a user sees, /v1/fence and --http-metrics-auth gated the same way)."""

import base64
import http.client
import json
import os
import signal
import subprocess
import urllib.parse

from cluster import ready_leader, start_cluster, wait_announced
from helpers import eq, expect_int, ok, open_session, revision, wait_queued, wait_until
from resp import as_map, text


def get(srv, path, auth=None, method="GET", timeout=30):
    h = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=timeout)
    try:
        headers = {}
        if auth:
            tok = base64.b64encode(("%s:%s" % auth).encode()).decode()
            headers["Authorization"] = "Basic " + tok
        h.request(method, path, headers=headers)
        r = h.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        h.close()


def get_json(srv, path, auth=None):
    st, hd, body = get(srv, path, auth)
    eq(st, 200, "%s: %s" % (path, body))
    eq(hd.get("content-type"), "application/json", path)
    return json.loads(body)


def plain(v):
    """A RESP reply as JSON would carry it: bytes as text, maps as dicts."""
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, dict):
        return {plain(k): plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def enc(name):
    return urllib.parse.quote(name, safe="")


def test_http_api_each_endpoint_matches_its_resp_twin(ctx):
    c = ctx.conn()
    s1 = open_session(c, 60000, "NAME", "one")
    s2, s3 = open_session(c), open_session(c)
    odd = 'caf\u00e9 "q"\\<img src=x>/1'
    t = expect_int(c.call("LOCK", odd, s1))
    # a waiter: a parked LOCK on another connection
    w = ctx.conn()
    w.send("LOCK", odd, s2, "WAIT", 600000)
    wait_queued(c, odd, s2)
    expect_int(c.call("LOCK", "rw", s1, "SHARED"))
    expect_int(c.call("LOCK", "rw", s3, "SHARED"))
    expect_int(c.call("SEM.ACQUIRE", "pool", s1, 2))
    expect_int(c.call("ELECT.CAMPAIGN", "boss", s2, "v\u00e9"))
    srv = ctx.srv
    # /v1/locks/{name} == LOCK.INFO, with the name
    for name in (odd, "rw"):
        raw = as_map(ok(c.call("LOCK.INFO", name)))
        raw["holders"] = [as_map(x) for x in raw["holders"]]
        want = plain(raw)
        got = get_json(srv, "/v1/locks/" + enc(name))
        eq(got.pop("name"), name)
        eq(got, want, "LOCK.INFO %r" % name)
    eq(get_json(srv, "/v1/locks/" + enc(odd))["waiters"], [s2])
    eq(get_json(srv, "/v1/locks/" + enc(odd))["token"], t)
    # /v1/locks?prefix= == LOCKS prefix
    for prefix in ("", "r", "caf\u00e9"):
        want = [plain(as_map(x)) for x in c.call("LOCKS", prefix)]
        got = get_json(srv, "/v1/locks?prefix=" + enc(prefix))
        eq(got["locks"], want, "LOCKS %r" % prefix)
        eq(got["next"], None)
    # /v1/sessions/{id} == SESSION.INFO and /v1/sessions == SESSION.LIST (less remaining_ms)
    for sid in (s1, s2, s3):
        want = plain(as_map(c.call("SESSION.INFO", sid)))
        got = get_json(srv, "/v1/sessions/%d" % sid)
        want.pop("remaining_ms"), got.pop("remaining_ms")
        eq(got, want, "SESSION.INFO %d" % sid)
    want = [plain(as_map(x)) for x in c.call("SESSION.LIST")]
    got = get_json(srv, "/v1/sessions")
    for x in want + got["sessions"]:
        x.pop("remaining_ms")
    eq(got["sessions"], want, "SESSION.LIST")
    # /v1/members == CLUSTER.MEMBERS
    want = [plain(as_map(x)) for x in c.call("CLUSTER.MEMBERS")]
    eq(get_json(srv, "/v1/members")["members"], want, "CLUSTER.MEMBERS")
    # /v1/semaphores: SEM.INFO of each; /v1/elections: ELECT.LEADER of each
    sem = get_json(srv, "/v1/semaphores")["semaphores"]
    eq(len(sem), 1)
    eq(sem[0].pop("name"), "pool")
    raw = as_map(c.call("SEM.INFO", "pool"))
    want = plain(raw)
    want["holders"] = [plain(as_map(x)) for x in raw["holders"]]
    eq(sem[0], want, "SEM.INFO")
    el = get_json(srv, "/v1/elections")["elections"]
    eq(len(el), 1)
    eq(el[0].pop("name"), "boss")
    el[0].pop("candidates")
    eq(el[0], plain(as_map(c.call("ELECT.LEADER", "boss"))), "ELECT.LEADER")
    # HEAD has the headers, no body; a missing lock / session is 404
    st, hd, body = get(srv, "/v1/locks/" + enc(odd), method="HEAD")
    eq((st, body), (200, b""))
    eq(get(srv, "/v1/locks/nope")[0], 404)
    eq(get(srv, "/v1/locks/pool")[0], 404, "a semaphore is not a lock")
    eq(get(srv, "/v1/sessions/999999")[0], 404)
    w.close()


def test_http_api_pages_with_limit_and_after(ctx):
    c = ctx.conn()
    sid = open_session(c)
    names = ["p/%d" % i for i in range(7)]
    for n in names:
        expect_int(c.call("LOCK", n, sid))
    expect_int(c.call("LOCK", "q", sid))
    seen, after, pages = [], None, 0
    while True:
        path = "/v1/locks?prefix=p%2F&limit=3" + ("&after=" + enc(after) if after else "")
        got = get_json(ctx.srv, path)
        seen += [x["name"] for x in got["locks"]]
        pages += 1
        after = got["next"]
        if after is None:
            break
        assert pages < 10, seen
    eq(seen, sorted(names), "every lock of the prefix once, in order")
    sids = [open_session(c) for _ in range(4)] + [sid]
    got, after = [], None
    for _ in range(10):
        page = get_json(ctx.srv, "/v1/sessions?limit=2" + ("&after=%d" % after if after else ""))
        got += [x["sid"] for x in page["sessions"]]
        after = page["next"]
        if after is None:
            break
    eq(got, sorted(sids))


def test_http_api_bad_input_is_400_and_changes_nothing(ctx):
    c = ctx.conn()
    sid = open_session(c)
    expect_int(c.call("LOCK", "inv", sid))
    rev = revision(c)
    for path in ("/v1/locks?limit=0", "/v1/locks?limit=x", "/v1/locks?limit=1000001",
                 "/v1/locks?prefix=a&prefix=b", "/v1/locks?bogus=1", "/v1/locks/in%zzv",
                 "/v1/locks/inv%", "/v1/locks/" + "x" * 1025, "/v1/sessions/abc",
                 "/v1/sessions/0", "/v1/sessions?after=x", "/v1/locks?prefix=%zz"):
        st, _, body = get(ctx.srv, path)
        eq(st, 400, "%s: %s" % (path, body))
    eq(get(ctx.srv, "/v1/nothing")[0], 404)
    st, _, _ = get(ctx.srv, "/v1/locks", method="POST")
    eq(st, 405, "no write path")
    eq(revision(c), rev, "nothing was written")
    eq(get_json(ctx.srv, "/v1/locks/inv")["holder"], sid)


def test_http_api_follower_307_and_stale_headers(ctx):
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    c = ctx.conn(leader)
    wait_announced(c, 3)  # the members' addresses move the revision checked below
    sid = open_session(c)
    t = expect_int(c.call("LOCK", "inv", sid))
    rev = revision(c)
    got = get_json(leader, "/v1/locks/inv")
    eq((got["holder"], got["token"]), (sid, t))
    for s in servers:
        if s is leader:
            continue
        st, hd, body = get(s, "/v1/locks/inv")
        eq(st, 307, "a follower without ?stale: %s" % body)
        assert hd.get("x-fencelock-leader", "").startswith("%d " % leader.node_id), hd
        # ?stale: its own state, saying how old; it has applied the LOCK once caught up
        def caught_up():
            st2, hd2, body2 = get(s, "/v1/locks/inv?stale")
            return st2 == 200 and json.loads(body2)["token"] == t and hd2
        hd = wait_until(caught_up, timeout=30, what="follower applied the LOCK")
        assert int(hd["x-fencelock-applied-index"]) > 0, hd
        assert int(hd["x-fencelock-last-contact"]) >= 0, hd
    st, hd, _ = get(leader, "/v1/locks/inv?stale")
    eq((st, hd.get("x-fencelock-last-contact")), (200, "0"), "the leader itself")
    # on 3 nodes the twins agree too: members, locks, sessions
    want = [plain(as_map(x)) for x in c.call("CLUSTER.MEMBERS")]
    eq(get_json(leader, "/v1/members")["members"], want, "CLUSTER.MEMBERS")
    eq(get_json(leader, "/v1/locks")["locks"], [plain(as_map(x)) for x in c.call("LOCKS", "")])
    eq([x["sid"] for x in get_json(leader, "/v1/sessions")["sessions"]], [sid])
    eq(revision(c), rev)


test_http_api_follower_307_and_stale_headers.timeout = 120


def _hash(ctx, pw):
    p = subprocess.run([ctx.binary, "--hash-password"], input=pw.encode() + b"\n",
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode().strip()


def _acl_server(ctx, *extra):
    path = ctx.tmp("acl")
    with open(path, "w") as f:
        f.write("user admin %s perm=all\n" % _hash(ctx, "adminpw"))
        f.write("user app %s perm=read,lock locks=job-*\n" % _hash(ctx, "apppw"))
        f.write("user lockonly %s perm=lock\n" % _hash(ctx, "lockonlypw"))
        f.write("user kv %s perm=read keys=app/*\n" % _hash(ctx, "kvpw"))
    os.chmod(path, 0o600)
    s = ctx.server("--acl-file", path, *extra, start=False)
    s.auth = ("admin", "adminpw")
    s.start()
    return s


def metric_value(srv, name):
    _, _, body = get(srv, "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no metric %s" % name)


def test_http_api_basic_auth_401_403_200_and_globs(ctx):
    s = _acl_server(ctx)
    c = ctx.conn(s)
    ok(c.call("AUTH", "admin", "adminpw"))
    sid = open_session(c)
    t = expect_int(c.call("LOCK", "job-1", sid))
    expect_int(c.call("LOCK", "secret", sid))
    st, hd, _ = get(s, "/v1/locks")
    eq(st, 401, "no credentials")
    assert hd.get("www-authenticate", "").startswith("Basic realm="), hd
    fails = metric_value(s, "fencelock_auth_failures_total")
    eq(get(s, "/v1/locks", ("admin", "wrong"))[0], 401, "a wrong password")
    eq(metric_value(s, "fencelock_auth_failures_total"), fails + 1,
       "a wrong Basic password counts as a failed AUTH (same back-off)")
    eq(get(s, "/v1/locks", ("nobody", "x"))[0], 401, "an unknown user")
    eq(get(s, "/v1/locks", ("lockonly", "lockonlypw"))[0], 403, "no read permission")
    eq([x["name"] for x in get_json(s, "/v1/locks", ("admin", "adminpw"))["locks"]],
       ["job-1", "secret"])
    eq([x["name"] for x in get_json(s, "/v1/locks", ("app", "apppw"))["locks"]], ["job-1"],
       "locks=job-* filters the list")
    eq(get(s, "/v1/locks/secret", ("app", "apppw"))[0], 404, "a lock outside the globs")
    eq(get_json(s, "/v1/locks/job-1", ("app", "apppw"))["token"], t)
    # /v1/fence is gated the same way; /health stays open; /metrics open by default
    q = "/v1/fence?lock=job-1&token=%d" % t
    eq(get(s, q)[0], 401)
    eq(get(s, q, ("app", "apppw"))[0], 200)
    st, _, body = get(s, "/v1/fence?lock=secret&token=%d" % t, ("app", "apppw"))
    eq(st, 403, "FENCE.CHECK's rule: a lock outside the globs: %s" % body)
    eq(get(s, q, ("lockonly", "lockonlypw"))[0], 403, "no read permission")
    eq(get(s, "/health")[0], 200)
    eq(get(s, "/metrics")[0], 200, "--http-metrics-auth is off by default")


def test_http_api_metrics_auth_setting(ctx):
    s = _acl_server(ctx, "--http-metrics-auth")
    eq(get(s, "/metrics")[0], 401)
    st, _, body = get(s, "/metrics", ("admin", "adminpw"))
    eq(st, 200)
    assert b"fencelock_" in body
    eq(get(s, "/health")[0], 200)


# ---- GET /v1/events: Server-Sent Events ----

class Sse:
    """A raw SSE reader: the response head, then events as (id, event, data dict)."""

    def __init__(self, srv, path, headers=None, auth=None):
        import socket
        self.sock = socket.create_connection(("127.0.0.1", srv.http_port), timeout=30)
        hs = dict(headers or {})
        if auth:
            hs["Authorization"] = "Basic " + base64.b64encode(
                ("%s:%s" % auth).encode()).decode()
        req = "GET %s HTTP/1.1\r\nHost: x\r\n" % path
        req += "".join("%s: %s\r\n" % kv for kv in hs.items()) + "\r\n"
        self.sock.sendall(req.encode())
        self.buf = b""
        head = self._until(b"\r\n\r\n").decode()
        self.status = int(head.split(" ", 2)[1])
        self.head = head

    def _until(self, sep):
        while sep not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("closed; have %r" % self.buf)
            self.buf += chunk
        out, self.buf = self.buf.split(sep, 1)
        return out

    def next(self):
        block = self._until(b"\n\n").decode()
        f = dict(line.split(": ", 1) for line in block.split("\n"))
        return f.get("id"), f.get("event"), json.loads(f["data"])

    def close(self):
        self.sock.close()


def xread_ids(c, stream):
    r = ok(c.call("XREAD", "COUNT", 1000, "STREAMS", stream, "0"))
    if r is None:
        return []
    entries = r[0][1] if isinstance(r, list) else list(r.values())[0]
    out = []
    for i, fields in entries:
        m = {plain(k): plain(v) for k, v in as_map(fields).items()}
        out.append((plain(i), m["type"], m.get("name")))
    return out


def test_http_api_events_stream_resumes_with_last_event_id(ctx):
    c = ctx.conn()
    sid = open_session(c)
    first = Sse(ctx.srv, "/v1/events?prefix=job%2F")
    eq(first.status, 200, first.head)
    assert "text/event-stream" in first.head, first.head
    t1 = expect_int(c.call("LOCK", "job/1", sid))
    ok(c.call("UNLOCK", "job/1", sid))
    expect_int(c.call("LOCK", "other", sid))  # not under the prefix
    t2 = expect_int(c.call("LOCK", "job/2", sid))
    i1, ev, data = first.next()
    eq((ev, data["type"], data["name"], data["token"], data["sid"], data["id"]),
       ("grant", "grant", "job/1", t1, sid, i1))
    first.close()  # the client drops after one event; the rest comes after a reconnect
    ok(c.call("UNLOCK", "job/2", sid))
    again = Sse(ctx.srv, "/v1/events?prefix=job%2F&after=0", {"Last-Event-ID": i1})
    eq(again.status, 200, again.head)
    got = [(i1, "grant", "job/1")]
    for _ in range(3):
        i, ev, data = again.next()
        got.append((i, ev, data["name"]))
    want = xread_ids(c, "fencelock:events:job/")
    eq(got, want, "every event once, in order, across the reconnect (XREAD's ids)")
    eq(got[2][1:], ("grant", "job/2"))
    assert t2 > t1
    again.close()
    # after= from the start gives the same; a bad id is 400; an id the history lost is 410
    s3 = Sse(ctx.srv, "/v1/events?prefix=job%2F&after=0")
    eq([s3.next()[0] for _ in range(4)], [w[0] for w in want])
    s3.close()
    for path, hdr in (("/v1/events?after=x", {}), ("/v1/events", {"Last-Event-ID": "1-x"}),
                      ("/v1/events?limit=3", {})):
        s = Sse(ctx.srv, path, hdr)
        eq(s.status, 400, path)
        s.close()
    st, hd, body = get(ctx.srv, "/metrics")
    assert b"fencelock_http_sse_events_total" in body


def test_http_api_events_auth_and_follower(ctx):
    s = _acl_server(ctx)
    eq(Sse(s, "/v1/events").status, 401)
    g = Sse(s, "/v1/events", auth=("app", "apppw"))
    eq(g.status, 200, "globs: the events it may see (test_http_api_events_filtered_per_user)")
    g.close()
    ok_ = Sse(s, "/v1/events", auth=("admin", "adminpw"))
    eq(ok_.status, 200)
    ok_.close()


def test_http_api_events_filtered_per_user(ctx):
    """A user with locks= or keys= globs gets /v1/events with only the events it may see: a
    lock's under its locks= globs, a key's under its keys= globs, the session events only with
    admin; the ids are XREAD's, and what it may not see is passed over, not sent."""
    s = _acl_server(ctx)
    c = ctx.conn(s)
    ok(c.call("AUTH", "admin", "adminpw"))
    streams = {u: Sse(s, "/v1/events", auth=(u, u + "pw")) for u in ("admin", "app", "kv")}
    for u, st in streams.items():
        eq(st.status, 200, "%s: %s" % (u, st.head))
    sid = open_session(c)
    expect_int(c.call("LOCK", "secret", sid))
    expect_int(c.call("LOCK", "job-1", sid))
    expect_int(c.call("PUT", "app/k", "v"))
    expect_int(c.call("PUT", "other", "v"))
    expect_int(c.call("LOCK", "job-end", sid))  # the last event: every user sees it
    every = xread_ids(c, "fencelock:events")
    eq([(t, n) for _, t, n in every],
       [("session-open", None), ("grant", "secret"), ("grant", "job-1"), ("put", "app/k"),
        ("put", "other"), ("grant", "job-end")])
    want = {"admin": every,
            "app": [e for e in every if e[2] in ("job-1", "app/k", "other", "job-end")],
            "kv": [e for e in every if e[2] in ("secret", "job-1", "app/k", "job-end")]}
    for u, st in streams.items():
        got = []
        while not got or got[-1][2] != "job-end":
            i, ev, data = st.next()
            eq((data["id"], data["type"]), (i, ev))
            got.append((i, ev, data.get("name")))
        eq(got, want[u], "the events %s may see, with XREAD's ids" % u)
        st.close()
    # resumed after an id: the same filtered sequence
    r = Sse(s, "/v1/events?after=0", {"Last-Event-ID": want["app"][0][0]}, auth=("app", "apppw"))
    eq([r.next()[0] for _ in range(3)], [e[0] for e in want["app"][1:]])
    r.close()


def test_http_api_events_stream_ends_when_a_reload_drops_its_user(ctx):
    """The stream's user is looked up again when events are sent: after a SIGHUP reload that
    removed it, the next event ends the stream with `event: forbidden`, not the event."""
    s = _acl_server(ctx)
    c = ctx.conn(s)
    ok(c.call("AUTH", "admin", "adminpw"))
    sid = open_session(c)
    st = Sse(s, "/v1/events", auth=("app", "apppw"))
    eq(st.status, 200, st.head)
    expect_int(c.call("LOCK", "job-1", sid))
    _, ev, data = st.next()
    eq((ev, data["name"], data["sid"]), ("grant", "job-1", sid))
    h0 = text(as_map(c.call("CLUSTER.INFO"))["acl"])
    path = ctx.tmp("acl")
    with open(path) as f:
        rules = [x for x in f.read().splitlines() if not x.startswith("user app ")]
    with open(path, "w") as f:
        f.write("\n".join(rules) + "\n")
    os.kill(s.proc.pid, signal.SIGHUP)
    wait_until(lambda: text(as_map(c.call("CLUSTER.INFO"))["acl"]) != h0, what="the reload")
    expect_int(c.call("LOCK", "job-2", sid))
    eq(st.next()[1], "forbidden")
    try:
        got = st.next()
        raise AssertionError("the stream goes on: %r" % (got,))
    except (EOFError, OSError):
        pass
    st.close()


def test_http_api_events_follower_needs_stale(ctx):
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    c = ctx.conn(leader)
    sid = open_session(c)
    wait_announced(c, 3)
    f = [s for s in servers if s is not leader][0]
    s = Sse(f, "/v1/events")
    eq(s.status, 307, "to the leader's HTTP port (test_http_redirect.py)")
    s.close()
    s = Sse(f, "/v1/events?stale&prefix=fx&after=0")
    eq(s.status, 200, s.head)
    t = expect_int(c.call("LOCK", "fx", sid))
    _, ev, data = s.next()
    eq((ev, data["name"], data["token"]), ("grant", "fx", t))
    s.close()


test_http_api_events_follower_needs_stale.timeout = 120


def test_http_api_events_streams_are_capped(ctx):
    """--http-max-streams: over it 503; a stream that ends frees its place."""
    srv = ctx.server("--http-max-streams", "1")
    a = Sse(srv, "/v1/events")
    eq(a.status, 200)
    b = Sse(srv, "/v1/events")
    eq(b.status, 503, "a second stream over --http-max-streams 1")
    b.close()
    eq(get(srv, "/health")[0], 200, "/health still answers")
    a.close()

    def third():
        s = Sse(srv, "/v1/events")
        s.close()
        return s.status == 200
    wait_until(third, timeout=30, what="the closed stream's place freed")


def test_http_api_lock_history_matches_lock_history_and_pages(ctx):
    from test_history import history, three_grants
    c = ctx.conn()
    (_, _, _), (t1, t2, t3) = three_grants(ctx, c, "h/odd <b>")
    srv = ctx.srv
    want = history(c, "h/odd <b>")
    got = get_json(srv, "/v1/locks/" + enc("h/odd <b>") + "/history")
    eq(got["name"], "h/odd <b>")
    eq(got["history"], [plain(e) for e in want], "the same fields as LOCK.HISTORY")
    eq(got["next"], None)
    page = get_json(srv, "/v1/locks/" + enc("h/odd <b>") + "/history?count=2")
    eq([e["token"] for e in page["history"]], [t3, t2])
    eq(page["next"], t2)
    page = get_json(srv, "/v1/locks/%s/history?count=2&before=%d" % (enc("h/odd <b>"), t2))
    eq([e["token"] for e in page["history"]], [t1])
    eq(get(srv, "/v1/locks/h/odd%20%3Cb%3E/history?count=0")[0], 400)
    eq(get(srv, "/v1/locks/h/odd%20%3Cb%3E/history?bogus=1")[0], 400)


def test_http_api_lock_history_410_when_compacted_and_globs(ctx):
    s = _acl_server(ctx, "--history-per-lock", 1)
    c = ctx.conn(s)
    ok(c.call("AUTH", "admin", "adminpw"))
    sid = open_session(c)
    t = expect_int(c.call("LOCK", "job-1", sid))
    ok(c.call("UNLOCK", "job-1", sid))
    t2 = expect_int(c.call("LOCK", "job-1", sid))
    expect_int(c.call("LOCK", "secret", sid))
    got = get_json(s, "/v1/locks/job-1/history", ("app", "apppw"))
    eq([e["token"] for e in got["history"]], [t2])
    st, _, body = get(s, "/v1/locks/job-1/history?before=%d" % t2, ("app", "apppw"))
    eq(st, 410, body)
    assert body.startswith(b"COMPACTED"), body
    assert t < t2
    eq(get(s, "/v1/locks/secret/history", ("app", "apppw"))[0], 404, "outside the globs")
    eq(get(s, "/v1/locks/secret/history")[0], 401)
