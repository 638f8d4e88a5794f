#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fencelock torture suite: real fencelockd clusters on loopback, concurrent workers
(tests/torture/worker.c, one client loop each), a seeded random schedule of faults, a history
per run and the verdicts of tests/torture/checkers.py.

    python3 tests/torture/torture.py --bin build/asan/fencelockd --seconds 60 --nodes 3 \
        [--seed S] [--workloads all|register,mutex,...] [--out DIR] [--snapshots] [--cores]

Workloads: register, mutex, fenced-counter, control, rw (read-write lock) and watch
(event-stream watchers; they check the PUTs of the other workloads), sem (semaphore of 3
permits) and elect (election; ELECT_OBSERVERS observers beside --clients candidates): the
deadlock (two of three locks in random order: waits that close cycles, judged from the event
stream) and multilock (LOCK.MULTI over overlapping name sets), latch (countdown latches and
double barriers bound to sessions, some of whose participants end before counting down): the
`all` set (with snapshots, all but deadlock, whose judge needs the whole event stream:
SNAPSHOT_LEAVES_OUT).

--snapshots is the snapshot-heavy mode (it found the libraft 0.22.1 snapshot bugs): tiny snapshot thresholds and nemeses that
pause leaders and leave followers behind, so snapshots meet step-downs and InstallSnapshot.

