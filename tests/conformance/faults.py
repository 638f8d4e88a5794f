# SPDX-License-Identifier: Apache-2.0
"""Faults the scenarios make beside the integration tests' own (server.py: kill -9, SIGSTOP;
agent.py: SIGSTOP of an agent): lost answers, and the clusters the scenarios run on (plain, or
with every security layer on, as the torture suite's --secure makes them).

Lost answers (ReplyDrop): the agent runs in a cgroup v2 group of its own (agent.Agent
cgroup=True). Two iptables rules: in OUTPUT, every packet the agent's sockets send to one
server's client port marks its connection (CONNMARK; the cgroup match works on locally sent
packets); in INPUT, every packet from that port on a marked connection is dropped. Requests
still reach the server and apply; its answers (and its SYN-ACKs to new connections of the
agent) never arrive, for this agent only: the harness's own connections, and every other
process's, are untouched. (A cgroup match in INPUT alone does not see loopback packets'
sockets.) Every rule carries the comment TAG, so
`iptables -S | grep fencelock-conformance` finds one a crash left behind; a run deletes
only its own (several runs may share the machine)."""

import itertools
import os
import subprocess
import time

from cluster import TIMING, new_server
from nemesis import info as secure_info
from resp import Conn, RespError, as_map, text, ConnectionClosed, ReplyTimeout

TAG = "fencelock-conformance-%d" % os.getpid()  # this run's rules (the runner's pid)


def _iptables(*args):
    return subprocess.run(["iptables", "-w", "5"] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=20)


_mark_seq = itertools.count(1)


class ReplyDrop:
    """Drop the answers of server `srv` to `agent` (started with cgroup=True) until lift()."""

    def __init__(self, srv, agent):
        if not agent.cg_name:
            raise RuntimeError("ReplyDrop needs an agent started with cgroup=True")
        mark = "0x%x/0xffff" % ((os.getpid() * 31 + next(_mark_seq)) % 0x7fff + 1)
        tag = ["-m", "comment", "--comment", TAG]
        self.rules = [
            ["INPUT", "-p", "tcp", "--sport", str(srv.port), "-m", "connmark", "--mark", mark]
            + tag + ["-j", "DROP"],
            ["OUTPUT", "-p", "tcp", "--dport", str(srv.port), "-m", "cgroup", "--path",
             agent.cg_name] + tag + ["-j", "CONNMARK", "--set-xmark", mark]]
        self.added = []

    def start(self):
        for rule in self.rules:
            p = _iptables("-A", *rule)
            if p.returncode != 0:
                self.lift()
                raise RuntimeError("iptables -A %s: %s" % (" ".join(rule), p.stderr.strip()))
            self.added.append(rule)

    def lift(self):
        errors = []
        while self.added:
            rule = self.added.pop()
            p = _iptables("-D", *rule)
            if p.returncode != 0:
                errors.append("iptables -D %s: %s" % (" ".join(rule), p.stderr.strip()))
        if errors:
            raise RuntimeError("; ".join(errors))


def plain_cluster(ctx, extra=()):
    """Three nodes, the integration tests' timing (cluster.start_cluster), and the ready
    leader."""
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        s.extra_args = ["--initial-cluster", members] + TIMING + list(extra)
        s.start(wait=False)
    return servers, leader_of(servers)


def secure_cluster(ctx, secure):
    """Three nodes with client TLS (client certificates required), peer mutual TLS and ACLs:
    the torture suite's --secure (tests/torture/secure.py). The harness's own connections use
    TLS and AUTH (server.py reads s.tls and s.auth)."""
    servers = [new_server(ctx, i) for i in (1, 2, 3)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    for s in servers:
        secure.apply(s)
        s.extra_args = ["--initial-cluster", members] + TIMING + secure.server_flags(s.node_id)
        s.start(wait=False)
    return servers, leader_of(servers)


def conn(s, timeout=10.0):
    """A connection to node s (TLS and AUTH when the node has them)."""
    c = Conn(s.port, timeout=timeout, ssl_context=getattr(s, "tls", None))
    if getattr(s, "auth", None):
        r = c.call("AUTH", *s.auth)
        if r != "OK":
            c.close()
            raise AssertionError("AUTH -> %r" % (r,))
    return c


def leader_of(servers, timeout=30.0):
    """The one running, unfrozen node that is a ready leader, waited for (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        up = [(s, secure_info(s) or {}) for s in servers if s.running() and not s.sigstopped]
        ls = [s for s, i in up if i.get("ready") == 1 and text(i.get("role")) == "leader"]
        if len(ls) == 1:
            return ls[0]
        if time.monotonic() > deadline:
            raise AssertionError("no single ready leader after %.0f s" % timeout)
        time.sleep(0.05)


def call_leader(servers, *args, timeout=20.0):
    """One command on the current leader, retried across a fail-over (bounded)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            s = leader_of(servers, timeout=max(0.5, deadline - time.monotonic()))
            with conn(s, timeout=5.0) as c:
                r = c.call(*args)
        except (OSError, ConnectionClosed, ReplyTimeout, AssertionError) as e:
            last = e
            time.sleep(0.1)
            continue
        if isinstance(r, RespError) and r.code in ("NOTLEADER", "NOLEADER", "UNKNOWN"):
            last = r
            time.sleep(0.1)
            continue
        return r
    raise AssertionError("%s: no answer from a leader (%r)" % (" ".join(map(str, args)), last))


def kv(servers, key):
    """KV.GET of key on the leader as a dict (value, mod_rev, version, ...), None if absent."""
    r = call_leader(servers, "KV.GET", key)
    if isinstance(r, RespError):
        raise AssertionError("KV.GET %s -> -%s" % (key, r.text))
    return None if r is None else as_map(r)


def grants(s):
    """The grants one node applied (INFO stats)."""
    with conn(s, timeout=5.0) as c:
        for line in text(c.call("INFO", "stats")).splitlines():
            if line.startswith("grants:"):
                return int(line.split(":")[1])
    raise AssertionError("INFO stats has no grants line")


def cleanup_rules():
    """Delete every rule of this run (TAG: its runner's pid) that is still in force."""
    for chain in ("INPUT", "OUTPUT"):
        p = _iptables("-S", chain)
        for line in p.stdout.splitlines():
            if TAG in line and line.startswith("-A "):
                _iptables("-D", *line.split()[1:])


def endpoints(servers):
    return ",".join("127.0.0.1:%d" % s.port for s in servers)


def server_problems(servers):
    out = []
    for s in servers:
        rep = s.sanitizer_report()
        if rep:
            out.append("sanitizer report in %s:\n%s" % (s.log_path, rep))
        out.extend(s.problems)
    return out

