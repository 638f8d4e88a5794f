#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Client A of the paused-holder scenario (scenarios.py), a process of its own so that the
suite can SIGSTOP it like a long GC pause, for any adapter.

    seller.py PORT TTL_MS LOCK SHOP BUYER CLIENT-SPEC-JSON

Opens a session (kept alive by a thread, as a real client does), takes LOCK (and its signature
when the adapter checks them), reads SHOP's stock through the adapter's client, prints
`token N` and `read Q`, then waits for a line on stdin (the suite freezes it meanwhile). Then it
sells one item on what it read: prints `sold` or `refused`, and exits 0. Anything unexpected:
exit status 1.
"""

import json
import os
import sys
import threading

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "integration")]

import adapters  # noqa: E402
from resp import Conn, RespError, text  # noqa: E402


def keepalive(port, sid, ttl_ms, stop):
    c = Conn(port)
    while not stop.wait(ttl_ms / 4000.0):
        try:
            if isinstance(c.call("SESSION.KEEPALIVE", sid), RespError):
                return
        except Exception:  # noqa: BLE001 (the session may be gone: nothing to keep alive)
            return


def main():
    port, ttl_ms, lock, shop, buyer, spec = sys.argv[1:7]
    port, ttl_ms, spec = int(port), int(ttl_ms), json.loads(spec)
    cl = adapters.client_from_spec(spec)
    c = Conn(port)
    sid = c.call("SESSION.OPEN", ttl_ms)
    if isinstance(sid, RespError):
        print("error %s" % sid.text, flush=True)
        return 1
    stop = threading.Event()
    threading.Thread(target=keepalive, args=(port, sid, ttl_ms, stop), daemon=True).start()
    token = c.call("LOCK", lock, sid, "WAIT", 10000)
    if not isinstance(token, int):
        print("error lock: %r" % (token,), flush=True)
        return 1
    sig = None
    if spec.get("signed"):
        sig = c.call("FENCE.SIGN", lock, token)
        if isinstance(sig, RespError):
            print("error sign: %s" % sig.text, flush=True)
            return 1
        sig = text(sig)
    print("token %d" % token, flush=True)
    qty = cl.read_stock(lock, token, sig, shop)
    if qty is None:
        print("error: the first read was refused", flush=True)
        return 1
    print("read %d" % qty, flush=True)
    sys.stdin.readline()  # the pause: the suite SIGSTOPs this process around here
    sold = cl.sell(lock, token, sig, shop, qty, buyer)
    stop.set()
    print("sold" if sold else "refused", flush=True)
    cl.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