The orchestrator owns every process it starts (servers, workers) and every fault it makes;
all are undone in a finally block, also on an exception or Ctrl-C. Output in DIR: history/
(one file per worker), history.jsonl (merged, by time, with the final counter values; format:
HISTORY.md), verdicts.json, porcupine.json and porcupine-*.html (the second judge),
stale-read/ (its negative control), nemesis.log, nodeN/server.log, workers/*.log.

Two judges read the history: the checkers (checkers*.py) and Porcupine (tests/porcupine, built
by scripts/porcupine.sh unless --porcupine names it). The last line printed is
`torture: N ops, K faults, V violations`; the exit status is 1 on any violation by either
judge, on a verdict "unknown" (either's search ran out of its bound), when a negative control
escaped a judge (Porcupine found the control counter linearizable although it lost updates, or
either judge accepted the stale read made from this run's register history, or the latch
checker let one of its negative controls through: latch_controls), on a server
crash or sanitizer report, and when the control workload (unfenced
writes under client pauses) showed no lost update, when rw readers never certainly overlapped,
watchers covered no acknowledged PUT, no two sem permits were certainly live together or elect
observers saw fewer than two leaders: then nothing was tested.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from nemesis import Cluster, iptables, sigcont_pid  # noqa: E402
from secure import Secure  # noqa: E402
from server import SANITIZER_PATTERNS  # noqa: E402

WORKLOADS = ("register", "mutex", "fenced-counter", "control", "rw", "watch", "sem", "elect",
             "deadlock", "multilock", "latch")
# --workloads all: every workload (rw, watch, sem, elect: two clean 60 s runs each, 2026-12-05;
# sem,elect,register: seeds 1201 and 1202; deadlock and multilock: 10-minute runs under every
# nemesis, clean, 2026-12-06; latch,sem: a 10-minute run under every nemesis, seed 1899710058,
# and one of --snapshots, seed 1868704835, clean, 2026-12-06).
DEFAULT_WORKLOADS = WORKLOADS
# ... but with snapshots (--snapshots, --snapshot-threshold/-trailing) `all` leaves out deadlock:
# its judge replays the whole event stream of its locks, read from the leader after the run, and
# a node's event history is in memory, rebuilt at a restart from the log after its newest
# snapshot (docs/protocol.md "Watch"), so once a node restarted from a snapshot of a few hundred
# entries leads, the stream's start is gone (-COMPACTED: the verdict "unknown"). Named
# (--workloads deadlock) it runs anyway.
SNAPSHOT_LEAVES_OUT = ("deadlock",)
PAUSED_WORKLOADS = ("mutex", "fenced-counter", "control", "rw", "sem", "elect", "multilock",
                    "latch")  # get --pause-ms (GC pauses; latch: between a join and its count-down)
WATCH_PREFIX = "r"  # the first watcher reads fencelock:events:r (register keys, the rw lock)
WORKER_TTL_MS = 1500
REGISTER_TTL_MS = 3000
PAUSE_MS = 3000
# --snapshots: nemeses that make snapshots meet leadership changes and InstallSnapshot.
SNAPSHOT_KINDS = (("pause-leader", 4), ("lag", 3), ("kill", 2), ("partition-leader", 2),
                  ("pause", 1), ("restart-all", 0.5), ("member", 0.5))
ELECT_OBSERVERS = 3  # elect: ELECT.OBSERVE loops checked against each other (observe-gap)
TAIL_S = 8.0  # workers run this long after the faults end, on a healed cluster


class Run:
    def __init__(self, args):
        self.args = args
        self.seed = args.seed
        self.rng = random.Random(self.seed)
        self.out = os.path.abspath(args.out)
        self.t0 = time.monotonic()
        self.faults = 0
        self.fault_counts = {}
        self.client_pauses = 0
        self.workers = []  # dicts: name, workload, proc (Popen), history, log, paused
        self.cluster = None
        self.logf = None
        self.pending = []  # scheduled undo actions: (due, seq, fn, description)
        self.seq = 0
        self.server_fault = False  # a server fault is in force (faults run one at a time)
        self.crashes = []
        self.secure = None  # --secure: the certificates and ACL (secure.py)

    # ---- logging ----
    def log(self, msg):
        line = "%9.3f %d %s" % (time.monotonic() - self.t0, time.monotonic_ns(), msg)
        if self.logf:
            self.logf.write(line + "\n")
            self.logf.flush()
        if self.args.verbose:
            print("# " + line, flush=True)

    # ---- workers ----
    def worker_bin(self):
        return os.path.join(os.path.dirname(os.path.abspath(self.args.bin)), "tests", "torture",
                            "worker")

    def start_workers(self, seconds):
        wls = workloads_of(self.args)
        os.makedirs(os.path.join(self.out, "history"))
        os.makedirs(os.path.join(self.out, "workers"))
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        base = 0
        for wl in wls:
            if wl not in WORKLOADS:
                raise SystemExit("torture: unknown workload %r" % wl)
            n = self.args.clients + (ELECT_OBSERVERS if wl == "elect" else 0)
            for k in range(n):
                name = "%s-%d" % (wl, k)
                hist = os.path.join(self.out, "history", name + ".jsonl")
                logp = os.path.join(self.out, "workers", name + ".log")
                ttl = REGISTER_TTL_MS if wl == "register" else WORKER_TTL_MS
                argv = [self.worker_bin(), "--endpoints", self.cluster.endpoints(),
                        "--workload", wl, "--proc-base", str(base), "--ops", "0",
                        "--seconds", "%.1f" % seconds,
                        "--seed", str((self.seed * 1000003 + base * 7919) % (1 << 62)),
                        "--history", hist, "--ttl", str(ttl)]
                if wl in PAUSED_WORKLOADS:
                    argv += ["--pause-ms", str(PAUSE_MS)]
                if wl == "fenced-counter" and self.args.revoke_pct:
                    argv += ["--revoke-pct", str(self.args.revoke_pct)]
                if wl == "watch" and k == 0:
                    argv += ["--prefix", WATCH_PREFIX]
                if wl == "elect" and k >= self.args.clients:
                    argv += ["--observe", "1"]  # observers beside the clients (candidates)
                if wl == "latch":
                    argv += ["--group", str(n)]  # they meet by the clock: counts from n
                if self.secure:
                    argv += self.secure.worker_flags()
                with open(logp, "wb") as lf:
                    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=lf,
                                         stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)
                self.workers.append({"name": name, "workload": wl, "proc": p, "history": hist,
                                     "log": logp, "paused": False, "ttl": ttl})
                base += 1

    def finish_workers(self, timeout):
        deadline = time.monotonic() + timeout
        for w in self.workers:
            p = w["proc"]
            sigcont_pid(p.pid)
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.log("worker %s did not finish: killed" % w["name"])
                self.crashes.append("worker %s hung past the end of the run" % w["name"])
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(10)
            if p.returncode != 0:
                self.crashes.append("worker %s exited with status %s" % (w["name"], p.returncode))

    def kill_workers(self):
        for w in self.workers:
            p = w["proc"]
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(10)

    # ---- scheduling ----
    def later(self, delay, fn, what):
        self.seq += 1
        self.pending.append((time.monotonic() + delay, self.seq, fn, what))
        self.pending.sort()

    def run_due(self, everything=False):
        """Run the undo actions that are due (all that are pending now, if everything)."""
        batch = len(self.pending) if everything else None
        while self.pending and (batch is None and self.pending[0][0] <= time.monotonic()
                                or batch is not None and batch > 0):
            if batch is not None:
                batch -= 1
            _, _, fn, what = self.pending.pop(0)
            self.log("heal: " + what)
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - a failed heal is logged, heal_all follows
                self.log("heal %s failed: %r" % (what, e))

    def count(self, kind):
        self.faults += 1
        self.fault_counts[kind] = self.fault_counts.get(kind, 0) + 1

    # ---- nemeses ----
    def pick_nodes(self, leader, k, leader_bias=0.6):
        """k distinct healthy nodes, the leader first with probability leader_bias."""
        nodes = [s for s in self.cluster.nodes if s.up()]
        chosen = []
        if leader is not None and leader in nodes and self.rng.random() < leader_bias:
            chosen.append(leader)
        rest = [s for s in nodes if s not in chosen]
        self.rng.shuffle(rest)
        return (chosen + rest)[:k]

    def minority(self):
        return (len(self.cluster.nodes) - 1) // 2

    def end_server_fault(self):
        self.server_fault = False

    def server_nemesis(self):
        c = self.cluster
        leader = c.leader(timeout=2.0)
        lid = leader.node_id if leader else None
        if self.args.snapshots:
            kinds = list(SNAPSHOT_KINDS)
        else:
            kinds = [("kill", 3), ("pause", 3), ("clock", 2), ("member", 1), ("pause-all", 0.3)]
            if self.partitions_ok:
                kinds += [("partition-leader", 2), ("partition-split", 2)]
        if not self.partitions_ok:
            kinds = [(k, w) for k, w in kinds if not k.startswith("partition")]
        kinds = [(k, self.args.weights.get(k, w)) for k, w in kinds if k not in self.args.exclude]
        r = self.rng.uniform(0, sum(w for _, w in kinds))
        for kind, wgt in kinds:
            r -= wgt
            if r < 0:
                break
        k = self.rng.randint(1, self.minority())
        self.server_fault = True
        if kind == "kill":
            victims = self.pick_nodes(leader, k)
            d = self.rng.uniform(0.3, 3.0)
            for s in victims:
                c.kill(s)
            ids = [s.node_id for s in victims]
            self.log("start kill -9 nodes %s (leader %s) for %.2f s" % (ids, lid, d))
            self.later(d, lambda: ([c.restart(s) for s in victims], self.end_server_fault()),
                       "restart nodes %s" % ids)
        elif kind == "pause":
            victims = self.pick_nodes(leader, k)
            d = self.rng.uniform(0.2, 3.0)
            for s in victims:
                c.stop_node(s)
            ids = [s.node_id for s in victims]
            self.log("start SIGSTOP nodes %s (leader %s) for %.2f s" % (ids, lid, d))
            self.later(d, lambda: ([c.cont_node(s) for s in victims], self.end_server_fault()),
                       "SIGCONT nodes %s" % ids)
        elif kind == "pause-leader":
            # A deposed leader that wakes up: it may apply, snapshot and step down in one
            # turn, then get InstallSnapshot from the new leader (snapguard.h).
            victims = self.pick_nodes(leader, 1, leader_bias=1.0)
            d = self.rng.uniform(1.0, 3.0)
            for s in victims:
                c.stop_node(s)
            ids = [s.node_id for s in victims]
            self.log("start SIGSTOP leader %s (leader %s) for %.2f s" % (ids, lid, d))
            self.later(d, lambda: ([c.cont_node(s) for s in victims], self.end_server_fault()),
                       "SIGCONT nodes %s" % ids)
        elif kind == "lag":
            # A follower left behind for longer than the leader keeps its log: it catches up
            # by InstallSnapshot, often while it is writing a snapshot of its own.
            followers = [s for s in c.nodes if s.up() and s is not leader]
            if not followers:
                self.server_fault = False
                return
            s = self.rng.choice(followers)
            d = self.rng.uniform(2.0, 5.0)
            how = "partition" if self.partitions_ok and self.rng.random() < 0.5 else "SIGSTOP"
            if how == "partition":
                c.partition([[s], [x for x in c.nodes if x is not s]])
                undo = c.heal_partition
            else:
                c.stop_node(s)
                undo = lambda: c.cont_node(s)  # noqa: E731
            self.log("start lag: %s follower %d (leader %s) for %.2f s" % (how, s.node_id, lid, d))
            self.later(d, lambda: (undo(), self.end_server_fault()),
                       "end lag of node %d" % s.node_id)
        elif kind == "restart-all":
            victims = [s for s in c.nodes if s.running()]
            d = self.rng.uniform(0.3, 1.5)
            for s in victims:
                c.kill(s)
            self.log("start kill -9 every node %s for %.2f s" % ([s.node_id for s in victims], d))
            self.later(d, lambda: ([c.restart(s) for s in victims], self.end_server_fault()),
                       "restart every node")
        elif kind == "pause-all":
            victims = [s for s in c.nodes if s.up()]
            d = self.rng.uniform(0.5, 2.5)
            for s in victims:
                c.stop_node(s)
            self.log("start SIGSTOP every node %s for %.2f s" % ([s.node_id for s in victims], d))
            self.later(d, lambda: ([c.cont_node(s) for s in victims], self.end_server_fault()),
                       "SIGCONT every node")
        elif kind == "clock":
            victims = self.pick_nodes(leader, k, leader_bias=0.5)
            d = self.rng.uniform(2.0, 8.0)
            off = self.rng.choice(["+1h", "-1h", "+1d", "-1d", "+10m", "-10m", "+1y"])
            for s in victims:
                c.set_clock(s, off)
            ids = [s.node_id for s in victims]
            self.log("start wall clock %s on nodes %s (leader %s) for %.2f s" % (off, ids, lid, d))
            self.later(d, lambda: ([c.set_clock(s, "+0") for s in victims],
                                   self.end_server_fault()), "wall clock +0 on nodes %s" % ids)
        elif kind in ("partition-leader", "partition-split"):
            up = [s for s in c.nodes if s.up()]
            if kind == "partition-leader" and leader is not None:
                side = [leader]
            else:
                side = self.rng.sample(up, k)
            other = [s for s in c.nodes if s not in side]
            d = self.rng.uniform(1.0, 5.0)
            c.partition([side, other])
            self.log("start %s: %s | %s (leader %s) for %.2f s"
                     % (kind, [s.node_id for s in side], [s.node_id for s in other], lid, d))
            self.later(d, lambda: (c.heal_partition(), self.end_server_fault()),
                       "partition removed")
        elif kind == "member":
            followers = [s for s in c.nodes if s.up() and s is not leader]
            if leader is None or not followers or not c.complete():
                fixed = c.repair()
                self.log("member change skipped: no leader, or not every node is a voter%s"
                         % ("; rejoining nodes %s, out of the configuration" % fixed
                            if fixed else ""))
                self.server_fault = False
                return
            s = self.rng.choice(followers)
            self.log("start CLUSTER.REMOVE node %d, wipe its data, rejoin with --join"
                     % s.node_id)
            if not c.remove_member(s):
                self.server_fault = False
                return
            d = self.rng.uniform(0.5, 2.0)
            self.later(d, lambda: (c.rejoin(s), self.wait_voter(s, time.monotonic() + 30.0)),
                       "node %d starts again with --join" % s.node_id)
        self.count(kind)

    def wait_voter(self, s, give_up):
        """The member change ends when the rejoined node is a voter again (or after 30 s:
        a liveness problem, reported)."""
        if self.cluster.complete():
            self.log("node %d is a voter again" % s.node_id)
            self.end_server_fault()
        elif time.monotonic() > give_up:
            msg = "node %d not a voter 30 s after it restarted with --join" % s.node_id
            self.log("LIVENESS " + msg)
            self.crashes.append(msg)
            self.end_server_fault()
        else:
            self.later(0.5, lambda: self.wait_voter(s, give_up),
                       "is node %d a voter?" % s.node_id)

    def worker_nemesis(self):
        cands = [w for w in self.workers if w["proc"].poll() is None and not w["paused"]]
        if not cands:
            return
        w = self.rng.choice(cands)
        ttl = w["ttl"] / 1000.0
        d = self.rng.uniform(ttl + 0.2, ttl + 2.0) if self.rng.random() < 0.7 \
            else self.rng.uniform(0.05, ttl)
        try:
            os.kill(w["proc"].pid, signal.SIGSTOP)
        except ProcessLookupError:
            return
        w["paused"] = True
        self.client_pauses += 1
        self.count("worker-pause")
        self.log("start SIGSTOP worker %s (pid %d) for %.2f s (TTL %.1f s)"
                 % (w["name"], w["proc"].pid, d, ttl))

        def resume():
            sigcont_pid(w["proc"].pid)
            w["paused"] = False
        self.later(d, resume, "SIGCONT worker %s" % w["name"])

    def watch_crashes(self):
        """A node that exited although no fault killed it: a crash. Log it, start it again."""
        for s in self.cluster.nodes:
            if not s.running() and not s.killed and not s.removed and s.proc is not None:
                rc = s.proc.returncode
                msg = "node %d exited by itself (status %s)" % (s.node_id, rc)
                core = keep_core(s.workdir, s.incarnation)
                if core:
                    msg += ", core dump %s" % core
                self.crashes.append(msg)
                self.log("CRASH " + msg)
                s.kill9()  # notes the unexpected exit in s.problems
                s.restart(wait=False)

    def schedule(self, seconds):
        end = time.monotonic() + seconds
        next_server = time.monotonic() + self.rng.uniform(1.0, 3.0)
        next_worker = time.monotonic() + self.rng.uniform(2.0, 6.0)
        while time.monotonic() < end:
            self.run_due()
            self.watch_crashes()
            now = time.monotonic()
            if not self.server_fault and now >= next_server:
                self.server_nemesis()
                next_server = now + self.rng.uniform(0.5, 3.0)
            if now >= next_worker:
                self.worker_nemesis()
                next_worker = now + self.rng.uniform(2.0, 8.0)
            if self.server_fault:
                next_server = max(next_server, now)
            wake = min([end, next_worker] + [p[0] for p in self.pending[:1]] +
                       ([next_server] if not self.server_fault else []))
            time.sleep(max(0.005, min(0.1, wake - time.monotonic())))

    # ---- results ----
    def merge_histories(self, finals):
        events = []
        for w in self.workers:
            try:
                with open(w["history"], encoding="utf-8") as f:
                    for line in f:
                        line = line.strip()
                        if line:
                            events.append(json.loads(line))
            except FileNotFoundError:
                pass
        events.sort(key=lambda e: e["time"])
        t_end = (events[-1]["time"] + 1) if events else time.monotonic_ns()
        for wl, v in finals.items():
            ev = {"type": "final", "workload": wl, "value": v, "time": t_end}
            if isinstance(v, dict):  # more than a value (deadlock: its stream's file)
                ev.update(v)
            events.append(ev)
        path = os.path.join(self.out, "history.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for e in events:
                f.write(json.dumps(e, separators=(",", ":")) + "\n")
        return path, sum(1 for e in events if e.get("type") == "invoke")

    def read_finals(self):
        finals = {}
        wls = {w["workload"] for w in self.workers}
        if "deadlock" in wls:  # its judge: the event stream of its locks, in log order, in a
            # file of its own (the final line's value stays a number for Porcupine). Read after
            # id 0-1, not from "0" (the oldest retained): the judge replays the whole stream, so
            # a history that lost its start must be -COMPACTED (the verdict is then "unknown"),
            # never a silent tail that starts from a state the checker cannot know.
            # In pages: one reply is bounded by the server's output limits (a 10-minute run's
            # stream is ~100,000 events), so read on after the last id until a page is empty.
            ents, after = [], "0-1"
            while True:
                page = stream_entries(self.cluster.call_leader(
                    "XREAD", "COUNT", 5000, "STREAMS", "fencelock:events:dl/", after,
                    timeout=60.0))
                if not isinstance(page, list):
                    ents = page  # an error's text: the verdict is "unknown"
                    break
                if not page:
                    break
                ents += page
                after = page[-1][0]
            path = os.path.join(self.out, "deadlock-stream.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(ents, f)
            finals["deadlock"] = {"value": len(ents) if isinstance(ents, list) else -1,
                                  "stream": path}
        for wl, key in (("fenced-counter", "counter"), ("control", "control")):
            if wl not in wls:
                continue
            r = self.cluster.call_leader("GET", key, timeout=30.0)
            if r is None:
                finals[wl] = 0  # never written
            elif isinstance(r, bytes) and r.isdigit():
                finals[wl] = int(r)
            else:
                self.crashes.append("could not read the final %s value (%r)" % (key, r))
        return finals

    def sanitizer_in_workers(self):
        out = []
        for w in self.workers:
            try:
                with open(w["log"], errors="replace") as f:
                    txt = f.read()
            except OSError:
                continue
            if any(p in txt for p in SANITIZER_PATTERNS):
                out.append("sanitizer report in worker %s (%s)" % (w["name"], w["log"]))
        return out


def _s(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def workloads_of(args):
    """The workloads --workloads names (`all`: DEFAULT_WORKLOADS, but deadlock when snapshots
    are taken: see SNAPSHOT_LEAVES_OUT)."""
    if args.workloads != "all":
        return tuple(args.workloads.split(","))
    if args.snapshots or args.snapshot_threshold or args.snapshot_trailing:
        return tuple(w for w in DEFAULT_WORKLOADS if w not in SNAPSHOT_LEAVES_OUT)
    return DEFAULT_WORKLOADS


def stream_entries(reply):
    """[[id, {field: value}]] of a one-stream XREAD reply (RESP2 or RESP3), [] for nil; or
    the error's text (the checker then says "unknown")."""
    if reply is None:
        return []
    if not isinstance(reply, (list, dict)):
        return "XREAD: %s" % _s(getattr(reply, "text", reply))
    pairs = reply.items() if isinstance(reply, dict) else [(x[0], x[1]) for x in reply]
    out = []
    for _, ents in pairs:
        for i, f in ents:
            out.append([_s(i), {_s(f[k]): _s(f[k + 1]) for k in range(0, len(f), 2)}])
    return out


def keep_core(workdir, incarnation):
    """A core dump the crashed node left in its working directory (core_pattern "core"),
    renamed so that a later crash does not overwrite it; None if there is none."""
    src = os.path.join(workdir, "core")
    if not os.path.exists(src):
        return None
    dst = os.path.join(workdir, "core.%d" % incarnation)
    os.replace(src, dst)
    return dst


def snapshot_settings(args, rng):
    """(threshold, trailing) for --snapshots: drawn from the seed unless given."""
    thr = args.snapshot_threshold or rng.randint(64, 256)
    trail = args.snapshot_trailing or rng.randint(8, 32)
    return thr, trail


def iptables_ok(tag):
    probe = ["OUTPUT", "-p", "tcp", "--dport", "1", "-m", "comment", "--comment", tag, "-j",
             "DROP"]
    try:
        if iptables("-A", *probe).returncode != 0:
            return False
        iptables("-D", *probe)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def summarize_verdict(v):
    extra = ""
    st = v.get("stats", {})
    if v["workload"] in ("fenced-counter", "control"):
        extra = " ok_writes=%s info_writes=%s final=%s" % (st.get("ok_writes"),
                                                           st.get("info_writes"), st.get("final"))
    elif v["workload"] == "rw":
        extra = " holds=%s shared_overlaps=%s max_shared_live=%s ok_writes=%s stale_refused=%s" % (
            st.get("holds"), st.get("shared_overlaps"), st.get("max_shared_live"),
            st.get("ok_writes"), st.get("stale_writes_refused"))
    elif v["workload"] in ("sem", "elect"):
        extra = " grants=%s holds=%s max_live=%s observed_leaders=%s ok_writes=%s probes=%s " \
                "probes_refused=%s" % (st.get("grants"), st.get("holds"), st.get("max_live"),
                                       st.get("observed_leaders"), st.get("ok_writes"),
                                       st.get("probes"), st.get("probes_refused"))
        if v["workload"] == "sem":
            extra += " max_permits_live=%s rev_max_permits=%s rev_judged_grants=%s " \
                     "fifo_checked=%s fifo_large=%s" % (
                         st.get("max_permits_live"), st.get("rev_max_permits"),
                         st.get("rev_judged_grants"), st.get("fifo_checked"),
                         st.get("fifo_large"))
        if v["workload"] == "elect":
            extra += " observers=%s observed=%s observe_cross=%s observe_compacted=%s" % (
                st.get("observers"), st.get("observed"), st.get("observe_cross"),
                st.get("observe_compacted"))
    elif v["workload"] == "deadlock":
        extra = " deadlocks=%s refused=%s (multi %s) waits=%s max_queue=%s stream_events=%s" % (
            st.get("deadlocks"), st.get("refused"), st.get("refused_multi"), st.get("waits"),
            st.get("max_queue"), st.get("stream_events"))
    elif v["workload"] == "multilock":
        extra = " grants=%s holds=%s disjoint_overlaps=%s ok_writes=%s stale_refused=%s" % (
            st.get("multi_grants"), st.get("holds"), st.get("disjoint_overlaps"),
            st.get("ok_writes"), st.get("stale_writes_refused"))
    elif v["workload"] == "latch":
        extra = " latches=%s releases=%s breaks=%s broken_waits=%s nil_waits=%s " \
                "waits_judged_after_break=%s expiry_ms_max=%s barriers=%s barrier_full=%s " \
                "barrier_done=%s barrier_broken=%s" % (
                    st.get("latches"), st.get("releases"), st.get("breaks"),
                    st.get("broken_waits"), st.get("nil_waits"),
                    st.get("waits_judged_after_break"), st.get("expiry_ms_max"),
                    st.get("barriers"), st.get("barrier_full"), st.get("barrier_done"),
                    st.get("barrier_broken"))
    elif v["workload"] == "watch":
        extra = " events=%s delivered=%s resumes=%s compacted=%s puts_checked=%s" % (
            st.get("events"), st.get("delivered"), st.get("resumes"), st.get("compacted"),
            st.get("puts_checked"))
    key = (" key=%s" % v["key"]) if v.get("key") is not None else ""
    n_viol = st.get("violations_total", len(v.get("violations", [])))
    return "verdict %s%s: valid=%s ops=%d violations=%d anomalies=%s%s" % (
        v["workload"], key, v["valid"], v.get("ops", 0), n_viol, v.get("anomalies", 0), extra)


def nothing_tested(verdicts):
    """1 (and a message) when a workload ran but could not have caught what it is for: rw
    readers that never certainly overlapped, watchers that delivered nothing or never covered
    an acknowledged PUT."""
    status = 0
    for v in verdicts:
        st = v.get("stats", {})
        if v["workload"] == "rw" and not st.get("shared_overlaps"):
            print("torture: rw: no two shared holds certainly overlapped: nothing was tested")
            status = 1
        if v["workload"] == "sem" and (st.get("max_live") or 0) < 2:
            print("torture: sem: never two certain permits at once: nothing was tested")
            status = 1
        if v["workload"] == "elect" and (st.get("observed_leaders") or 0) < 2:
            print("torture: elect: observers saw fewer than two leaders: nothing was tested")
            status = 1
        if v["workload"] == "deadlock" and not st.get("deadlocks"):
            print("torture: deadlock: no wait was refused -DEADLOCK: nothing was tested")
            status = 1
        if v["workload"] == "multilock" and not (st.get("multi_grants") and st.get("ok_writes")):
            print("torture: multilock: no multi-lock granted or no fenced write accepted: "
                  "nothing was tested")
            status = 1
        if v["workload"] == "latch" and not (st.get("releases") and st.get("breaks")
                                             and st.get("barrier_full")):
            print("torture: latch: no waiter released, no latch broken or no barrier full: "
                  "nothing was tested")
            status = 1
        if v["workload"] == "watch" and not (st.get("events") and st.get("puts_checked")):
            print("torture: watch: no event delivered or no acknowledged PUT covered by a "
                  "watcher: nothing was tested")
            status = 1
    return status


def latch_controls(history_path):
    """The latch checker's negative controls on this run's own history (as the stale-read
    control's): one fabricated op each (a waiter released just before the last count-down
    was sent, a waiter left parked past the bound after a break, a barrier enter answered
    before the last enterer came), which the checker must flag. 1 if one was not flagged or
    the run had no such situation to build it from."""
    import checkers
    import checkers_latch
    status = 0
    for what, kind, evs in checkers_latch.negative_controls(checkers.load_history(history_path)):
        if evs is None:
            print("torture: latch control (%s): the run has nothing to build it from" % what)
            status = 1
            continue
        v = checkers_latch.check_latch(evs)
        got = set(v["stats"].get("violation_kinds", {}))
        print("torture: latch control (%s): %s" % (what, "flagged %s" % kind if kind in got
                                                   else "NOT FLAGGED (got %s)" % sorted(got)))
        if kind not in got:
            status = 1
    return status


def check(run, history_path):
    try:
        import checkers
    except ImportError as e:
        return [{"workload": "?", "valid": "unknown", "ops": 0, "violations": [],
                 "anomalies": 0, "stats": {"error": "checkers unavailable: %s" % e}}]
    return checkers.check_file(history_path, budget_s=run.args.check_budget)


# ---- the second judge: Porcupine (tests/porcupine, HISTORY.md) ----

PORCUPINE_TIMEOUT_S = 120.0  # per workload; make test's histories check in well under 1 s


def porcupine_bin(args):
    """The porcupine-check binary: --porcupine, or built now by scripts/porcupine.sh (the
    pinned module from the Go module proxy the first time) into build/porcupine."""
    if args.porcupine:
        return args.porcupine
    root = os.path.normpath(os.path.join(HERE, "..", ".."))
    out = os.path.join(root, "build", "porcupine")
    r = subprocess.run([os.path.join(root, "scripts", "porcupine.sh"), out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise SystemExit("torture: could not build the Porcupine checker:\n" + r.stdout)
    return os.path.join(out, "porcupine-check")


def porcupine(binp, history_path, out_dir, timeout_s, expect_illegal="control"):
    """Run porcupine-check on a history: (verdicts, its printed lines, error or None). Its
    search is bounded by timeout_s per workload (then "unknown"); the process by that times
    the five modelled workloads, plus a minute to read the file."""
    os.makedirs(out_dir, exist_ok=True)
    jpath = os.path.join(out_dir, "porcupine.json")
    cmd = [binp, "-timeout", "%gs" % timeout_s, "-out", out_dir, "-json", jpath,
           "-expect-illegal", expect_illegal, history_path]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=5 * timeout_s + 60)
    except subprocess.TimeoutExpired:
        return [], [], "porcupine-check did not finish within %g s" % (5 * timeout_s + 60)
    except OSError as e:
        return [], [], "porcupine-check could not run: %s" % e
    lines = r.stdout.splitlines()
    if r.returncode not in (0, 1, 3):
        return [], lines, "porcupine-check exited %d: %s" % (r.returncode, r.stderr.strip())
    try:
        with open(jpath) as f:
            return json.load(f)["verdicts"] or [], lines, None  # null: nothing it models ran
    except (OSError, ValueError, KeyError) as e:
        return [], lines, "porcupine-check wrote no verdicts (%s)" % e


def stale_read_control(history_path, out_dir, seed):
    """The stale-read negative control on this run's own history: one register read made to
    return the value of a write w1 that a later write w2 overwrote before the read was
    invoked (w1 completed before w2 was invoked). Values are unique, so no linearization can
    give it: both judges must call the result not linearizable. Writes that key's events,
    mutated, to out_dir/history.jsonl; returns (path, description), or None if the history
    has no such triple."""
    import checkers
    ops, _, _ = checkers.pair_ops(e for e in checkers.load_history(history_path)
                                  if e.get("workload") == "register")
    by_key = {}
    for o in ops:
        by_key.setdefault(o.inv.get("key"), []).append(o)
    rng = random.Random(seed)
    for key in sorted(by_key, key=str):
        kops = by_key[key]
        writes = sorted((o for o in kops if o.f in ("write", "cas") and o.type == "ok"),
                        key=lambda o: o.t1)
        reads = [o for o in kops if o.f == "read" and o.type == "ok"]
        rng.shuffle(reads)
        for r in reads[:200]:
            w2 = max((w for w in writes if w.t1 < r.t0), key=lambda w: w.t0, default=None)
            if w2 is None:
                continue
            w1s = [w for w in writes if w.t1 < w2.t0 and w.inv.get("value") != r.ret["value"]]
            if not w1s:
                continue
            w1 = rng.choice(w1s[-20:])
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, "history.jsonl")
            r.ret["value"] = w1.inv["value"]
            with open(path, "w") as f:
                for o in kops:
                    for ev in (o.inv, o.ret):
                        if ev is not None:
                            f.write(json.dumps({k: v for k, v in ev.items() if k != "_line"},
                                               separators=(",", ":")) + "\n")
            return path, ("key %s: the read at line %s returns %r, written at line %s and "
                          "overwritten at line %s before the read began"
                          % (key, r.ret.get("_line"), w1.inv["value"], w1.inv.get("_line"),
                             w2.inv.get("_line")))
    return None


def second_judge(run, history_path, verdicts):
    """Porcupine's verdicts beside the own checkers': printed, and 1 (fail) on a workload it
    finds not linearizable, an unknown verdict, a control whose lost updates it did not flag,
    or a stale-read control either judge let through."""
    status = 0
    binp = porcupine_bin(run.args)
    t = run.args.porcupine_timeout
    pv, lines, err = porcupine(binp, history_path, run.out, t)
    pv = pv or []  # null when no workload of the run has a model (multilock alone)
    for line in lines:
        print(line)
    if err:
        print("torture: porcupine: %s" % err)
        return 1, 1
    illegal = 0
    for v in pv:
        w = v["workload"]
        if v["result"] == "illegal" and w != "control":
            illegal += 1
            print("torture: porcupine: %s is not linearizable (%s model)%s"
                  % (w, v["model"], "; see " + ", ".join(v["html"]) if v.get("html") else ""))
        elif v["result"] == "unknown":
            print("torture: porcupine verdict unknown for %s: no answer within the %g s bound "
                  "(--porcupine-timeout)" % (w, t))
            status = 1
    ctl = [v for v in verdicts if v["workload"] == "control"]
    lost = sum(v.get("anomalies", 0) for v in ctl)
    pctl = [v for v in pv if v["workload"] == "control"]
    if lost and pctl and pctl[0]["result"] == "ok":
        print("torture: porcupine found the control linearizable although the own checkers "
              "counted %d lost updates: the second judge did not bite" % lost)
        status = 1
    # the stale-read control on this run's register history
    if any(v["workload"] == "register" for v in pv):
        sr = stale_read_control(history_path, os.path.join(run.out, "stale-read"), run.seed)
        if sr is None:
            print("torture: stale-read control: no read after two ordered writes of one key")
            status = 1
        else:
            path, what = sr
            import checkers
            own = checkers.check_file(path, budget_s=run.args.check_budget)
            spv, _, serr = porcupine(binp, path, os.path.dirname(path), t, expect_illegal="")
            own_flagged = any(v["valid"] is False for v in own)
            p_res = spv[0]["result"] if spv and not serr else (serr or "no verdict")
            print("torture: stale-read control (%s): own checkers %s, porcupine %s"
                  % (what, "flag it" if own_flagged else "DO NOT FLAG IT", p_res))
            if not own_flagged or p_res != "illegal":
                print("torture: the stale-read control was not flagged by both judges")
                status = 1
    print("torture: judges: checkers %d violations; porcupine %s"
          % (sum(v.get("stats", {}).get("violations_total", len(v.get("violations", [])))
                 for v in verdicts if v["workload"] != "control"),
             ", ".join("%s %s" % (v["workload"], v["result"]) for v in pv) or "nothing to judge"))
    return status, illegal


def parse_weights(v):
    out = {}
    for item in filter(None, v.split(",")):
        k, _, w = item.partition("=")
        try:
            out[k.strip()] = float(w)
        except ValueError:
            raise argparse.ArgumentTypeError("bad weight %r (want kind=number)" % item)
    return out


def main():
    ap = argparse.ArgumentParser(description="fencelock torture suite")
    ap.add_argument("--bin", required=True, help="fencelockd (the worker is found beside it "
                    "in tests/torture/worker)")
    ap.add_argument("--seconds", type=float, default=60.0, help="length of the fault schedule")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--workloads", default="all")
    ap.add_argument("--clients", type=int, default=3, help="workers per workload")
    ap.add_argument("--out", default=None, help="default build/torture/SEED-nN")
    ap.add_argument("--no-faults", action="store_true", help="no nemesis (a baseline run)")
    ap.add_argument("--exclude", default="", type=lambda v: set(filter(None, v.split(","))),
                    help="server nemeses to leave out, comma-separated (kill, pause, clock, "
                    "member, pause-all, partition-leader, partition-split)")
    ap.add_argument("--weights", default={}, type=parse_weights,
                    help="server nemesis weights to change, e.g. member=6,kill=1 (defaults: "
                    "kill 3, pause 3, clock 2, member 1, pause-all 0.3, partition-leader 2, "
                    "partition-split 2)")
    ap.add_argument("--check-budget", type=float, default=120.0,
                    help="seconds of linearizability search per key")
    ap.add_argument("--porcupine", default=None,
                    help="the second judge, tests/porcupine's porcupine-check (default: built "
                    "now by scripts/porcupine.sh into build/porcupine)")
    ap.add_argument("--porcupine-timeout", type=float, default=PORCUPINE_TIMEOUT_S,
                    help="seconds of Porcupine search per workload before its verdict is "
                    "\"unknown\" (a failed run)")
    ap.add_argument("--snapshots", action="store_true",
                    help="snapshot-heavy mode: tiny snapshot thresholds (64..256 entries, "
                    "trailing 8..32, from the seed) and nemeses that pause leaders 1-3 s and "
                    "leave followers behind (InstallSnapshot)")
    ap.add_argument("--snapshot-threshold", type=int, default=0,
                    help="--snapshot-threshold of every node (default: the server's, or "
                    "64..256 with --snapshots)")
    ap.add_argument("--snapshot-trailing", type=int, default=0,
                    help="--snapshot-trailing of every node (default: the server's, or "
                    "8..32 with --snapshots)")
    ap.add_argument("--event-history", type=int, default=0,
                    help="--event-history of every node (default: the server's; a small one "
                    "makes paused watchers meet -COMPACTED, an explicit gap)")
    ap.add_argument("--revoke-pct", type=int, default=0,
                    help="fenced-counter: percent of ops that first revoke the lock (LOCK.REVOKE "
                         "with a 1-50 ms deadline); the fence must refuse the late writes")
    ap.add_argument("--secure", action="store_true",
                    help="client TLS (certificates required), peer mTLS and ACLs on every node; "
                    "workers use TLS and AUTH (tests/torture/secure.py)")
    ap.add_argument("--cores", action="store_true",
                    help="let servers dump core (RLIMIT_CORE unlimited); a crashed node's core "
                    "is kept as nodeN/core.INCARNATION (needs core_pattern \"core\")")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the nemesis log too")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1 << 31)
    if args.out is None:
        args.out = os.path.join("build", "torture", "%d-n%d" % (args.seed, args.nodes))
    print("torture: seed %d (replay: --seed %d --nodes %d --seconds %g)"
          % (args.seed, args.seed, args.nodes, args.seconds), flush=True)
    run = Run(args)
    if args.cores:
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    snap = None
    if args.snapshots or args.snapshot_threshold or args.snapshot_trailing:
        snap = snapshot_settings(args, random.Random(args.seed ^ 0x5eed))
        print("torture: snapshots every %d entries, %d trailing%s"
              % (snap[0], snap[1], " (snapshot nemeses)" if args.snapshots else ""), flush=True)
    if not os.access(run.worker_bin(), os.X_OK):
        raise SystemExit("torture: %s missing (make SAN=1 %s)" % (run.worker_bin(),
                                                                  run.worker_bin()))
    shutil.rmtree(run.out, ignore_errors=True)
    os.makedirs(run.out)
    run.logf = open(os.path.join(run.out, "nemesis.log"), "w")

    def on_term(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_term)

    verdicts, n_ops = [], 0
    try:
        extra = []
        if snap:
            extra = ["--snapshot-threshold", str(snap[0]), "--snapshot-trailing", str(snap[1])]
        if args.event_history:
            extra += ["--event-history", str(args.event_history)]
        if "deadlock" in workloads_of(args):
            # Its judge replays the whole event stream of dl/ from the leader after the run:
            # every node must keep all of it, also after a restart (a node rebuilds its history
            # from the log after its newest snapshot), so such runs keep the whole log and a
            # history large enough for it, unless the command line says otherwise.
            if not snap and not args.snapshot_threshold:
                extra += ["--snapshot-threshold", "1000000000", "--snapshot-log-bytes", "0"]
            if not args.event_history:
                extra += ["--event-history", "20000000", "--event-history-bytes", "4GiB"]
        if args.secure:
            run.secure = Secure(args.bin, run.out)
        run.cluster = Cluster(args.bin, run.out, args.nodes, run.log, extra, run.secure)
        run.partitions_ok = bool(run.cluster.cg_root) and iptables_ok(run.cluster.tag)
        if not run.partitions_ok:
            print("torture: iptables or cgroup v2 unusable: no partitions in this run",
                  flush=True)
        leader = run.cluster.start()
        if leader is None:
            raise RuntimeError("no leader after start")
        run.log("cluster of %d up, leader node %d; seed %d" % (args.nodes, leader.node_id,
                                                                args.seed))
        t_ft = time.monotonic() + 10.0
        while run.cluster.faketime_missing() and time.monotonic() < t_ft:
            time.sleep(0.2)  # a node may still be in its sh wrapper
        missing = run.cluster.faketime_missing()
        if missing:
            raise RuntimeError("libfaketime not loaded in nodes %s" % missing)
        run.start_workers(args.seconds + TAIL_S)
        if not args.no_faults:
            run.schedule(args.seconds)
        else:
            time.sleep(args.seconds)
        run.log("schedule over: healing everything")
        run.run_due(everything=True)
        run.cluster.heal_all()
        run.server_fault = False
        if run.cluster.leader(timeout=30.0) is None:
            run.crashes.append("no leader 30 s after the heal")
        t_heal = time.monotonic()
        while not run.cluster.complete() and time.monotonic() < t_heal + 30.0:
            time.sleep(0.5)
        fixed = run.cluster.repair()
        if fixed:
            run.log("nodes %s were out of the configuration: rejoining them" % fixed)
            while not run.cluster.complete() and time.monotonic() < t_heal + 60.0:
                time.sleep(0.5)
        if not any(run.cluster.complete() or time.sleep(1.0) for _ in range(3)):  # one no-answer
            run.crashes.append("not every node a voter 30 s after the heal (voters %s)"
                               % run.cluster.voters())
        run.log("healed; waiting for the workers")
        run.finish_workers(TAIL_S + 60.0)
        finals = run.read_finals()
        run.log("final values %r" % finals)
        history_path, n_ops = run.merge_histories(finals)
    finally:
        try:
            run.kill_workers()
            run.run_due(everything=True)
            if run.cluster:
                run.cluster.heal_all()
                run.cluster.stop_all()
        finally:
            if run.cluster:
                run.cluster.cleanup()
    problems = list(run.crashes) + run.sanitizer_in_workers()
    for s in run.cluster.nodes:
        problems += ["node %d: %s" % (s.node_id, p) for p in s.problems]
        rep = s.sanitizer_report()
        if rep:
            lines = rep.splitlines()
            end = next((i for i, x in enumerate(lines) if "ABORTING" in x), len(lines) - 1)
            problems.append("node %d: sanitizer report (%s):\n%s"
                            % (s.node_id, s.log_path, "\n".join(lines[:end + 1])))
    run.log("checking %s" % history_path)
    verdicts = check(run, history_path)
    with open(os.path.join(run.out, "verdicts.json"), "w") as f:
        json.dump({"seed": args.seed, "nodes": args.nodes, "seconds": args.seconds,
                   "faults": run.fault_counts, "client_pauses": run.client_pauses,
                   "problems": problems, "verdicts": verdicts}, f, indent=1, default=str)
    violations = 0
    status = 0
    for v in verdicts:
        print(summarize_verdict(v))
        n_viol = v.get("stats", {}).get("violations_total", len(v.get("violations", [])))
        if v["workload"] != "control" or v["valid"] is False:
            violations += n_viol
        for x in v.get("violations", [])[:3]:
            print("  violation: %s" % json.dumps(x, default=str)[:2000])
        if v["valid"] == "unknown":
            print("torture: verdict unknown for %s: %s" % (v["workload"], v.get("stats", {})
                                                           .get("unknown_reason",
                                                                v.get("stats", {}).get("error"))))
            status = 1
    ctl = [v for v in verdicts if v["workload"] == "control"]
    if ctl and sum(v.get("anomalies", 0) for v in ctl) == 0:  # workers always pause
        print("torture: control showed no lost update although clients paused: nothing was "
              "tested")
        status = 1
    status = max(status, nothing_tested(verdicts))
    if "latch" in workloads_of(args):
        status = max(status, latch_controls(history_path))
    p_status, p_illegal = second_judge(run, history_path, verdicts)
    status = max(status, p_status)
    violations += p_illegal
    for p in problems:
        print("torture: problem: %s" % p)
    violations += len(problems)
    print("torture: faults %s, client pauses %d, output in %s"
          % (json.dumps(run.fault_counts, sort_keys=True), run.client_pauses, run.out))
    print("torture: %d ops, %d faults, %d violations" % (n_ops, run.faults, violations))
    if violations:
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
