# SPDX-License-Identifier: Apache-2.0
"""The torture suite's cluster and its nemeses: it owns the fencelockd processes of one run (each in
a cgroup of its own, under libfaketime), the iptables rules that partition them, the faketime
offsets, and the SIGSTOPs of servers and workers. Every fault is undone by heal_all(), which the
orchestrator also calls from its finally block; cleanup() removes every rule carrying this run's
comment and every cgroup it made, even after a crash of the orchestrator's own code.

Partitions: every node starts inside its own cgroup v2 group (a shell wrapper writes its pid to
cgroup.procs and execs fencelockd), so each of its sockets, also the Raft connections it opens,
carries that group. Cutting node a from node b is one OUTPUT rule: packets of a's sockets to
b's Raft port are dropped (`-m cgroup --path G_a --dport raft_b`), and the same for b to a.
Clients always reach every node.
"""

import os
import shutil
import signal
import subprocess
import time

from cluster import TIMING
from resp import Conn, RespError, as_map, text, ConnectionClosed, ReplyTimeout
from server import Server, faketime_env

CGROUP_ROOT_CANDIDATES = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")

# sh wrapper: join the cgroup, restore LD_PRELOAD (kept away from the shell), exec fencelockd.
WRAPPER = ('echo $$ > "$0" || exit 97; '
           'if [ -n "$FL_TORTURE_PRELOAD" ]; then export LD_PRELOAD="$FL_TORTURE_PRELOAD"; fi; '
           'unset FL_TORTURE_PRELOAD; exec "$@"')


def cgroup2_root():
    try:
        with open("/proc/mounts") as f:
            mounts = {line.split()[1] for line in f if line.split()[2] == "cgroup2"}
    except OSError:
        return None
    for c in CGROUP_ROOT_CANDIDATES:
        if c in mounts:
            return c
    return next(iter(mounts), None)


class Node(Server):
    """A fencelockd inside cgroup `cg_name`, with a faketime timestamp file."""

    def __init__(self, binary, workdir, node_id, cg_root, cg_name):
        self.ts_file = os.path.join(workdir, "faketime.txt")
        os.makedirs(workdir, exist_ok=True)
        write_offset(self.ts_file, "+0")
        super().__init__(binary, workdir, env=faketime_env(self.ts_file), node_id=node_id)
        self.cg_name = cg_name
        self.cg_dir = os.path.join(cg_root, cg_name) if cg_root else None
        if self.cg_dir:
            os.makedirs(self.cg_dir, exist_ok=True)
        self.killed = False  # kill -9'd and not restarted yet
        self.removed = False  # removed from the configuration, not yet rejoined

    def argv(self):
        if not self.cg_dir:
            return super().argv()
        return ["/bin/sh", "-c", WRAPPER, os.path.join(self.cg_dir, "cgroup.procs")] + \
            super().argv()

    def environ(self):
        env = super().environ()
        if "LD_PRELOAD" in env:
            env["FL_TORTURE_PRELOAD"] = env.pop("LD_PRELOAD")
        return env

    def up(self):
        """Running and not frozen: counted as healthy."""
        return self.running() and not self.sigstopped


def node_conn(s, timeout=2.0):
    """A connection to node s: TLS and AUTH when the run is --secure (secure.py sets s.tls and
    s.auth)."""
    c = Conn(s.port, timeout=timeout, ssl_context=getattr(s, "tls", None))
    auth = getattr(s, "auth", None)
    if auth:
        r = c.call("AUTH", *auth)
        if r != "OK":
            c.close()
            raise ConnectionClosed("AUTH -> %r" % (r,))
    return c


def info(s):
    """CLUSTER.INFO of one node as a dict, or None if it does not answer."""
    try:
        with node_conn(s, timeout=1.0) as c:
            r = c.call("CLUSTER.INFO")
            return None if isinstance(r, RespError) else as_map(r)
    except (OSError, ConnectionClosed, ReplyTimeout):
        return None


def write_offset(path, s):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(s + "\n")
    os.replace(tmp, path)


def iptables(*args):
    return subprocess.run(["iptables", "-w", "5"] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=20)


