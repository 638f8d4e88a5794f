#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Capture real Raft messages from a live cluster for fuzz/corpus/raft/ (fuzz_raft_msg's seeds).

Starts 3 fencelockd nodes with FENCELOCK_RAFT_CAPTURE=<dir> (src/raft/transport.c then writes
each frame it accepted, behind a handshake from the sending peer's id, one file per frame),
drives locks, a fourth node joining after a snapshot (RAFT_CHANGE entries, InstallSnapshot),
a leadership transfer (TimeoutNow) and a leader kill (RequestVote), stops everything and keeps
up to --per-type files per message type (smallest first, 1 MiB at most each).

    python3 fuzz/capture_raft.py --bin build/asan/fencelockd --out fuzz/corpus/raft
"""

import argparse
import collections
import os
import shutil
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from cluster import TIMING, ready_leader  # noqa: E402
from resp import Conn, as_map  # noqa: E402
from server import Server  # noqa: E402

TYPES = {0: "append_change", 1: "append", 2: "append_result", 3: "vote", 4: "vote_result", 5: "snapshot",
         6: "timeout_now"}


def has_change_entry(path):
    """An AppendEntries carrying a RAFT_CHANGE entry (a configuration)."""
    with open(path, "rb") as f:
        b = f.read()
    alen = struct.unpack("<Q", b[16:24])[0]
    h = b[24 + alen + 16:]
    n = struct.unpack("<Q", h[32:40])[0]
    return any(h[40 + 16 * i + 8] == 3 for i in range(n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-type", type=int, default=12)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="fencelock-capture-")
    cap = os.path.join(work, "frames")
    os.makedirs(cap)
    env = {"FENCELOCK_RAFT_CAPTURE": cap}
    snap = ["--snapshot-threshold", "64", "--snapshot-trailing", "8"]
    servers = [Server(a.bin, os.path.join(work, "n%d" % i), node_id=i, env=env)
               for i in (1, 2, 3)]
    members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
    try:
        for s in servers:
            s.extra_args = ["--initial-cluster", members] + TIMING + snap
            s.start(wait=False)
        leader = ready_leader(servers)
        with Conn(leader.port) as c:
            sid = c.call("SESSION.OPEN", 60000)
            for i in range(200):
                c.call("LOCK", "l%d" % (i % 7), sid)
                c.call("PUT", "k%d" % i, "v" * (i % 50))
                c.call("UNLOCK", "l%d" % (i % 7), sid)
        joiner = Server(a.bin, os.path.join(work, "n4"), node_id=4, env=env)
        joiner.extra_args = ["--join", "127.0.0.1:%d" % leader.port] + TIMING + snap
        servers.append(joiner)
        joiner.start(wait=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with Conn(leader.port) as c:
                ms = [as_map(m) for m in c.call("CLUSTER.MEMBERS")]
                if any(m["id"] == 4 and m.get("role") in (b"voter", "voter") for m in ms):
                    break
            time.sleep(0.2)
        target = next(s for s in servers[:3] if s is not leader)
        with Conn(leader.port) as c:
            print("transfer:", c.call("CLUSTER.TRANSFER", target.node_id))
        time.sleep(1)
        leader = ready_leader(servers)
        leader.kill9()
        ready_leader([s for s in servers if s is not leader])
    finally:
        for s in servers:
            if s.running():
                s.stop()
    by_type = collections.defaultdict(list)
    for name in os.listdir(cap):
        t = int(name.rsplit("-t", 1)[1])
        path = os.path.join(cap, name)
        by_type[t].append(path)
        if t == 1 and has_change_entry(path):
            by_type[0].append(path)
    os.makedirs(a.out, exist_ok=True)
    for t, files in sorted(by_type.items()):
        files.sort(key=os.path.getsize)
        # The smallest few and the largest few: heartbeats and real batches.
        keep = files[:a.per_type // 2] + files[-(a.per_type - a.per_type // 2):]
        for i, f in enumerate(dict.fromkeys(keep)):
            shutil.copy(f, os.path.join(a.out, "%s-%02d" % (TYPES.get(t, str(t)), i)))
        print("type %d (%s): %d captured" % (t, TYPES.get(t, "?"), len(files)))
    if not os.environ.get("KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("kept", work)


if __name__ == "__main__":
    main()
