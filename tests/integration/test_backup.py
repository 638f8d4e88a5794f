# SPDX-License-Identifier: Apache-2.0
"""Backup and restore (docs/operations.md "Back up and restore"): `fencelock snapshot save FILE` takes an online, consistent
snapshot from the leader (SNAPSHOT.SAVE) while clients write; `fencelockd --restore FILE`
turns it into the data directories of a fresh 3-node cluster. Every key, lock, semaphore and
election of the save is there, exactly the writes committed up to the saved revision and none
after it, the restored sessions are alive, and the next grant's token is larger than any
token handed out before the save. A damaged file or a used data directory is refused."""

import json
import os
import subprocess
import threading
import time

from cluster import TIMING, ready_leader, start_cluster
from helpers import eq, expect_err, expect_int, wait_until
from resp import Conn, as_map, text
from server import Server
from test_auth import _acl_server, _authed
from test_cli import cli_path, endpoints


def restore(ctx, s, path):
    """fencelockd --restore for server s (its own flags); (rc, output)."""
    p = subprocess.run(s.argv() + ["--restore", path], capture_output=True, text=True,
                       timeout=60, env=s.environ())
    return p.returncode, p.stdout + p.stderr


def new_cluster(ctx, tag, n=3):
    servers = [Server(ctx.binary, os.path.join(ctx.workdir, "%s%d" % (tag, i)), node_id=i)
               for i in range(1, n + 1)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", members] + TIMING
        ctx.servers.append(s)
    return servers


def save(ctx, servers, path):
    p = subprocess.run([cli_path(ctx), "--endpoints", endpoints(servers), "--json", "snapshot",
                        "save", path], capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, p.stderr)
    return json.loads(p.stdout)


class Writer:
    """PUTs w/0, w/1, ... as fast as one connection goes (bounded: 3000 writes, 20 s),
    recording each acknowledged write's revision."""

    def __init__(self, port):
        self.port = port
        self.acked = {}  # key -> (value, revision)
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        end = time.monotonic() + 20
        with Conn(self.port, timeout=5.0) as c:
            for i in range(3000):
                if self.stop.is_set() or time.monotonic() > end:
                    return
                r = c.call("PUT", "w/%d" % i, "v%d" % i)
                if isinstance(r, int):
                    self.acked["w/%d" % i] = ("v%d" % i, r)

    def finish(self):
        self.stop.set()
        self.t.join(timeout=30)


def test_save_under_load_and_restore_into_a_fresh_3_node_cluster(ctx):
    old = start_cluster(ctx, 3)
    leader = ready_leader(old)
    c = Conn(leader.port, timeout=10.0)
    ctx.defer(c.close)
    sid = expect_int(c.call("SESSION.OPEN", 600000))
    token = expect_int(c.call("LOCK", "inv", sid))
    permit = expect_int(c.call("SEM.ACQUIRE", "pool", sid, 3))
    lead = expect_int(c.call("ELECT.CAMPAIGN", "boss", sid, "node-a"))
    for i in range(20):
        expect_int(c.call("PUT", "k/%d" % i, "value %d" % i))
    writer = Writer(leader.port)
    wait_until(lambda: len(writer.acked) >= 50, timeout=20, what="writes under way")
    path = ctx.tmp("backup.snap")
    saved = save(ctx, old, path)
    wait_until(lambda: len(writer.acked) >= 100 + 50, timeout=20, what="writes after the save")
    writer.finish()
    # tokens handed out before the save are at most its revision (tokens are revisions)
    before = max([token, permit, lead] + [rev for _, rev in writer.acked.values()
                                          if rev <= saved["revision"]])
    assert saved["revision"] >= before, saved
    after = [k for k, (_, rev) in writer.acked.items() if rev > saved["revision"]]
    assert after, "no write was acknowledged after the save: the test shows nothing"
    for s in old:
        s.stop()

    new = new_cluster(ctx, "restored")
    for s in new:
        rc, out = restore(ctx, s, path)
        eq(rc, 0, out)
        assert "revision %d" % saved["revision"] in out, out
    # node 1 alone (no quorum, so nothing new commits): its member table, as restored, names
    # no address of the old cluster (CLUSTER.MEMBERS answers from the local table)
    old_ports = {s.port for s in old}
    new[0].start(wait=False)

    def local_members():
        try:
            with Conn(new[0].port, timeout=2.0) as d:
                return [as_map(r) for r in d.call("CLUSTER.MEMBERS")]
        except OSError:
            return None
    rows = wait_until(local_members, timeout=20, what="node 1 answers")
    for r in rows:
        addr = text(r.get("client_address") or "")
        assert not addr or int(addr.rsplit(":", 1)[1]) not in old_ports, rows
    for s in new[1:]:
        s.start(wait=False)
    nl = ready_leader(new, timeout=30)
    with Conn(nl.port, timeout=10.0) as d:
        for i in range(20):
            eq(text(d.call("GET", "k/%d" % i)), "value %d" % i)
        for k, (v, rev) in writer.acked.items():
            got = d.call("GET", k)
            if rev <= saved["revision"]:
                eq(text(got), v, "%s (revision %d, saved %d)" % (k, rev, saved["revision"]))
            else:
                eq(got, None, "%s was written after the save (revision %d)" % (k, rev))
        li = as_map(d.call("LOCK.INFO", "inv"))
        eq((li["holder"], li["token"]), (sid, token))
        si = as_map(d.call("SEM.INFO", "pool"))
        eq(si["limit"], 3)
        el = as_map(d.call("ELECT.LEADER", "boss"))
        eq((el["sid"], el["token"], text(el["value"])), (sid, lead, "node-a"))
        # the restored session is alive and can be kept alive on the new cluster
        assert isinstance(d.call("SESSION.KEEPALIVE", sid), int)
        s2 = expect_int(d.call("SESSION.OPEN", 60000))
        assert s2 > saved["revision"], (s2, saved)
        t2 = expect_int(d.call("LOCK", "next", s2))
        assert t2 > before and t2 > saved["revision"], (t2, before, saved)
        # a fenced write with the old holder's token still works: the holder kept its lock
        expect_int(d.call("PUT", "fenced", "x", "FENCE", "inv", token))
    # the member table is the new cluster's: no old address is handed out

    def members():
        with Conn(nl.port, timeout=5.0) as d:
            rows = d.call("CLUSTER.MEMBERS")
        addrs = [text(as_map(r).get("client_address") or "") for r in rows]
        return addrs if len([a for a in addrs if a]) == 3 else None
    addrs = wait_until(members, timeout=20, what="the new nodes announced")
    for a in addrs:
        assert int(a.rsplit(":", 1)[1]) not in old_ports, addrs
    # the same file restored into one node alone: the old members 2 and 3 are gone with their
    # addresses (the table is emptied on restore; only this node announces itself)
    solo = Server(ctx.binary, os.path.join(ctx.workdir, "solo"), node_id=1)
    ctx.servers.append(solo)
    rc, out = restore(ctx, solo, path)
    eq(rc, 0, out)
    solo.start()
    with Conn(solo.port, timeout=10.0) as d:
        eq(text(d.call("GET", "k/3")), "value 3")
        rows = [as_map(r) for r in d.call("CLUSTER.MEMBERS")]
        eq([r["id"] for r in rows], [1], rows)
    solo.stop()
    # a follower restored from the same file agrees (reads through it reach the same state)
    for s in new:
        with Conn(s.port, timeout=10.0) as d:
            d.call("READONLY")
            wait_until(lambda: text(d.call("GET", "k/0")) == "value 0", timeout=10,
                       what="node %d serves the restored key" % s.node_id)


def test_restore_refuses_damage_a_used_data_dir_and_join(ctx):
    srv = ctx.server()
    c = ctx.conn()
    expect_int(c.call("PUT", "a", "1"))
    path = ctx.tmp("good.snap")
    saved = save(ctx, [srv], path)
    data = open(path, "rb").read()
    assert data[:8] == b"FLSNAP01" and len(data) == 56 + saved["size"], saved

    def attempt(tag, content, extra=()):
        p = ctx.tmp(tag + ".snap")
        with open(p, "wb") as f:
            f.write(content)
        s = Server(ctx.binary, os.path.join(ctx.workdir, tag), node_id=1)
        s.extra_args = list(extra)
        rc, out = restore(ctx, s, p)
        return rc, out, s

    flipped = bytearray(data)
    flipped[-3] ^= 0x40
    for tag, content, why in (("flip", bytes(flipped), "checksum mismatch"),
                              ("cut", data[:-1], "truncated"),
                              ("magic", b"XXXXXXXX" + data[8:], "not a fencelock snapshot"),
                              ("empty", b"", "not a fencelock snapshot")):
        rc, out, s = attempt(tag, content)
        assert rc != 0 and why in out, (tag, rc, out)
        # nothing was written: the directory still starts a new, empty cluster
        s.start()
        with s.conn() as d:
            eq(d.call("GET", "a"), None, tag)
        s.stop()
    # a header revision that does not match the state
    bad = bytearray(data)
    bad[15] ^= 1
    rc, out, _ = attempt("rev", bytes(bad))
    assert rc != 0 and "not the same backup" in out, out
    # a data directory that already holds Raft data
    used = Server(ctx.binary, os.path.join(ctx.workdir, "used"), node_id=1)
    used.start()
    used.stop()
    rc, out = restore(ctx, used, path)
    assert rc != 0 and "already holds Raft data" in out, out
    # --join makes no new cluster
    rc, out, _ = attempt("join", data, ["--join", "127.0.0.1:%d" % srv.port])
    assert rc != 0 and "not with --join" in out, out
    # the good file restores into a single node that serves it
    rc, out, s = attempt("good", data)
    eq(rc, 0, out)
    s.start()
    with s.conn() as d:
        eq(text(d.call("GET", "a")), "1")
    s.stop()


def test_snapshot_save_needs_admin_under_acl(ctx):
    """SNAPSHOT.SAVE holds every key and session: only an admin may take it."""
    s, _, _ = _acl_server(ctx)
    for user in ("app", "ro", "default"):
        c = _authed(ctx, s, user, user + "pw")
        expect_err(c.call("SNAPSHOT.SAVE"), "NOPERM", user)
    a = _authed(ctx, s, "admin", "adminpw")
    expect_int(a.call("PUT", "secret", "x"))
    m = as_map(a.call("SNAPSHOT.SAVE"))
    eq(len(m["data"]), m["size"])
    assert m["revision"] >= 1 and len(text(m["sha256"])) == 64, m
