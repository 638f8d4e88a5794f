# SPDX-License-Identifier: Apache-2.0
"""Fault injection on real 3-node clusters (--election-ms 400 --heartbeat-ms 40): a leader frozen
with SIGSTOP, all three nodes killed with -9 at once, a leader killed under a contended fenced
register, a leader cut from its followers by iptables while clients still reach it.

What must hold (docs/protocol.md, docs/server.md): a node that is not the ready leader
acknowledges no write, grants no lock and serves no linearizable read; every acknowledged change
survives kill -9 and fail-over; tokens only grow; `REQ sid seq` makes retries exactly-once.

The partition test needs root (iptables, cgroup v2) and is skipped with a message otherwise; its
rules carry the comment `fencelock-test` and are deleted even when the test fails.
"""

import os
import subprocess
import threading
import time

from helpers import (eq, expect_err, expect_int, expect_ok, kv_get, lock_info, ok,
                     session_info, wait_queued, wait_until, Keepalive)
from resp import Conn, RespError, text, ConnectionClosed, ReplyTimeout
from server import kill9_all
from test_cluster import info, ready_leader, start_cluster

RETRY = ("NOTLEADER", "UNKNOWN", "NOLEADER")


def role(s):
    return text((info(s) or {}).get("role"))


def rev_of(s):
    return (info(s) or {}).get("revision")


def same_revision(servers):
    revs = [rev_of(s) for s in servers]
    return revs[0] if revs[0] is not None and len(set(revs)) == 1 else None


def is_retry_error(r):
    return isinstance(r, RespError) and r.code in RETRY


def describe(r):
    return "-%s" % r.text if isinstance(r, RespError) else repr(r)


class GiveUp(Exception):
    pass