class NoAnswer:
    """What call_leader returns when no leader answered in time (a nil reply is None)."""

    def __repr__(self):
        return "NO_ANSWER"


NO_ANSWER = NoAnswer()


class Cluster:
    def __init__(self, binary, workdir, n, log, extra=(), secure=None):
        self.tag = "fencelock-torture-%d" % os.getpid()
        self.log = log
        self.cg_root = cgroup2_root()  # None: no partitions in this run
        self.nodes = [Node(binary, os.path.join(workdir, "node%d" % i), i, self.cg_root,
                           "%s-n%d" % (self.tag, i)) for i in range(1, n + 1)]
        self.members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in self.nodes)
        self.extra = list(extra)  # server flags of every incarnation (snapshot settings)
        if secure:  # --secure: TLS both layers, ACLs (secure.py)
            self.extra += secure.server_flags()
            for s in self.nodes:
                secure.apply(s)
        for s in self.nodes:
            s.extra_args = ["--initial-cluster", self.members] + TIMING + self.extra
        self.rules = []  # iptables rules in force (argument lists after -A)

    # ---- lifecycle ----
    def start(self):
        for s in self.nodes:
            s.start(wait=False)
        return self.leader(timeout=30)

    def faketime_missing(self):
        """Ids of running nodes whose process has not mapped libfaketime (a clock jump would
        not reach them: the run would pass for the wrong reason)."""
        out = []
        for s in self.nodes:
            try:
                with open("/proc/%d/maps" % s.proc.pid) as f:
                    if "libfaketime" not in f.read():
                        out.append(s.node_id)
            except OSError:
                pass
        return out

    def endpoints(self):
        return ",".join("127.0.0.1:%d" % s.port for s in self.nodes)

    def leader(self, timeout=10.0, among=None):
        """The ready leader with the highest term among healthy nodes, or None after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            best = None
            for s in (among or self.nodes):
                if not s.up():
                    continue
                i = info(s) or {}
                if text(i.get("role")) == "leader" and i.get("ready") == 1:
                    if best is None or i.get("term", 0) > best[1]:
                        best = (s, i.get("term", 0))
            if best:
                return best[0]
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def call_leader(self, *args, timeout=15.0):
        """One command on the leader, following -NOTLEADER/-NOLEADER (bounded): the reply, or
        NO_ANSWER."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            s = self.leader(timeout=max(0.1, deadline - time.monotonic()))
            if s is None:
                break
            try:
                with node_conn(s) as c:
                    r = c.call(*args, timeout=max(1.0, deadline - time.monotonic()))
            except (OSError, ConnectionClosed, ReplyTimeout) as e:
                last = e
                time.sleep(0.1)
                continue
            if isinstance(r, RespError) and r.code in ("NOTLEADER", "NOLEADER", "UNKNOWN"):
                last = r
                time.sleep(0.1)
                continue
            return r
        self.log("call %s: no answer (%r)" % (" ".join(map(str, args)), last))
        return NO_ANSWER

    # ---- faults ----
    def kill(self, s):
        s.kill9()
        s.killed = True

    def restart(self, s):
        if s.killed and not s.running():
            s.restart(wait=False)
        s.killed = False

    def stop_node(self, s):
        s.sigstop()

    def cont_node(self, s):
        s.sigcont()

    def set_clock(self, s, offset):
        write_offset(s.ts_file, offset)

    def partition(self, groups):
        """Cut every pair of nodes in different groups (lists of nodes) from each other."""
        for ga in groups:
            for gb in groups:
                if ga is gb:
                    continue
                for a in ga:
                    for b in gb:
                        rule = ["OUTPUT", "-p", "tcp", "-m", "cgroup", "--path", a.cg_name,
                                "--dport", b.raft_port, "-m", "comment", "--comment", self.tag,
                                "-j", "DROP"]
                        p = iptables("-A", *rule)
                        if p.returncode != 0:
                            raise RuntimeError("iptables -A: %s" % p.stderr.strip())
                        self.rules.append(rule)

    def heal_partition(self):
        while self.rules:
            rule = self.rules.pop()
            p = iptables("-D", *rule)
            if p.returncode != 0:
                self.log("iptables -D failed: %s" % p.stderr.strip())

    def remove_member(self, s):
        """CLUSTER.REMOVE s through the leader; once the configuration no longer has it, kill
        it and wipe its data (the caller later calls rejoin(s)). When the answer is lost
        (-UNKNOWN: the leader changed), the configuration itself says whether it applied.
        Returns True when s was removed."""
        r = self.call_leader("CLUSTER.REMOVE", s.node_id, timeout=6.0)
        if r != "OK":
            self.log("CLUSTER.REMOVE %d -> %r; asking the configuration" % (s.node_id, r))
            deadline = time.monotonic() + 10.0
            v = self.voters()
            while v is None and time.monotonic() < deadline:
                time.sleep(0.3)
                v = self.voters()
            if v is None or s.node_id in v:
                self.log("node %d still a voter (voters %s)" % (s.node_id, v))
                return False
            self.log("node %d is out of the configuration after all" % s.node_id)
        self.retire(s)
        return True

    def retire(self, s):
        if s.running():
            s.kill9()
        s.sigstopped = False
        s.removed = True
        shutil.rmtree(s.data_dir, ignore_errors=True)

    def repair(self):
        """Nodes that are no member at all of the leader's configuration (a CLUSTER.REMOVE
        whose answer was lost applied after all): retire and rejoin them. Returns their ids."""
        ms = self.member_roles()
        if ms is None:
            return []
        out = []
        for s in self.nodes:
            if s.node_id not in ms and not s.removed:
                self.retire(s)
                self.rejoin(s)
                out.append(s.node_id)
        return out

    def rejoin(self, s):
        """Start a removed node with an empty data dir and --join through the leader first,
        then every other member in turn (one of them may be down or partitioned): it adds
        itself back."""
        lead = self.leader(timeout=2.0)
        order = ([lead] if lead else []) + [x for x in self.nodes
                                            if x is not s and x is not lead and not x.removed]
        s.extra_args = (["--join", ",".join("127.0.0.1:%d" % x.port for x in order)] + TIMING +
                        self.extra)
        s.removed = False
        s.killed = False
        s.start(wait=False)

    def member_roles(self):
        """{id: role} of the leader's configuration, or None."""
        ld = self.leader(timeout=1.0)
        if ld is None:
            return None
        try:
            with node_conn(ld) as c:
                r = c.call("CLUSTER.MEMBERS")
        except (OSError, ConnectionClosed, ReplyTimeout):
            return None
        if not isinstance(r, list):
            return None
        return {m["id"]: text(m.get("role")) for m in map(as_map, r)}

    def voters(self):
        """Sorted ids of the voters in the leader's configuration, or None."""
        ms = self.member_roles()
        if ms is None:
            return None
        return sorted(i for i, role in ms.items() if role in ("leader", "follower"))

    def complete(self):
        """Every node is a voter again."""
        return self.voters() == sorted(s.node_id for s in self.nodes)

    # ---- heal and cleanup ----
    def heal_all(self):
        """Undo every fault: SIGCONT, clocks back, partitions removed, dead nodes restarted,
        removed nodes rejoined."""
        for s in self.nodes:
            s.sigcont()
        for s in self.nodes:
            write_offset(s.ts_file, "+0")
        self.heal_partition()
        for s in self.nodes:
            if s.removed:
                self.rejoin(s)
            elif not s.running():
                s.killed = True
                self.restart(s)

    def cleanup(self):
        """Last resort: stop processes, delete every rule with our tag, remove our cgroups."""
        for s in self.nodes:
            s.force_cleanup()
        self.heal_partition()
        p = iptables("-S", "OUTPUT")
        for line in p.stdout.splitlines():
            if self.tag in line and line.startswith("-A "):
                iptables("-D", *line.split()[1:])
        for s in self.nodes:
            try:
                if s.cg_dir:
                    os.rmdir(s.cg_dir)
            except OSError:
                pass

    def stop_all(self):
        for s in self.nodes:
            if s.running():
                s.stop()


def sigcont_pid(pid):
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass
