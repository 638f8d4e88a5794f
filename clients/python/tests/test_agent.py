# SPDX-License-Identifier: Apache-2.0
"""The conformance agent (conformance/agent.py, on fencelock.aio) driven over its JSON-lines
protocol (tests/conformance/PROTOCOL.md) by a small driver, started as
tests/conformance/agents/python.json says, against real fencelockd processes: until the shared
harness runs every client's agent, this is what checks the Python one speaks the protocol.
"""

import datetime
import json
import os
import queue
import subprocess
import threading
import time

import pytest

from conftest import ROOT, endpoint, leader_of

SPEC = os.path.join(ROOT, "tests", "conformance", "agents", "python.json")


class Agent:
    """One agent process: requests out, replies and events in (a reader thread)."""

    def __init__(self, env):
        with open(SPEC) as f:
            spec = json.load(f)
        assert spec["name"] == "python" and spec["cwd"] == "clients/python"
        cwd = os.path.join(ROOT, spec["cwd"])
        if spec["build"]:
            subprocess.run(spec["build"], cwd=cwd, check=True, timeout=600)
        self.p = subprocess.Popen(spec["run"], cwd=cwd, env=dict(os.environ, **env),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.replies, self.events, self.lines = {}, queue.Queue(), queue.Queue()
        self.cv = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.hello = self.lines.get(timeout=60)

    def _read(self):
        first = True
        for line in self.p.stdout:
            msg = json.loads(line)  # anything else on stdout is a protocol error
            if first:
                self.lines.put(msg)
                first = False
            elif "event" in msg:  # a watch event has an "id" too: the event's
                self.events.put(msg)
            else:
                with self.cv:
                    self.replies[msg["id"]] = msg
                    self.cv.notify_all()

    def send(self, op, **args):
        self.next_id += 1
        req = dict(args, id=self.next_id, op=op)
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return self.next_id

    def reply(self, rid, timeout=60.0):
        end = time.monotonic() + timeout
        with self.cv:
            while rid not in self.replies:
                left = end - time.monotonic()
                assert left > 0, "no reply to request %d" % rid
                self.cv.wait(left)
            return self.replies.pop(rid)

    def call(self, op, **args):
        return self.reply(self.send(op, **args))

    def ok(self, op, **args):
        r = self.call(op, **args)
        assert r["ok"], r
        return r

    def event(self, timeout=30.0):
        return self.events.get(timeout=timeout)

    def quit(self):
        r = self.call("quit")
        assert r["ok"], r
        assert self.p.wait(30) == 0

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)


@pytest.fixture
def agents():
    made = []

    def make(servers, **env):
        a = Agent(dict({"FL_ENDPOINTS": ",".join(endpoint(s) for s in servers)}, **env))
        made.append(a)
        return a
    yield make
    for a in made:
        a.kill()


def test_agent_protocol_single_node(node, agents):
    a = agents([node], FL_TIMEOUT="5")
    assert a.hello["ready"] is True and a.hello["client"] == "python", a.hello
    import fencelock
    assert a.hello["version"] == fencelock.__version__
    s1 = a.ok("session.open", ttl=10.0, name="one")["session"]
    s2 = a.ok("session.open", ttl=10.0)["session"]
    assert s1 != s2
    safe = a.ok("session.safe", session=s1)
    assert 0 < safe["remaining_ms"] <= 10000 and safe["lost"] is False
    w = a.ok("watch.start", prefix="k")["watch"]
    t1 = a.ok("lock", session=s1, name="l", wait=5.0)["token"]
    r = a.call("lock", session=s2, name="l", wait=0)
    assert r["ok"] is False and r["error"] == "BUSY", r
    r = a.call("lock", session=s2, name="l", wait=0.2)
    assert r["ok"] is False and r["error"] == "TIMEOUT", r
    rev = a.ok("put", key="k1", value="v", session=s1, fence=["l", t1])["rev"]
    got = a.ok("get", key="k1")
    assert got["value"] == "v" and got["mod_rev"] == rev and got["version"] == 1
    assert a.call("get", key="nope")["error"] == "NOTFOUND"
    a.ok("fence.check", name="l", token=t1)
    waiter = a.send("lock", session=s2, name="l", wait=30.0)  # runs beside what follows
    a.ok("session.safe", session=s1)
    a.ok("unlock", session=s1, name="l")
    t2 = a.reply(waiter)["token"]
    assert t2 > t1
    r = a.call("fence.check", name="l", token=t1)
    assert r["error"] == "STALE", r
    r = a.call("put", key="k2", value="x", session=s1, fence=["l", t1])
    assert r["error"] == "STALE", r
    r = a.call("put", key="k1", value="x", ifrev=rev + 1000)
    assert r["error"] == "IFREV", r
    assert a.call("unlock", session=s1, name="l")["error"] == "NOTHOLDER"
    a.ok("del", key="k1", session=s1)
    tok = a.ok("sem.acquire", session=s1, name="sem", limit=1, wait=1.0)["token"]
    assert a.call("sem.acquire", session=s2, name="sem", limit=1, wait=0)["error"] == "BUSY"
    a.ok("sem.release", session=s1, name="sem")
    assert tok > 0
    lt = a.ok("elect.campaign", session=s1, name="e", value="me", wait=1.0)["token"]
    ld = a.ok("elect.leader", name="e")
    assert ld["value"] == "me" and ld["token"] == lt
    ob = a.ok("elect.observe", name="e", wait=1.0)
    assert ob["value"] == "me" and ob["rev"] > 0
    assert a.call("elect.observe", name="e", after_rev=ob["rev"], wait=0.2)["error"] == \
        "TIMEOUT"
    a.ok("elect.resign", session=s1, name="e")
    assert a.call("elect.leader", name="e")["error"] == "NOTFOUND"
    evs = [a.event(), a.event()]
    assert [(e["event"], e["type"], e["name"]) for e in evs] == \
        [("watch", "put", "k1"), ("watch", "del", "k1")], evs
    last = a.ok("watch.stop", watch=w)["last"]
    end = a.event()
    assert end == {"event": "watch_end", "watch": w, "error": None, "last": last}, end
    assert last == evs[1]["id"]
    w2 = a.ok("watch.start", prefix="k", **{"from": evs[0]["id"]})["watch"]
    again = a.event()
    assert (again["watch"], again["id"], again["type"]) == (w2, evs[1]["id"], "del"), again
    a.ok("watch.stop", watch=w2)
    assert a.event()["event"] == "watch_end"
    a.ok("session.close", session=s2)
    assert a.call("lock", session=s2, name="z", wait=0)["error"] == "SESSION"
    assert a.call("nonsense")["error"] == "OTHER"
    a.quit()


