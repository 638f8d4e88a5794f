#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a pre-AUTH flood does to an authenticated client, bounded in count and time.

    python3 bench/preauth_flood.py --bin build/release/fencelockd [--mode auth|tls|both]

auth: --acl-file; a client that authenticated before measures PUT round trips (each a Raft
      append: the disk path) idle, then while FLOODERS threads loop `AUTH default wrong` on
      fresh connections (at most --attempts in all), each from its own 127.1.x.1 address.
tls:  a TLS client port; the client measures PING round trips (answered on the event loop, so
      they show the loop's stalls) idle, then while FLOODERS threads open TLS connections and
      complete a handshake each (at most --attempts in all).
Prints p50 / p99 / max (ms) idle and under the flood, and the server's counters. Nothing is
asserted: run it against an older binary too (flags it does not know are left out).
"""

import argparse
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from resp import Conn, encode_command  # noqa: E402
from server import Server  # noqa: E402

NEW_FLAGS = ("--auth-threads", "--auth-queue", "--max-unauth-per-addr", "--max-unauth-clients",
             "--tls-max-handshakes", "--tls-max-handshakes-per-addr")


def known_flags(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10).stdout
    return {f for f in NEW_FLAGS if f in out}


def args_for(binary, pairs):
    """Flag/value pairs, without the flags this binary does not know."""
    known = known_flags(binary)
    out = []
    for flag, value in pairs:
        if flag not in NEW_FLAGS or flag in known:
            out += [flag, str(value)]
    return out


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] * 1000.0 if xs else float("nan")


def summary(name, xs):
    return "%-22s n=%5d  p50 %8.2f ms  p99 %8.2f ms  max %8.2f ms" % (
        name, len(xs), pct(xs, 0.5), pct(xs, 0.99), max(xs) * 1000.0 if xs else float("nan"))


def measure(call, n, stop=None):
    lat = []
    for _ in range(n):
        if stop is not None and stop.is_set():
            break
        t = time.monotonic()
        call()
        lat.append(time.monotonic() - t)
    return lat


def metric(srv, name):
    import urllib.request
    try:
        body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % srv.http_port,
                                      timeout=10).read().decode()
    except OSError:
        return None
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def flood(n_threads, attempts, one, seconds):
    """n_threads run one(i) until `attempts` calls in all or `seconds` passed."""
    left = [attempts]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def run(k):
        while time.monotonic() < deadline:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
                i = left[0]
            try:
                one(k, i)
            except OSError:
                pass

    ts = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(n_threads)]
    for t in ts:
        t.start()
    return ts


def mode_auth(a, work):
    pw = "pw-bench"
    h = subprocess.run([a.bin, "--hash-password"], input=(pw + "\n").encode(),
                       capture_output=True, timeout=60).stdout.decode().strip()
    acl = os.path.join(work, "acl")
    with open(acl, "w") as f:
        f.write("user admin %s perm=all\nuser default %s perm=lock\n" % (h, h))
    os.chmod(acl, 0o600)  # a secret file: group- or world-readable is refused
    s = Server(a.bin, os.path.join(work, "auth"), args=["--acl-file", acl] + args_for(
        a.bin, [("--max-unauth-per-addr", 100000), ("--max-unauth-clients", 100000)]))
    s.auth = ("admin", pw)
    s.start()
    try:
        c = Conn(s.port, timeout=120)
        c.call("AUTH", "admin", pw)
        idle = measure(lambda: c.call("PUT", "k", "v"), a.n)

        def one(k, i):
            x = socket.create_connection(("127.0.0.1", s.port), timeout=60,
                                         source_address=("127.1.%d.1" % (k % 250), 0))
            try:
                x.sendall(encode_command("AUTH", "default", "wrong%d" % i))
                x.recv(256)
            finally:
                x.close()

        ts = flood(a.flooders, a.attempts, one, a.seconds)
        time.sleep(0.5)
        busy = measure(lambda: c.call("PUT", "k", "v"), a.n)
        for t in ts:
            t.join(a.seconds + 60)
        print("mode auth (%s)" % os.path.basename(a.bin))
        print(summary("PUT idle", idle))
        print(summary("PUT under AUTH flood", busy))
        for m in ("fencelock_auth_failures_total", "fencelock_auth_verifications_total",
                  "fencelock_auth_verify_rejected_total", "fencelock_auth_backoff_total",
                  "fencelock_auth_verify_queued_max"):
            print("  %s %s" % (m, metric(s, m)))
    finally:
        s.stop()


def mode_tls(a, work):
    d = os.path.join(work, "pki")
    os.makedirs(d)

    def ossl(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True, capture_output=True,
                       timeout=60)

    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=bench-ca")
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(d, "srv.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    ossl("x509", "-req", "-in", "srv.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "srv.crt", "-days", "2", "-extfile", "srv.ext")
    s = Server(a.bin, os.path.join(work, "tls"), args=[
        "--tls-cert", os.path.join(d, "srv.crt"), "--tls-key", os.path.join(d, "srv.key")])
    ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
    s.tls = ctx
    s.start()
    try:
        c = Conn(s.port, timeout=120, ssl_context=ctx)
        idle = measure(lambda: c.call("PING"), a.n)

        def one(k, i):
            x = socket.create_connection(("127.0.0.1", s.port), timeout=60,
                                         source_address=("127.1.%d.1" % (k % 250), 0))
            try:
                ctx.wrap_socket(x, server_hostname="127.0.0.1").close()
            except ssl.SSLError:
                x.close()

        ts = flood(a.flooders, a.attempts, one, a.seconds)
        time.sleep(0.5)
        busy = measure(lambda: c.call("PING"), a.n)
        for t in ts:
            t.join(a.seconds + 60)
        print("mode tls (%s)" % os.path.basename(a.bin))
        print(summary("PING idle", idle))
        print(summary("PING under handshakes", busy))
        for m in ("fencelock_tls_handshakes_total", "fencelock_tls_handshake_rejected_total"):
            print("  %s %s" % (m, metric(s, m)))
    finally:
        s.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--mode", choices=("auth", "tls", "both"), default="both")
    ap.add_argument("--flooders", type=int, default=64, help="flooding threads")
    ap.add_argument("--attempts", type=int, default=3000, help="AUTHs / handshakes in all")
    ap.add_argument("--seconds", type=float, default=60.0, help="the flood's longest run")
    ap.add_argument("--n", type=int, default=300, help="round trips measured per phase")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="fl-preauth-")
    try:
        if a.mode in ("auth", "both"):
            mode_auth(a, work)
        if a.mode in ("tls", "both"):
            mode_tls(a, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
