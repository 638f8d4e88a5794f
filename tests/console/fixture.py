#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The browser tests' cluster (tests/console/console.test.js starts one per test): N real
fencelockd processes started with tests/integration's helpers (cluster.py, server.py: ports from
FL_TEST_PORTS, the sanitizer checks at the end), one line of JSON on stdout once a leader is
ready and every member announced its address, then nothing until stdin closes or says "stop";
then every server is stopped and a last JSON line says what went wrong, if anything (a
sanitizer report, an exit nobody asked for, a shutdown that needed SIGKILL). Exit status 1 then.

  fixture.py --bin BUILD/fencelockd --dir DIR [--nodes 3] [--acl] [-- EXTRA FLAGS...]

--acl: an ACL file with admin (all), peer (the members' own credentials), jobs (read,lock on
job/*) and viewer (read only), each user's password being its name + "pw".

The first line: {"nodes": [{"id", "port", "http_port"}...], "leader": id, "dir": DIR}."""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.dont_write_bytecode = True

from cluster import TIMING, new_server, ready_leader, wait_announced  # noqa: E402
from resp import Conn  # noqa: E402

USERS = (("admin", "perm=all"), ("peer", "perm=peer"), ("jobs", "perm=read,lock locks=job/*"),
         ("viewer", "perm=read"))


class Ctx:
    """What cluster.new_server needs of a test's context."""

    def __init__(self, binary, workdir):
        self.binary, self.workdir, self.servers = binary, workdir, []

    def tmp(self, name):
        return os.path.join(self.workdir, name)


def acl_flags(ctx):
    acl = ctx.tmp("acl")
    with open(acl, "w") as f:
        for user, rule in USERS:
            p = subprocess.run([ctx.binary, "--hash-password"], input=(user + "pw\n").encode(),
                               capture_output=True, timeout=60, check=True)
            f.write("user %s %s %s\n" % (user, p.stdout.decode().strip(), rule))
    pw = ctx.tmp("peerpw")
    with open(pw, "w") as f:
        f.write("peerpw\n")
    for p in (acl, pw):  # secrets: fencelockd refuses group/world-readable ones
        os.chmod(p, 0o600)
    return ["--acl-file", acl, "--peer-user", "peer", "--peer-password-file", pw]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--acl", action="store_true")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    ctx = Ctx(os.path.abspath(a.bin), a.dir)
    problems = []
    try:
        servers = [new_server(ctx, i) for i in range(1, a.nodes + 1)]
        members = ",".join("%d=127.0.0.1:%d" % (s.node_id, s.raft_port) for s in servers)
        extra = acl_flags(ctx) if a.acl else []
        for s in servers:
            s.extra_args = ["--initial-cluster", members] + TIMING + extra + a.extra
            s.start(wait=False)
        if a.acl:  # cluster.py's helpers ask CLUSTER.INFO without AUTH: wait for it here
            leader = wait_leader_auth(servers)
        else:
            leader = ready_leader(servers, timeout=60)
            with Conn(leader.port, timeout=30) as c:
                wait_announced(c, a.nodes, timeout=60)
        print(json.dumps({"nodes": [{"id": s.node_id, "port": s.port, "http_port": s.http_port}
                                    for s in servers], "leader": leader.node_id,
                          "dir": a.dir}), flush=True)
        for line in sys.stdin:
            if line.strip() == "stop":
                break
    except Exception as e:  # noqa: BLE001 (reported on the last line)
        problems.append("cluster: %r" % (e,))
    for s in ctx.servers:
        try:
            if s.proc is not None:
                s.stop()
        except Exception as e:  # noqa: BLE001
            problems.append("stopping node %d: %r" % (s.node_id, e))
        finally:
            s.force_cleanup()
        rep = s.sanitizer_report()
        if rep:
            problems.append("sanitizer report in %s:\n%s" % (s.log_path, rep))
        problems.extend(s.problems)
    print(json.dumps({"problems": problems}), flush=True)
    sys.exit(1 if problems else 0)


def wait_leader_auth(servers):
    """The ready leader of an ACL cluster (AUTH as admin first), once every member announced."""
    from helpers import wait_until
    from resp import as_map, text

    def find():
        found = []
        for s in servers:
            try:
                with Conn(s.port, timeout=2.0) as c:
                    c.call("AUTH", "admin", "adminpw")
                    i = as_map(c.call("CLUSTER.INFO"))
                    if i.get("ready") == 1 and text(i.get("role")) == "leader":
                        ms = [as_map(x) for x in c.call("CLUSTER.MEMBERS")]
                        if len([m for m in ms if text(m.get("client_address"))]) == len(servers):
                            found.append(s)
            except Exception:  # noqa: BLE001 (not up yet)
                pass
        return found[0] if len(found) == 1 else None
    return wait_until(find, timeout=60, interval=0.2, what="a ready leader, every member announced")


if __name__ == "__main__":
    main()