class Router:
    """A client connection that follows the leader: -NOTLEADER host:port reconnects there;
    -NOLEADER or a refused/dropped connection moves on to the next node after a short pause;
    -UNKNOWN retries (the caller's REQ sid seq makes that safe). Every retry is bounded."""

    def __init__(self, servers, port=None, read_timeout=5.0):
        self.ports = [s.port for s in servers]
        self.port = port if port is not None else self.ports[0]
        self.read_timeout = read_timeout
        self.conn = None
        self.retries = {}  # reason -> count

    def _note(self, why):
        self.retries[why] = self.retries.get(why, 0) + 1

    def _drop(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _next(self):
        i = self.ports.index(self.port) if self.port in self.ports else -1
        self.port = self.ports[(i + 1) % len(self.ports)]

    def call(self, *args, budget=10.0):
        deadline = time.monotonic() + budget
        while True:
            if time.monotonic() > deadline:
                self._drop()
                raise GiveUp("%s: no definite answer within %.0f s (retries %r)"
                             % (" ".join(map(str, args)), budget, self.retries))
            try:
                if self.conn is None:
                    self.conn = Conn(self.port, timeout=1.0)
                r = self.conn.call(*args, timeout=self.read_timeout)
            except (OSError, ConnectionClosed, ReplyTimeout) as e:
                self._note(type(e).__name__)
                self._drop()
                self._next()
                time.sleep(0.05)
                continue
            if not is_retry_error(r):
                return r
            self._note(r.code)
            if r.code == "NOTLEADER":
                addr = r.text.split(" ", 1)[1] if " " in r.text else ""
                self._drop()
                try:
                    self.port = int(addr.rsplit(":", 1)[1])
                except (IndexError, ValueError):
                    self._next()
            elif r.code == "NOLEADER":
                self._drop()
                self._next()
            time.sleep(0.03)

    def close(self):
        self._drop()


def wait_reply(conn, timeout):
    """The next reply on conn, or the exception that stood for none."""
    try:
        return conn.read_reply(timeout)
    except (ReplyTimeout, ConnectionClosed, OSError) as e:
        return e


# ---------------------------------------------------------------------------------------------
# 1. A leader frozen by SIGSTOP


def freeze_round(ctx, servers, old, holder, waiter, token, rnd):
    """One round: `holder` holds l with `token`, `waiter` is parked in LOCK l WAIT on the leader
    `old`, which is then frozen; returns (new leader, waiter's token, what the woken node said)."""
    others = [s for s in servers if s is not old]
    parked = Conn(old.port)
    parked.send("LOCK", "l", waiter, "WAIT", 10000)
    with Conn(old.port) as c:
        wait_queued(c, "l", waiter)
        expect_int(c.call("PUT", "k", "old%d" % rnd), "PUT k on the leader before the freeze")

    t_stop = time.monotonic()
    old.sigstop()
    new = ready_leader(others, timeout=10)
    elected = time.monotonic() - t_stop
    ka = Keepalive(new.port, [holder, waiter], interval=0.3)  # the sessions live on the new one
    ctx.defer(lambda: ka._stop.set())
    n = Conn(new.port)
    li = lock_info(n, "l")
    eq((li["holder"], li["token"], li["waiters"]), (holder, token, [waiter]),
       "round %d: holder and queue on the new leader" % rnd)
    expect_ok(n.call("UNLOCK", "l", holder), "round %d: the holder unlocks on the new leader"
              % rnd)
    t2 = expect_int(n.call("LOCK", "l", waiter), "round %d: the waiter re-issues LOCK on the "
                    "new leader" % rnd)
    assert t2 > token, "token on the new leader %d must exceed %d" % (t2, token)
    eq(lock_info(n, "l")["holder"], waiter)
    expect_int(n.call("PUT", "k", "new%d" % rnd), "round %d: the new leader acknowledges a write"
               % rnd)
    expect_int(n.call("PUT", "k2", "x", "FENCE", "l", t2), "fenced write with the new token")
    expect_err(n.call("PUT", "k2", "y", "FENCE", "l", token), "STALE", "the old token")

    # Requests that reach the frozen node now are read the moment it wakes up, possibly
    # before it learnt that it was deposed.
    g = Conn(old.port)
    g.send("GET", "k")
    w = Conn(old.port)
    w.send("PUT", "k", "frozen%d" % rnd)
    lk = Conn(old.port)
    lk.send("LOCK", "free%d" % rnd, holder)  # a try-lock on a free lock
    time.sleep(max(0.0, 2.5 - (time.monotonic() - t_stop)))
    old.sigcont()
    t_cont = time.monotonic()

    r_get, r_put, r_lk, r_parked = (wait_reply(x, 5.0) for x in (g, w, lk, parked))
    for x in (g, w, lk, parked):
        x.close()
    assert r_get != ("old%d" % rnd).encode(), "STALE READ: GET k on the deposed leader " \
        "answered old%d although the new leader had acknowledged PUT k new%d" % (rnd, rnd)
    assert is_retry_error(r_get) or r_get == ("new%d" % rnd).encode(), \
        "GET k sent to the frozen leader, answered after SIGCONT: %s" % describe(r_get)
    assert is_retry_error(r_put), "PUT sent to the frozen leader must not be acknowledged; " \
        "got %s" % describe(r_put)
    assert is_retry_error(r_lk), "try-LOCK sent to the frozen leader must not be granted; " \
        "got %s" % describe(r_lk)
    if isinstance(r_parked, int):
        if r_parked == t2:
            raise AssertionError(
                "round %d: the parked LOCK l %d WAIT 10000 on the deposed leader (node %d) was "
                "answered with token %d after SIGCONT, instead of -NOTLEADER/-NOLEADER/-UNKNOWN:"
                " it is the grant the new leader (node %d) committed, applied by the deposed "
                "node as a follower and delivered to a request it had accepted as leader, "
                "before it noticed it had stepped down" % (rnd, waiter, old.node_id, r_parked,
                                                            new.node_id))
        raise AssertionError("round %d: the deposed leader handed the parked LOCK a token "
                             "%d that is not the committed grant %d" % (rnd, r_parked, t2))
    assert is_retry_error(r_parked), "round %d: the parked LOCK l WAIT 10000 on the deposed " \
        "leader: expected -NOTLEADER/-UNKNOWN/-NOLEADER after SIGCONT, got %s" \
        % (rnd, describe(r_parked))

    wait_until(lambda: role(old) == "follower", timeout=5, interval=0.02,
               what="the old leader reporting role follower")
    follower_after = time.monotonic() - t_cont
    wait_until(lambda: (info(old) or {}).get("leader_id") == new.node_id, timeout=5,
               interval=0.02, what="the old leader knowing node %d leads" % new.node_id)
    with Conn(old.port) as o:
        r = o.call("GET", "k")
        expect_err(r, "NOTLEADER", "GET on the old leader after it stepped down")
        eq(r.text, "NOTLEADER 127.0.0.1:%d" % new.port, "redirect to the new leader")
        expect_err(o.call("PUT", "k", "x"), "NOTLEADER", "PUT on the old leader")
    eq(ready_leader(servers, timeout=5), new, "leadership stayed with the new leader")
    expect_int(n.call("PUT", "k3", "z%d" % rnd), "still acknowledging writes after SIGCONT")
    want = rev_of(new)
    wait_until(lambda: (rev_of(old) or 0) >= want, timeout=10, interval=0.05,
               what="the old leader's revision catching up to %s" % want)
    eq(n.call("GET", "k"), ("new%d" % rnd).encode(), "the PUT sent to the frozen node did "
       "not apply")
    eq(n.call("LOCK.INFO", "free%d" % rnd), None, "the try-LOCK sent to the frozen node")
    with Conn(old.port) as o:
        expect_ok(o.call("READONLY"))
        eq(o.call("GET", "k"), ("new%d" % rnd).encode(), "old leader's own state")
        eq(lock_info(o, "l"), lock_info(n, "l"), "old leader's view of lock l")
    ka.stop()
    n.close()
    print("# round %d: election %.2f s after SIGSTOP; follower %.2f s after SIGCONT; the woken "
          "node answered GET %s, PUT %s, LOCK %s, the parked LOCK WAIT %s"
          % (rnd, elected, follower_after, describe(r_get), describe(r_put), describe(r_lk),
             describe(r_parked)))
    return new, t2


def test_sigstop_leader_steps_down_and_grants_nothing(ctx):
    """Two rounds (the race between the apply of the new leader's grant and the frozen node
    noticing its step-down goes either way): s1 holds l and s2 waits on the frozen leader,
    then the roles swap and the second leader is frozen."""
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        s1 = expect_int(c.call("SESSION.OPEN", 10000), "s1")
        s2 = expect_int(c.call("SESSION.OPEN", 10000), "s2")
        t1 = expect_int(c.call("LOCK", "l", s1), "s1 takes l")
    ctx.defer(lambda: [s.sigcont() for s in servers])
    leader, t2 = freeze_round(ctx, servers, leader, s1, s2, t1, 1)
    freeze_round(ctx, servers, leader, s2, s1, t2, 2)


test_sigstop_leader_steps_down_and_grants_nothing.timeout = 30


# ---------------------------------------------------------------------------------------------
# 2. All three nodes killed with -9 at the same time


def test_restart_all_three_at_once_keeps_acknowledged_state(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    c = Conn(leader.port)
    a, b, d = (expect_int(c.call("SESSION.OPEN", 30000, "NAME", nm), "open %s" % nm)
               for nm in ("a", "b", "d"))
    ta = expect_int(c.call("LOCK", "l", a), "a takes l")
    tm = expect_int(c.call("LOCK", "m", d), "d takes m")
    parked = []
    for sid in (b, d):
        p = Conn(leader.port)
        p.send("LOCK", "l", sid, "WAIT", 20000)
        wait_queued(c, "l", sid)
        parked.append(p)
    expect_int(c.call("PUT", "plain", "1"))
    expect_int(c.call("PUT", "leased", "2", "LEASE", a))
    expect_int(c.call("PUT", "fenced", "3", "FENCE", "l", ta))
    expect_int(c.call("PUT", "plain", "4"))  # version 2
    keys = ("plain", "leased", "fenced")
    before_kv = {k: kv_get(c, k) for k in keys}
    before_locks = {nm: lock_info(c, nm) for nm in ("l", "m")}
    eq(before_locks["l"]["waiters"], [b, d])

    def sess(conn, sid):
        si = session_info(conn, sid)
        assert not isinstance(si, RespError), "SESSION.INFO %d -> %r" % (sid, si)
        si = dict(si)
        si.pop("remaining_ms", None)
        return si
    before_sess = {sid: sess(c, sid) for sid in (a, b, d)}
    # The last acknowledged change: all three must have it before the crash is meaningful.
    rev_before = expect_int(c.call("PUT", "last", "5"))
    wait_until(lambda: all((rev_of(s) or 0) >= rev_before for s in servers), timeout=5,
               interval=0.02, what="all nodes applying revision %d" % rev_before)
    c.close()

    kill9_all(servers)
    for p in parked:
        r = wait_reply(p, 2.0)
        assert isinstance(r, (ConnectionClosed, OSError)), \
            "parked LOCK on a killed node: %r" % (r,)
    for s in servers:
        s.restart(wait=False)
    leader = ready_leader(servers, timeout=20)
    c = Conn(leader.port)
    for sid in (a, b, d):
        eq(sess(c, sid), before_sess[sid], "SESSION.INFO %d after restarting all" % sid)
        expect_int(c.call("SESSION.KEEPALIVE", sid), "keepalive %d after restarting all" % sid)
    for nm in ("l", "m"):
        eq(lock_info(c, nm), before_locks[nm], "LOCK.INFO %s after restarting all" % nm)
    for k in keys:
        eq(kv_get(c, k), before_kv[k], "KV.GET %s after restarting all" % k)
    eq(c.call("GET", "last"), b"5", "the last acknowledged PUT")
    assert rev_of(leader) >= rev_before

    expect_ok(c.call("UNLOCK", "l", a), "a unlocks: b is next")
    tb = expect_int(c.call("LOCK", "l", b), "b holds l after the unlock")
    assert tb > rev_before, "new grant's token %d must exceed every earlier token and " \
        "revision (%d; tokens %d, %d)" % (tb, rev_before, ta, tm)
    eq(lock_info(c, "l")["waiters"], [d], "d still queued")
    expect_err(c.call("PUT", "fenced", "x", "FENCE", "l", ta), "STALE", "a's old token")
    tn = expect_int(c.call("LOCK", "n", a), "a fresh lock")
    assert tn > tb, (tn, tb)
    c.close()


# ---------------------------------------------------------------------------------------------
# 3. Contended fenced register, leader killed mid-run

CLIENTS = 8
LOAD_SECONDS = 10.0
KILL_AT = 3.0


class Shared:
    def __init__(self):
        self.lock = threading.Lock()
        self.accepted = []   # (revision, token, client, value, ack time)
        self.grants = []     # (token, client)
        self.errors = []
        self.cycles = 0

    def err(self, msg):
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(msg)


class RegisterClient(threading.Thread):
    def __init__(self, idx, servers, sid, port, shared, stop):
        super().__init__(daemon=True)
        self.idx, self.sid, self.shared, self.stop = idx, sid, shared, stop
        self.r = Router(servers, port=port)
        self.seq = 0

    def req(self):
        self.seq += 1
        return ("REQ", self.sid, self.seq)

    def run(self):
        try:
            while not self.stop.is_set():
                self.cycle()
        except GiveUp as e:
            self.shared.err("client %d gave up: %s" % (self.idx, e))
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.shared.err("client %d died: %r" % (self.idx, e))
        finally:
            self.r.close()

    def cycle(self):
        sh, sid = self.shared, self.sid
        t = self.r.call("LOCK", "reg", sid, "WAIT", 2000, *self.req())
        if t is None:
            return  # the wait elapsed: try again
        if not isinstance(t, int):
            sh.err("client %d: LOCK -> %s" % (self.idx, describe(t)))
            time.sleep(0.1)
            return
        with sh.lock:
            sh.grants.append((t, self.idx))
        g = self.r.call("GET", "counter")
        if isinstance(g, RespError):
            sh.err("client %d: GET -> %s" % (self.idx, describe(g)))
            return
        v = int(g or b"0") + 1
        p = self.r.call("PUT", "counter", str(v), "FENCE", "reg", t, *self.req())
        if isinstance(p, int):
            with sh.lock:
                sh.accepted.append((p, t, self.idx, v, time.monotonic()))
        else:
            sh.err("client %d: fenced PUT with its token %d -> %s" % (self.idx, t, describe(p)))
        u = self.r.call("UNLOCK", "reg", sid, *self.req())
        if u != "OK":
            sh.err("client %d: UNLOCK after token %d -> %s" % (self.idx, t, describe(u)))
        with sh.lock:
            sh.cycles += 1


class SessionKeeper(threading.Thread):
    """Keeps every client's session alive on whoever leads."""

    def __init__(self, servers, sids, shared, stop):
        super().__init__(daemon=True)
        self.sids, self.shared, self.stop = sids, shared, stop
        self.r = Router(servers, read_timeout=2.0)

    def run(self):
        try:
            while not self.stop.is_set():
                for sid in self.sids:
                    r = self.r.call("SESSION.KEEPALIVE", sid, budget=8.0)
                    if not isinstance(r, int):
                        self.shared.err("keepalive %d -> %s" % (sid, describe(r)))
                self.stop.wait(0.3)
        except GiveUp as e:
            self.shared.err("keepalive gave up: %s" % e)
        finally:
            self.r.close()


def test_contended_fenced_register_survives_leader_kill(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    with Conn(leader.port) as c:
        sids = [expect_int(c.call("SESSION.OPEN", 3000), "session %d" % i)
                for i in range(CLIENTS)]
    shared = Shared()
    stop, stop_keeper = threading.Event(), threading.Event()
    ctx.defer(stop.set)
    ctx.defer(stop_keeper.set)
    keeper = SessionKeeper(servers, sids, shared, stop_keeper)
    keeper.start()
    clients = [RegisterClient(i, servers, sids[i], leader.port, shared, stop)
               for i in range(CLIENTS)]
    t0 = time.monotonic()
    for cl in clients:
        cl.start()

    time.sleep(KILL_AT)
    before_kill = len(shared.accepted)
    t_kill = time.monotonic()
    leader.kill9()
    new = ready_leader([s for s in servers if s is not leader], timeout=10)
    t_new = time.monotonic()
    time.sleep(1.5)
    leader.restart(wait=False)
    time.sleep(max(0.0, LOAD_SECONDS - (time.monotonic() - t0)))
    stop.set()
    for cl in clients:
        cl.join(15)
    stop_keeper.set()
    keeper.join(10)
    assert not any(cl.is_alive() for cl in clients) and not keeper.is_alive(), \
        "client threads did not finish"
    assert not shared.errors, "client errors:\n  " + "\n  ".join(shared.errors)

    acc = sorted(shared.accepted)
    after_new = sum(1 for a in acc if a[4] > t_new)
    assert before_kill >= 5 and after_new >= 5, \
        "the run must cover the fail-over: %d PUTs before the kill, %d after the new leader" \
        % (before_kill, after_new)
    revs = [a[0] for a in acc]
    eq(len(set(revs)), len(revs), "every acknowledged PUT has its own revision")
    for prev, cur in zip(acc, acc[1:]):
        assert cur[1] > prev[1], "fenced PUT at rev %d (client %d) carries token %d, not above " \
            "token %d of the PUT at rev %d (client %d)" % (cur[0], cur[2], cur[1], prev[1],
                                                           prev[0], prev[2])
    for i, a in enumerate(acc):
        eq(a[3], i + 1, "value written by the PUT at rev %d (client %d, token %d): every "
           "holder read the previous holder's write" % (a[0], a[2], a[1]))
    owners = {}
    for tok, cl in shared.grants:
        owners.setdefault(tok, set()).add(cl)
    shared_tokens = {t: cs for t, cs in owners.items() if len(cs) > 1}
    assert not shared_tokens, "tokens granted to more than one client: %r" % shared_tokens
    for rev, tok, cl, _v, _t in acc:
        eq(owners.get(tok), {cl}, "token %d of the PUT at rev %d" % (tok, rev))

    final = ready_leader(servers, timeout=10)
    with Conn(final.port) as c:
        eq(c.call("GET", "counter"), str(len(acc)).encode(),
           "final counter = number of acknowledged PUTs (%d)" % len(acc))
        li = lock_info(c, "reg")
        assert li is None or li.get("holder") == 0, "reg still held after the run: %r" % li
    wait_until(lambda: same_revision(servers), timeout=10, interval=0.05,
               what="all three nodes (the killed one restarted) at the same revision")
    retries = {}
    for cl in clients:
        for k, v in cl.r.retries.items():
            retries[k] = retries.get(k, 0) + v
    print("# %d acknowledged PUTs (%d before the kill), %d grants, election %.2f s, retries %r"
          % (len(acc), before_kill, len(shared.grants), t_new - t_kill, retries))


test_contended_fenced_register_survives_leader_kill.timeout = 45


# ---------------------------------------------------------------------------------------------
# 4. A leader cut from both followers (iptables on loopback), clients still reach it

TAG = "fencelock-test"  # every rule carries it: `iptables -S | grep fencelock-test` finds leftovers


def _iptables(*args):
    return subprocess.run(["iptables", "-w", "5"] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=20)


def iptables_usable():
    """None if rules with a comment match can be added and deleted, else why not."""
    probe = ["INPUT", "-p", "tcp", "--dport", "1", "-m", "comment", "--comment", TAG, "-j",
             "DROP"]
    try:
        p = _iptables("-A", *probe)
        if p.returncode != 0:
            return "iptables -A failed: %s" % p.stderr.strip()
        p = _iptables("-D", *probe)
        if p.returncode != 0:
            return "iptables -D failed: %s" % p.stderr.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return "iptables unavailable: %s" % e
    return None


def cgroup2_root():
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 2 and parts[2] == "cgroup2":
                    return parts[1]
    except OSError:
        pass
    return None


def tcp_sockets(pid):
    """(local port, remote port) of every IPv4 TCP socket process `pid` owns."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return []
    for fd in fds:
        try:
            link = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = []
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            p = line.split()
            if p[9] in inodes:
                out.append((int(p[1].split(":")[1], 16), int(p[2].split(":")[1], 16)))
    return out


class Partition:
    """Cut `node` from `peers` on loopback while clients still reach it: drop every packet
    to/from its Raft listen port, every packet of the Raft connections it opened (by 4-tuple),
    and (cgroup v2 match on OUTPUT) any Raft connection it opens later; a sweeper thread also
    blocks, by 4-tuple, any new Raft connection of the node within ~10 ms (the only guard
    without cgroup v2). heal() deletes exactly the rules it added; it is idempotent."""

    def __init__(self, node, peers):
        self.node, self.peers = node, peers
        self.peer_raft = {s.raft_port for s in peers}
        self.rules = []
        self.blocked = set()
        self.late = 0          # Raft connections of the node first seen after start()
        self.cgroup = None     # directory of the cgroup the node was moved to
        self.orig_cgroup = None
        self.mu = threading.Lock()
        self.stop = threading.Event()
        self.sweeper = None

    def _add(self, chain, *match):
        rule = [chain, "-p", "tcp"] + [str(m) for m in match] + \
            ["-m", "comment", "--comment", TAG, "-j", "DROP"]
        p = _iptables("-A", *rule)
        if p.returncode != 0:
            raise RuntimeError("iptables -A %s: %s" % (" ".join(rule), p.stderr.strip()))
        self.rules.append(rule)

    def _move_to_cgroup(self, pid):
        root = cgroup2_root()
        if not root:
            return "no cgroup2 mount"
        try:
            with open("/proc/%d/cgroup" % pid) as f:
                for line in f:
                    if line.startswith("0::"):
                        self.orig_cgroup = line[3:].strip()
            name = "%s-%d" % (TAG, pid)
            path = os.path.join(root, name)
            os.makedirs(path, exist_ok=True)
            self.cgroup = path
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(pid))
            self._add("OUTPUT", "-m", "cgroup", "--path", name, "-m", "multiport", "--dports",
                      ",".join(str(p) for p in sorted(self.peer_raft)))
        except (OSError, RuntimeError) as e:
            return str(e)
        return None

    def start(self):
        with self.mu:
            lr = self.node.raft_port
            self._add("INPUT", "--dport", lr)
            self._add("INPUT", "--sport", lr)
            # Sockets created from now on are matched by cgroup; then the existing ones.
            why = self._move_to_cgroup(self.node.proc.pid)
            if why:
                print("# no cgroup match for new Raft connections (%s): the sweeper guards" % why)
            self._sweep()
        self.late = 0
        self.sweeper = threading.Thread(target=self._sweep_loop, daemon=True)
        self.sweeper.start()

    def _sweep(self):
        if not self.node.running():
            return
        for lp, rp in tcp_sockets(self.node.proc.pid):
            if rp in self.peer_raft and (lp, rp) not in self.blocked:
                self._add("INPUT", "--sport", lp, "--dport", rp)
                self._add("INPUT", "--sport", rp, "--dport", lp)
                self.blocked.add((lp, rp))
                self.late += 1

    def _sweep_loop(self):
        while not self.stop.wait(0.01):
            with self.mu:
                if self.stop.is_set():
                    return
                try:
                    self._sweep()
                except (OSError, RuntimeError) as e:
                    print("# partition sweeper: %s" % e)

    def heal(self):
        self.stop.set()
        if self.sweeper is not None:
            self.sweeper.join(5)
        errors = []
        with self.mu:
            while self.rules:
                rule = self.rules.pop()
                p = _iptables("-D", *rule)
                if p.returncode != 0:
                    errors.append("iptables -D %s: %s" % (" ".join(rule), p.stderr.strip()))
            if self.cgroup:
                back = os.path.join(os.path.dirname(self.cgroup),
                                    (self.orig_cgroup or "/").lstrip("/"), "cgroup.procs")
                try:
                    if self.node.running():
                        with open(back, "w") as f:
                            f.write(str(self.node.proc.pid))
                    os.rmdir(self.cgroup)
                except OSError as e:
                    errors.append("cgroup cleanup: %s" % e)
                self.cgroup = None
        if errors:
            raise RuntimeError("; ".join(errors))


def test_partitioned_leader_acknowledges_nothing(ctx):
    why = iptables_usable()
    if why:
        print("# SKIP test_partitioned_leader_acknowledges_nothing: %s" % why)
        return
    servers = start_cluster(ctx)
    old = ready_leader(servers)
    peers = [s for s in servers if s is not old]
    c = Conn(old.port)
    s = expect_int(c.call("SESSION.OPEN", 30000), "session opened before the partition")
    expect_int(c.call("PUT", "a", "1"), "PUT a 1 before the partition")
    rev0 = expect_int(c.call("PUT", "z", "0"))
    wait_until(lambda: all((rev_of(p) or 0) >= rev0 for p in peers), timeout=5, interval=0.02,
               what="followers applying the writes before the partition")
    c.close()

    part = Partition(old, peers)
    ctx.defer(part.heal)
    t_part = time.monotonic()
    part.start()

    # The minority side: a prober sends writes, try-locks and session opens to the old leader
    # until the heal; a request left unanswered stays pending on its connection (read later).
    answers, pending, stop = [], [], threading.Event()

    def probe():
        i, pc = 0, None
        while not stop.is_set():
            for cmd in (("PUT", "min%d" % i, "x"), ("LOCK", "m", s), ("SESSION.OPEN", 5000),
                        ("DEL", "a")):
                if stop.is_set():
                    break
                try:
                    if pc is None:
                        pc = Conn(old.port, timeout=1.0)
                        ctx.conns.append(pc)  # closed by the runner even if the test fails
                    pc.send(*cmd)
                    r = pc.read_reply(0.5)
                except ReplyTimeout:
                    pending.append((cmd, pc))  # replies come in order: a new connection
                    pc = None
                    continue
                except (OSError, ConnectionClosed) as e:
                    answers.append((cmd, e))
                    pc = None
                    continue
                answers.append((cmd, r))
            i += 1
            time.sleep(0.005)
        if pc is not None:
            pc.close()
    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    ctx.defer(stop.set)

    new = ready_leader(peers, timeout=10)
    t_new = time.monotonic()
    n = Conn(new.port)
    acked = {"a": b"2"}
    expect_int(n.call("PUT", "a", "2"), "the majority acknowledges PUT a 2")
    s2 = expect_int(n.call("SESSION.OPEN", 30000))
    tm = expect_int(n.call("LOCK", "m", s2), "the majority grants m")
    for i in range(10):
        expect_int(n.call("PUT", "b%d" % i, str(i), "FENCE", "m", tm), "PUT b%d" % i)
        acked["b%d" % i] = str(i).encode()
    expect_int(n.call("SESSION.KEEPALIVE", s), "the pre-partition session on the new leader")

    # A linearizable read on the old leader now would be stale if it answered a=1.
    stale = []
    for _ in range(3):
        with Conn(old.port, timeout=1.0) as gc:
            gc.send("GET", "a")
            r = wait_reply(gc, 1.0)
        if r == b"1":
            stale.append(r)
    wait_until(lambda: role(old) != "leader", timeout=5, interval=0.05,
               what="the cut-off leader stepping down (contact quorum lost)")
    minority_role = role(old)
    time.sleep(max(0.0, 3.0 - (time.monotonic() - t_part)))
    stop.set()
    prober.join(5)
    t_heal = time.monotonic()
    part.heal()
    deadline = time.monotonic() + 3.0
    late = [(cmd, wait_reply(pc, max(0.05, deadline - time.monotonic()))) for cmd, pc in pending]
    for _cmd, pc in pending:
        pc.close()

    assert not stale, "STALE READ: GET a on the cut-off old leader answered 1 after the " \
        "majority acknowledged PUT a 2"
    bad = [(cmd, r) for cmd, r in answers + late
           if not (is_retry_error(r) or isinstance(r, (ReplyTimeout, ConnectionClosed,
                                                        OSError)))]
    assert not bad, "the cut-off leader acknowledged or granted: %s" % "; ".join(
        "%s -> %s" % (" ".join(map(str, cmd)), describe(r)) for cmd, r in bad[:10])
    assert answers or pending, "the prober sent nothing"

    final = ready_leader(servers, timeout=10)
    fc = Conn(final.port)
    for k, v in acked.items():
        eq(fc.call("GET", k), v, "acknowledged %s after the heal" % k)
    li = lock_info(fc, "m")
    eq((li["holder"], li["token"]), (s2, tm), "lock m granted by the majority")
    expect_int(fc.call("PUT", "after", "1"), "writes after the heal")
    want = rev_of(final)
    wait_until(lambda: all((rev_of(x) or 0) >= want for x in servers), timeout=10,
               interval=0.05, what="every node (the old leader too) reaching revision %s" % want)
    if final is not old:
        wait_until(lambda: role(old) == "follower", timeout=5, interval=0.05,
                   what="the old leader reporting role follower")
    with Conn(old.port) as o:
        expect_ok(o.call("READONLY"))
        for k, v in acked.items():
            eq(o.call("GET", k), v, "old leader's own state: %s" % k)
    # A write the old node refused outright (never proposed) must not have applied anywhere.
    refused = [cmd[1] for cmd, r in answers
               if cmd[0] == "PUT" and isinstance(r, RespError) and r.code in ("NOTLEADER",
                                                                             "NOLEADER")]
    present = {text(k) for k in ok(fc.call("KEYS", "min"), "KEYS min")}
    applied = sorted(present & set(refused))
    assert not applied, "PUTs the cut-off node refused (-NOTLEADER/-NOLEADER) applied: %r" \
        % applied[:10]
    fc.close()
    n.close()
    counts = {}
    for _cmd, r in answers + late:
        k = describe(r).split(" ")[0] if isinstance(r, RespError) else type(r).__name__
        counts[k] = counts.get(k, 0) + 1
    print("# partition: new leader after %.2f s, old leader %s; minority answers %r; "
          "healed after %.2f s; Raft connections the cut-off node opened meanwhile: %d"
          % (t_new - t_part, minority_role, counts, t_heal - t_part, part.late))
