#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The memory probes of the resource limits, bounded, with RSS before/after (docs/server.md "Memory").

    python3 bench/limits_probes.py --bin build/release/fencelockd [--probe NAME ...]

Each probe starts fresh servers (tests/integration's harness, temporary ports and data dirs),
does what the issue did, and prints one line: the probe, RSS before -> the peak RSS (VmHWM)
after it (MiB), what happened. Nothing is timed. Run it with an older binary too (flags it does not know are left
out) to see the figures the limits replaced. The `follower` probe runs a 3-node cluster whose
follower lives under `prlimit --as` and checks that no node dies and the follower keeps up (exit 1 otherwise).
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from resp import (Conn, ConnectionClosed, ReplyTimeout, RespError, as_map,  # noqa: E402
                  encode_command)
from server import Server  # noqa: E402

MiB = 1 << 20


def rss(srv, field="VmRSS:"):
    """Resident MiB now (VmHWM: the peak so far)."""
    try:
        with open("/proc/%d/status" % srv.proc.pid) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def dir_mib(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total / MiB


class Probe:
    def __init__(self, binary, workdir):
        self.binary = binary
        self.workdir = workdir
        self.servers = []
        self.help = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout

    def flags(self, *pairs):
        """Only the flags this binary knows (an old one runs with its defaults)."""
        out = []
        for i in range(0, len(pairs), 2):
            if pairs[i] in self.help:
                out += [pairs[i], str(pairs[i + 1])]
        return out

    def server(self, *args, prefix=None, node_id=1, name=None):
        s = Server(self.binary, os.path.join(self.workdir, name or "srv%d" % len(self.servers)),
                   args=args, node_id=node_id)
        if prefix:
            argv = s.argv
            s.argv = lambda: list(prefix) + argv()
        self.servers.append(s)
        return s

    def stop(self):
        for s in self.servers:
            try:
                if s.running():
                    s.stop()
            except Exception:  # noqa: BLE001
                s.force_cleanup()


def load_keys(c, n, keylen):
    pad = "k" * (keylen - 6)
    for base in range(0, n, 500):
        c.sock.sendall(b"".join(encode_command("PUT", "%s%06d" % (pad, i), "v")
                                for i in range(base, min(n, base + 500))))
        for _ in range(base, min(n, base + 500)):
            c.read_reply()


def send_unread(c, payload):
    """Send without reading replies; stop when the server stops reading (or closes)."""
    c.sock.settimeout(5)
    try:
        c.sock.sendall(payload)
    except (socket.timeout, BrokenPipeError, ConnectionResetError):
        pass


def wait_closed(c, timeout=10):
    data, closed = c.read_until_eof(timeout=timeout)
    return closed


def probe_keys(p, cmd="KEYS", n=200):
    """READONLY, pipelined KEYS "" over 10,000 keys of 1,000 bytes (~10 MB a reply), unread."""
    s = p.server(*p.flags())
    s.start()
    c = Conn(s.port, timeout=60)
    if cmd == "KEYS":
        load_keys(c, 10000, 1000)
    else:
        sid = c.call("SESSION.OPEN", 600000)
        pad = "l" * 994
        for base in range(0, 10000, 500):
            c.sock.sendall(b"".join(encode_command("LOCK", "%s%06d" % (pad, i), sid)
                                    for i in range(base, base + 500)))
            for _ in range(500):
                c.read_reply()
    before = rss(s)
    r = Conn(s.port, timeout=60)
    r.call("READONLY")
    send_unread(r, b"".join(encode_command(cmd, "") for _ in range(n)))
    time.sleep(15)  # bounded: whatever the server buffers for the unread replies, it has now
    after = rss(s, "VmHWM:")
    closed = wait_closed(r, timeout=2)
    try:
        alive = s.running() and Conn(s.port, timeout=30).call("PING") == "PONG"
    except (OSError, ConnectionClosed, ReplyTimeout):
        alive = False
    return before, after, "%d x %s unread: connection %s, server %s" % (
        n, cmd, "closed" if closed else "open (paused)", "answering" if alive else "NOT answering PING")


def probe_partial(p):
    """8 connections, each 64 arguments x 1 MiB announced, 60 sent, never finished."""
    s = p.server()
    s.start()
    before = rss(s)
    conns = [Conn(s.port, timeout=10) for _ in range(8)]
    chunk = b"$%d\r\n" % MiB + b"x" * MiB + b"\r\n"
    for c in conns:
        send_unread(c, b"*64\r\n" + chunk * 60)
    time.sleep(2)
    after = rss(s, "VmHWM:")
    closed = sum(1 for c in conns if wait_closed(c, timeout=1))
    return before, after, "%d of 8 connections closed" % closed


def probe_overwrite(p, n=1500):
    """One key overwritten n times with 1 MiB values."""
    s = p.server()
    s.start()
    before = rss(s)
    c = Conn(s.port, timeout=60)
    v = b"x" * MiB
    for base in range(0, n, 10):
        c.sock.sendall(b"".join(encode_command("PUT", "k", v) for _ in range(10)))
        for _ in range(10):
            c.read_reply()
    after = rss(s, "VmHWM:")
    return before, after, "%d x 1 MiB overwrites of one key: data dir %.0f MiB" % (
        n, dir_mib(s.data_dir))


def probe_health(p):
    """64 idle HTTP connections refilled before each of 25 /health probes."""
    s = p.server()
    s.start()
    before = rss(s)
    held, okc = [], 0
    for _ in range(25):
        for _ in range(64):
            try:
                held.append(socket.create_connection(("127.0.0.1", s.http_port), timeout=2))
            except OSError:
                pass
        time.sleep(0.2)
        try:
            h = socket.create_connection(("127.0.0.1", s.http_port), timeout=2)
            h.sendall(b"GET /health HTTP/1.1\r\n\r\n")
            if h.recv(64).startswith(b"HTTP/1.1 200"):
                okc += 1
            h.close()
        except OSError:
            pass
    for h in held:
        h.close()
    return before, rss(s, "VmHWM:"), "%d of 25 /health probes answered" % okc


def probe_follower(p, limit_mib=700, puts=1500):
    """3 nodes; node 3 under prlimit --as; 1,200 PUTs of 1 MiB to new keys (the quota refuses
    most of them), then 300 overwrites. Every node must still run."""
    # Quotas sized for the follower's limit (docs/server.md "Memory"); longer election
    # timeouts because a 64 MiB snapshot is serialised on the loop (hundreds of ms here).
    q = p.flags("--max-data-bytes", 64 * MiB, "--snapshot-log-bytes", 16 * MiB) + [
        "--heartbeat-ms", "100"]
    nodes = [p.server(node_id=i, name="node%d" % i,
                      prefix=(["prlimit", "--as=%d" % (limit_mib * MiB), "--"] if i == 3
                              else None)) for i in (1, 2, 3)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in nodes)
    for s in nodes:  # node 3 waits longest before it stands for election: it stays a follower
        s.extra_args = ["--initial-cluster", members] + q + [
            "--election-ms", "8000" if s.node_id == 3 else "2000"]
        s.start(wait=False)
    def find_leader():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for s in nodes:
                try:
                    with Conn(s.port, timeout=2) as c:
                        if not isinstance(c.call("PUT", "probe", "1"), RespError):
                            return s
                except (OSError, ConnectionClosed, ReplyTimeout):
                    pass
            time.sleep(0.1)
        return None

    leader = find_leader()
    if leader is None:
        return float("nan"), float("nan"), "no leader"
    follower = nodes[2]
    before = rss(follower)
    c = Conn(leader.port, timeout=60)
    v = b"x" * MiB
    accepted = nospace = retried = 0
    first_other = None
    for i in range(puts):
        key = "k%d" % (i if i < puts * 4 // 5 else i % 50)
        for _ in range(20):  # a leader change (UNKNOWN, NOTLEADER): find the leader, retry
            try:
                r = c.call("PUT", key, v)
            except (OSError, ConnectionClosed, ReplyTimeout) as e:
                r = e
            if isinstance(r, int) or (isinstance(r, RespError) and r.code == "NOSPACE"):
                break
            retried += 1
            first_other = first_other or repr(r)[:100]
            c.close()
            leader = find_leader()
            if leader is None:
                break
            c = Conn(leader.port, timeout=60)
        if isinstance(r, int):
            accepted += 1
        elif isinstance(r, RespError) and r.code == "NOSPACE":
            nospace += 1
    caught_up = False  # bounded wait: the follower applies what the leader committed
    try:
        with Conn(leader.port, timeout=10) as lc:
            target = int(as_map(lc.call("CLUSTER.INFO"))["commit_index"])
        deadline = time.monotonic() + 30
        while not caught_up and time.monotonic() < deadline and follower.running():
            try:
                with Conn(follower.port, timeout=5) as fc:
                    caught_up = int(as_map(fc.call("CLUSTER.INFO"))["applied_index"]) >= target
            except (OSError, ConnectionClosed, ReplyTimeout):
                pass
            time.sleep(0.5)
    except (OSError, ConnectionClosed, ReplyTimeout, KeyError, ValueError):
        pass
    after = rss(follower, "VmHWM:")
    dead = [s.node_id for s in nodes if not s.running()]
    desc = ("follower under --as %d MiB: %d PUTs accepted, %d NOSPACE, %d retried after a "
            "leader change; dead nodes %s; follower caught up: %s" % (
                limit_mib, accepted, nospace, retried, dead or "none",
                "yes" if caught_up else "NO"))
    if first_other:
        desc += " (first retried reply: %s)" % first_other
    if dead:
        tail = "".join(nodes[d - 1].log_tail(8) for d in dead)
        desc += "\n" + tail
    p.failed = bool(dead) or not caught_up
    return before, after, desc


PROBES = {
    "keys": probe_keys,
    "locks": lambda p: probe_keys(p, "LOCKS", 100),
    "partial": probe_partial,
    "overwrite": probe_overwrite,
    "health": probe_health,
    "follower": probe_follower,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/release/fencelockd")
    ap.add_argument("--probe", action="append", choices=sorted(PROBES))
    ap.add_argument("--keep", action="store_true", help="keep the work dirs (logs, data)")
    a = ap.parse_args()
    names = a.probe or list(PROBES)
    failed = False
    for name in names:
        wd = tempfile.mkdtemp(prefix="fencelock-probe-")
        p = Probe(os.path.abspath(a.bin), wd)
        p.failed = False
        try:
            before, after, what = PROBES[name](p)
        except Exception as e:  # noqa: BLE001 - a probe that breaks the server is a result
            before = after = float("nan")
            what = "probe failed: %s: %s" % (type(e).__name__, e)
            p.failed = True
        finally:
            p.stop()
            if a.keep:
                print("# %s: work dir %s" % (name, wd))
            else:
                shutil.rmtree(wd, ignore_errors=True)
        failed |= p.failed
        print("%-9s RSS %7.0f -> peak %7.0f MiB  %s" % (name, before, after, what), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
