# SPDX-License-Identifier: Apache-2.0
"""Session ownership, SESSION.REVOKE and the replay check (docs/security.md):
another user's LOCK / UNLOCK / KEEPALIVE / CLOSE / INFO / PUT LEASE / REQ on a session gets
-NOSESSION (the answer for a missing session: no oracle of live ids) and changes nothing, an admin may INFO / CLOSE / UNLOCK / REVOKE any session, a revoke
ends a session as an expiry does (lock-delay, `reason revoke` in the event stream), and a
replayed (sid, seq) with a different command is refused, also after a fail-over.

With --acl-file on one node; on three nodes with --acl-file (talking to the leader directly:
peers cannot announce their client addresses under --acl-file yet, another part's work), the
owner survives a leader's kill -9; on three nodes without --acl-file (every owner is "") the
replay check survives it too."""

import os
import subprocess

from cluster import ready_leader, start_cluster, wait_announced
from helpers import (eq, expect_err, expect_int, expect_ok, lock_info, revision, session_info,
                     wait_until)
from resp import Conn, as_map, text
from test_auth import _authed, _hash
from test_watch import read_all


def _owner_server(ctx):
    """A node with alice and bob (read, lock, write) and root (all)."""
    path = ctx.tmp("acl")
    with open(path, "w") as f:
        for u, perm in (("alice", "read,lock,write"), ("bob", "read,lock,write"),
                        ("root", "all")):
            f.write("user %s %s perm=%s\n" % (u, _hash(ctx, u + "pw"), perm))
    os.chmod(path, 0o600)
    s = ctx.server("--acl-file", path, start=False)
    s.auth = ("root", "rootpw")
    s.start()
    return s


def test_another_users_session_commands_get_noperm_and_change_nothing(ctx):
    s = _owner_server(ctx)
    alice, bob, root = (_authed(ctx, s, u, u + "pw") for u in ("alice", "bob", "root"))
    a = expect_int(alice.call("SESSION.OPEN", 60000))
    expect_int(alice.call("LOCK", "L", a))
    expect_int(alice.call("PUT", "k", "v", "LEASE", a, "REQ", a, 1))
    b = expect_int(bob.call("SESSION.OPEN", 60000))
    rev = revision(root)
    for cmd in (("LOCK", "M", a), ("LOCK", "L", a, "SHARED"), ("UNLOCK", "L", a),
                ("SESSION.KEEPALIVE", a), ("SESSION.CLOSE", a), ("SESSION.INFO", a),
                ("PUT", "x", "v", "LEASE", a), ("PUT", "x", "v", "REQ", a, 9223372036854775807),
                ("LOCK", "M", a, "REQ", a, 2), ("SESSION.REVOKE", a)):
        if cmd[0] == "SESSION.REVOKE":  # that one needs admin first
            expect_err(bob.call(*cmd), "NOPERM", repr(cmd))
        else:
            r = expect_err(bob.call(*cmd), "NOSESSION", repr(cmd))
            assert "session %d is not alive" % a in r.text, r
    eq(revision(root), rev, "revision after refused commands")
    # alice's session, locks, keys and seqs are untouched
    eq(expect_int(alice.call("LOCK", "L", a)), lock_info(root, "L")["token"])
    expect_int(alice.call("SESSION.KEEPALIVE", a))
    expect_int(alice.call("PUT", "k2", "v", "LEASE", a, "REQ", a, 2))
    eq(text(session_info(alice, a)["name"]), "")
    # bob's own session is his
    expect_int(bob.call("LOCK", "M", b))
    expect_ok(bob.call("UNLOCK", "M", b))
    expect_ok(bob.call("SESSION.CLOSE", b))


