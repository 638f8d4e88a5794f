# SPDX-License-Identifier: Apache-2.0
"""Connection handling and the server/cluster introspection commands."""

import subprocess
import time

from helpers import (RespError, as_map, cluster_info, eq, expect_int, ok, open_session,
                     revision, session_info, text, wait_until)
from resp import Conn, ConnectionClosed


def test_max_clients_refuses_the_extra_connection(ctx):
    srv = ctx.server("--max-clients", 4)
    conns = []

    def fill():
        for c in conns:
            c.close()
        conns.clear()
        for _ in range(4):
            c = Conn(srv.port, timeout=5)
            conns.append(c)
            if c.call("PING") != "PONG":
                return False
        return True

    # The readiness probe's connection may take a moment to be reaped by the server.
    wait_until(fill, 3, interval=0.1, what="4 connections under --max-clients 4")
    extra = Conn(srv.port, timeout=5)
    try:
        extra.send("PING")
        data, closed = extra.read_until_eof(timeout=3)
    except OSError:
        data, closed = b"", True
    finally:
        extra.close()
    assert data.startswith(b"-"), "connection #5 got %r, expected an error reply" % data[:100]
    assert b"PONG" not in data, "connection #5 was served: %r" % data[:100]
    assert closed, "connection #5 was not closed"
    for i, c in enumerate(conns):
        eq(c.call("PING"), "PONG", "connection #%d after the refusal" % (i + 1))
    conns.pop().close()

    def fresh_ok():
        try:
            with Conn(srv.port, timeout=2) as c:
                return c.call("PING") == "PONG"
        except (OSError, ConnectionClosed):
            return False
    wait_until(fresh_ok, 3, interval=0.05, what="a new connection after one closed")
    for c in conns:
        c.close()


def test_commands_are_case_insensitive_and_inline_works(ctx):
    c = ctx.conn()
    eq(c.call("ping"), "PONG")
    sid = expect_int(c.call("session.open", 10000), "session.open in lower case")
    expect_int(c.call("Lock", "l", sid, "wait", 100), "mixed case command and option")
    c.send_raw(b"PUT inl val\r\n")
    expect_int(c.read_reply(), "inline PUT")
    c.send_raw(b"GET inl\r\n")
    eq(c.read_reply(), b"val")
    eq(c.call("PING", "hello"), b"hello", "PING with a message")


def test_cluster_info_fields(ctx):
    c = ctx.conn()
    info = cluster_info(c)
    for f in ("id", "role", "leader_id", "leader", "term", "commit_index", "applied_index",
              "revision"):
        assert f in info, "CLUSTER.INFO lacks %s: %r" % (f, info)
    eq(info["id"], 1)
    eq(info["leader_id"], 1)
    eq(text(info["role"]), "leader")
    assert text(info["leader"]) in ("127.0.0.1:%d" % ctx.srv.port,
                                    "127.0.0.1:%d" % ctx.srv.raft_port), \
        "CLUSTER.INFO leader %r is not this node" % (info["leader"],)
    r = expect_int(c.call("PUT", "k", "v"))
    info2 = cluster_info(c)
    eq(info2["revision"], r)
    assert info2["applied_index"] > info["applied_index"], "applied_index did not move"
    assert info2["commit_index"] >= info2["applied_index"]


def test_cluster_members_single_node(ctx):
    c = ctx.conn()
    m = ok(c.call("CLUSTER.MEMBERS"))
    assert isinstance(m, list) and len(m) == 1, "CLUSTER.MEMBERS of one node: %r" % (m,)
    me = as_map(m[0])
    eq(me["id"], 1)
    eq(text(me["role"]), "leader")
    eq(text(me["client_address"]), "127.0.0.1:%d" % ctx.srv.port)
    eq(text(me["raft_address"]), "127.0.0.1:%d" % ctx.srv.raft_port)


def test_info_has_documented_sections(ctx):
    c = ctx.conn()
    body = text(ok(c.call("INFO")))
    for section in ("# Server", "# Clients", "# Raft", "# Fsm", "# Stats"):
        assert section.lower() in body.lower(), "INFO lacks section %r" % section
    fields = dict(line.split(":", 1) for line in body.splitlines()
                  if ":" in line and not line.startswith("#"))
    for f in ("role", "revision", "sessions", "locks_held", "waiters", "keys"):
        assert f in fields, "INFO lacks field %s" % f
    eq(fields["role"].strip(), "leader")
    eq(int(fields["revision"]), revision(c))
    raft_only = text(ok(c.call("INFO", "raft")))
    assert "role:" in raft_only and "revision:" not in raft_only, \
        "INFO raft should hold only the raft section: %r" % raft_only[:300]


def test_session_info_fields_and_keepalive_reply(ctx):
    c = ctx.conn()
    sid = expect_int(c.call("SESSION.OPEN", 5000, "LOCKDELAY", 250, "NAME", "worker-1"))
    expect_int(c.call("LOCK", "a", sid))
    expect_int(c.call("PUT", "k", "v", "LEASE", sid))
    holder = open_session(c)
    expect_int(c.call("LOCK", "b", holder))
    w = Conn(ctx.srv.port)
    ctx.conns.append(w)
    w.send("LOCK", "b", sid, "WAIT", 5000)
    wait_until(lambda: session_info(c, sid)["waits"] == 1, 3, what="waits == 1")
    info = session_info(c, sid)
    eq(info["sid"], sid)
    eq(info["ttl_ms"], 5000)
    eq(info["lockdelay_ms"], 250)
    eq(text(info["name"]), "worker-1")
    eq(info["locks"], 1)
    eq(info["keys"], 1)
    assert 0 < info["remaining_ms"] <= 5000, "remaining_ms %r" % (info["remaining_ms"],)
    time.sleep(0.3)
    rem = session_info(c, sid)["remaining_ms"]
    assert rem <= 4750, "SESSION.INFO must not reset the deadline: remaining_ms %d" % rem
    eq(c.call("SESSION.KEEPALIVE", sid), 5000, "KEEPALIVE answers the full ttl")
    assert session_info(c, sid)["remaining_ms"] > 4800, "KEEPALIVE did not reset the deadline"
    assert not isinstance(info, RespError)


def test_version_flag_prints_the_version(ctx):
    p = subprocess.run([ctx.binary, "--version"], capture_output=True, timeout=10)
    eq((p.returncode, p.stdout.decode().strip()), (0, "fencelockd 0.1.0"), "fencelockd --version")


def test_a_holder_whose_session_expires_is_logged_in_words(ctx):
    c = ctx.conn()
    sid = expect_int(c.call("SESSION.OPEN", 300))
    tok = expect_int(c.call("LOCK", "nightly\njob", sid))
    wait_until(lambda: "session %d expired while holding 'nightly\\x0ajob' (token %d)" % (sid, tok)
               in ctx.srv.log_text(), 10, what="the expiry of a holder in the log")