def test_agent_lost_event_when_the_server_freezes(node, agents):
    """The server frozen until the agent reports the session lost (the shape of the shared
    suite's scenario): the event comes with its clocks, the session is then refused, and the
    server's log, on resuming, expires the hold after the event's wall clock (both clocks are
    this machine's). The deadline itself is checked against a running server in
    test_aio.test_aio_lost_before_the_running_server_expires_the_session."""
    a = agents([node])
    opened = a.ok("session.open", ttl=1.5)
    s, sid = opened["session"], opened["sid"]
    token = a.ok("lock", session=s, name="x", wait=5.0)["token"]
    node.sigstop()
    try:
        ev = a.event(timeout=20)
        assert ev["event"] == "lost" and ev["session"] == s, ev
        safe = a.ok("session.safe", session=s)
        assert safe["lost"] is True and safe["remaining_ms"] <= 0
    finally:
        node.sigcont()
    line = "session %d expired while holding 'x' (token %d)" % (sid, token)
    end = time.monotonic() + 30
    while line not in node.log_text() and time.monotonic() < end:
        time.sleep(0.05)
    logged = [ln for ln in node.log_text().splitlines() if line in ln]
    assert logged, "the server never expired the session"
    stamp = datetime.datetime.strptime(logged[0].split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
    expired_ms = stamp.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000
    assert ev["wall_ms"] < expired_ms, "lost at %d, the server expired it at %d" % (
        ev["wall_ms"], expired_ms)
    assert a.call("lock", session=s, name="x", wait=0)["error"] == "SESSION"
    a.quit()


def test_agent_lock_waiting_across_leader_kill9_granted_once(nodes, agents):
    servers = nodes.cluster(3)
    leader_of(servers)
    a = agents(servers, FL_TIMEOUT="8")
    s1 = a.ok("session.open", ttl=6.0)["session"]
    s2 = a.ok("session.open", ttl=6.0)["session"]
    t1 = a.ok("lock", session=s1, name="m", wait=5.0)["token"]
    waiter = a.send("lock", session=s2, name="m", wait=60.0)
    time.sleep(0.3)  # queued or not, the grant must come once and after t1
    leader_of(servers).kill9()
    a.ok("unlock", session=s1, name="m")
    t2 = a.reply(waiter, timeout=90)["token"]
    assert t2 > t1
    r = a.call("lock", session=s1, name="m", wait=0)
    assert r["error"] == "BUSY", "s2 holds it, granted once: %r" % r
    assert not a.ok("session.safe", session=s2)["lost"]
    a.quit()


def test_agent_tls_wrong_ca_and_auth(nodes, agents):
    from test_auth import _acl_server
    from test_tls import tls_server
    from test_tls_acl import _Ctx
    s, d = tls_server(_Ctx(nodes), "--tls-client-auth", "optional")
    a = agents([s], FL_TLS_CA=os.path.join(d, "ca.crt"), FL_TIMEOUT="3")
    a.ok("put", key="k", value="v")
    a.quit()
    b = agents([s], FL_TLS_CA=os.path.join(d, "otherca.crt"), FL_TIMEOUT="1")
    r = b.call("get", key="k")
    assert r["ok"] is False and r["error"] == "TLS", r
    b.quit()
    acl, _, _ = _acl_server(_Ctx(nodes))
    c = agents([acl], FL_USER="app", FL_PASSWORD="apppw")
    c.ok("session.open", ttl=5.0)
    assert c.call("put", key="other", value="1")["error"] == "PERM"
    c.quit()
    e = agents([acl], FL_USER="app", FL_PASSWORD="wrong", FL_TIMEOUT="5")
    assert e.call("get", key="app/x")["error"] == "AUTH"
    e.quit()