def test_admin_may_inspect_close_unlock_and_revoke_any_session(ctx):
    s = _owner_server(ctx)
    alice, bob, root = (_authed(ctx, s, u, u + "pw") for u in ("alice", "bob", "root"))
    a1 = expect_int(alice.call("SESSION.OPEN", 60000, "LOCKDELAY", 1500))
    a2 = expect_int(alice.call("SESSION.OPEN", 60000))
    a3 = expect_int(alice.call("SESSION.OPEN", 60000))
    expect_int(alice.call("LOCK", "L", a1))
    expect_int(alice.call("LOCK", "U", a2))
    si = session_info(root, a1)
    eq((si["locks"], text(si["owner"])), (1, "alice"), "admin SESSION.INFO")
    # acting as the session stays the owner's alone
    expect_err(root.call("LOCK", "M", a1), "NOPERM")
    expect_err(root.call("SESSION.KEEPALIVE", a1), "NOPERM")
    expect_ok(root.call("UNLOCK", "U", a2))
    eq(lock_info(root, "U"), None, "lock U after the admin's UNLOCK")
    expect_ok(root.call("SESSION.CLOSE", a3))
    expect_err(alice.call("SESSION.INFO", a3), "NOSESSION")
    # the revoke: at once, as an expiry (lock-delay), told as a revoke
    b = expect_int(bob.call("SESSION.OPEN", 60000))
    expect_ok(root.call("SESSION.REVOKE", a1))
    expect_err(alice.call("SESSION.KEEPALIVE", a1), "NOSESSION")
    li = lock_info(root, "L")
    eq(li["lockdelay"], 1, "lock L in lock-delay after the revoke")
    eq(bob.call("LOCK", "L", b), None, "L is not free during the lock-delay")
    ends = [f for _, f in read_all(root) if f.get("type") == "session-end"
            and int(f["sid"]) == a1]
    eq([f["reason"] for f in ends], ["revoke"], "session-end of the revoked session")
    expect_err(root.call("SESSION.REVOKE", a1), "NOSESSION")


def test_a_replayed_seq_with_another_command_is_refused_also_after_failover(ctx):
    servers = start_cluster(ctx, 3)
    lead = ready_leader(servers)
    c = Conn(lead.port, timeout=10.0)
    ctx.conns.append(c)
    a = expect_int(c.call("SESSION.OPEN", 60000))
    r1 = expect_int(c.call("PUT", "k", "v", "REQ", a, 1))
    t = expect_int(c.call("LOCK", "L", a, "WAIT", 5000, "REQ", a, 2))
    wait_announced(c, 3)  # a member's first announce would move the revision checked below
    rev = revision(c)
    e = expect_err(c.call("LOCK", "M", a, "REQ", a, 2), "ERR")
    eq(e.text, "ERR request seq 2 of session %d was used by a different command" % a)
    # a resend asking for the wait that is left is the same request
    eq(expect_int(c.call("LOCK", "L", a, "WAIT", 3000, "REQ", a, 2)), t, "LOCK resend")
    eq(revision(c), rev, "revision after the refused replay")
    # an owner-less (no --acl-file) session: anyone may name it, as before
    other = Conn(lead.port, timeout=10.0)
    ctx.conns.append(other)
    expect_int(other.call("SESSION.KEEPALIVE", a))
    # the digest is replicated: a new leader refuses it too
    lead.kill9()
    lead2 = ready_leader([s for s in servers if s is not lead])
    c2 = Conn(lead2.port, timeout=10.0)
    ctx.conns.append(c2)
    e = expect_err(c2.call("LOCK", "M", a, "REQ", a, 2), "ERR")
    assert "was used by a different command" in e.text, e
    eq(expect_int(c2.call("LOCK", "L", a, "WAIT", 1000, "REQ", a, 2)), t, "resend on the new leader")
    expect_ok(c2.call("SESSION.REVOKE", a))
    eq(lock_info(c2, "L"), None, "no lock-delay: the session had none")
    expect_err(c2.call("SESSION.INFO", a), "NOSESSION")
    eq(r1 > 0, True)


def test_cli_session_revoke_needs_admin_and_libfencelock_sessions_are_owned(ctx):
    s = _owner_server(ctx)
    cli = os.path.join(os.path.dirname(ctx.binary), "fencelock")

    def run(user, *args):
        e = dict(os.environ)
        e.update({"FENCELOCK_USER": user, "FENCELOCK_PASSWORD": user + "pw"})
        return subprocess.run([cli, "--endpoints", "127.0.0.1:%d" % s.port, "--timeout", "10s"]
                              + list(args), capture_output=True, text=True, timeout=30, env=e)

    p = run("alice", "session", "open", "--lock-delay", "2s")
    eq(p.returncode, 0, p.stderr)
    a = int(p.stdout)
    root = _authed(ctx, s, "root", "rootpw")
    alice = _authed(ctx, s, "alice", "alicepw")
    expect_int(alice.call("LOCK", "L", a))
    for op in ("keepalive", "close"):  # another user's session is as a missing one to bob
        p = run("bob", "session", op, str(a))
        assert p.returncode != 0 and "NOSESSION session %d is not alive" % a in p.stderr, p
    p = run("bob", "session", "revoke", str(a))
    assert p.returncode != 0 and "permission denied" in p.stderr and "NOPERM" in p.stderr, p
    p = run("alice", "session", "revoke", str(a))  # revoke needs admin, even for the owner
    assert p.returncode != 0 and "NOPERM user alice has no permission" in p.stderr, p
    p = run("root", "--json", "session", "revoke", str(a))
    eq((p.returncode, p.stdout.strip()), (0, '{"revoked":%d}' % a), p.stderr)
    eq(lock_info(root, "L")["lockdelay"], 1, "lock-delay after the CLI's revoke")
    p = run("root", "session", "revoke", str(a))
    eq(p.returncode, 1, p.stderr)


def _acl_file(ctx):
    path = ctx.tmp("acl3")
    with open(path, "w") as f:
        for u, perm in (("alice", "read,lock,write"), ("bob", "read,lock,write"),
                        ("root", "all")):
            f.write("user %s %s perm=%s\n" % (u, _hash(ctx, u + "pw"), perm))
    os.chmod(path, 0o600)
    return path


def _authed_leader(servers, timeout=20.0):
    """The one running node whose CLUSTER.INFO (as root) says ready leader."""
    def find():
        found = []
        for s in servers:
            if not s.running():
                continue
            try:
                with Conn(s.port, timeout=1.0) as c:
                    c.call("AUTH", "root", "rootpw")
                    i = as_map(c.call("CLUSTER.INFO"))
                    if i.get("ready") == 1 and text(i.get("role")) == "leader":
                        found.append(s)
            except Exception:  # noqa: BLE001 - a node starting or gone: not the leader
                pass
        return found[0] if len(found) == 1 else None
    return wait_until(find, timeout=timeout, interval=0.05, what="a ready leader (as root)")


def start_acl_cluster(ctx, acl_path):
    """3 nodes under --acl-file ACL_PATH, whose user root (password rootpw, every permission)
    is also the peer user: a cluster under --acl-file needs peer credentials for its members'
    announces."""
    pw = ctx.tmp("peerpw")
    with open(pw, "w") as f:
        f.write("rootpw\n")
    os.chmod(pw, 0o600)
    return start_cluster(ctx, 3, extra=("--acl-file", acl_path, "--peer-user", "root",
                                        "--peer-password-file", pw))


def test_owner_is_replicated_three_nodes_with_acl(ctx):
    path = _acl_file(ctx)
    servers = start_acl_cluster(ctx, path)
    lead = _authed_leader(servers)
    alice, bob = (_authed(ctx, lead, u, u + "pw") for u in ("alice", "bob"))
    a = expect_int(alice.call("SESSION.OPEN", 60000, "LOCKDELAY", 1000))
    t = expect_int(alice.call("LOCK", "L", a, "REQ", a, 1))
    expect_err(bob.call("UNLOCK", "L", a), "NOSESSION")
    # every member's address committed before the failover: a new one would take a revision
    # on the new leader and the check below would count it
    wait_announced(_authed(ctx, lead, "root", "rootpw"), 3)
    lead.kill9()
    lead2 = _authed_leader([s for s in servers if s is not lead])
    alice2, bob2, root2 = (_authed(ctx, lead2, u, u + "pw") for u in ("alice", "bob", "root"))
    rev = revision(root2)
    for cmd in (("UNLOCK", "L", a), ("SESSION.CLOSE", a), ("SESSION.KEEPALIVE", a),
                ("SESSION.INFO", a), ("LOCK", "M", a)):
        r = expect_err(bob2.call(*cmd), "NOSESSION", repr(cmd) + " on the new leader")
        assert "session %d is not alive" % a in r.text, r
    eq(revision(root2), rev, "revision after refused commands on the new leader")
    eq(expect_int(alice2.call("LOCK", "L", a, "REQ", a, 1)), t, "alice's retry on the new leader")
    expect_ok(root2.call("SESSION.REVOKE", a))
    eq(lock_info(root2, "L")["lockdelay"], 1, "lock-delay after the revoke")
