#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Inventory service with fencing, on the fencelock package (clients/python).

The story: a worker ("zombie") takes the inventory lock and then freezes (think of a long GC
pause): its session stops renewing. Its lease runs out, our worker is granted the lock, sells
one item with a fenced write, and the zombie, waking up, writes with its old token: the server
refuses it (fencelock.Stale). That refusal is what fencing is for. The same story without the
package, with redis-py's execute_command only, is any_redis_client.py.

    /usr/bin/python3 examples/python/inventory.py [host:port,...]

The endpoints are argv[1], else $FENCELOCK_ENDPOINTS, else 127.0.0.1:7480. Any node will do:
the package follows -NOTLEADER. Exits 0 if everything behaved as fencelock promises.
"""

import os
import sys
import time

import _path  # noqa: F401 - the package from the source tree if it is not installed
import fencelock


class Unexpected(Exception):
    """Something fencelock should not have done: the example fails."""


def say(msg):
    print(msg, flush=True)


def main():
    endpoints = (sys.argv[1] if len(sys.argv) > 1 else
                 os.environ.get("FENCELOCK_ENDPOINTS", "").strip() or "127.0.0.1:7480")
    c = fencelock.Client(endpoints)

    # The zombie: a 1 s lease whose keepalives stop at once, so it runs out while "frozen".
    zombie = c.session(1.0, name="zombie")
    zombie_token = zombie.try_lock("inventory")
    if zombie_token is None:
        zombie.close()
        raise Unexpected("the inventory lock is already taken; is another example running?")
    zombie.abandon()
    say("zombie: session %d holds inventory with token %d, then freezes" % (zombie.sid,
                                                                            zombie_token))
    ttl = 2.0
    with c.session(ttl, name="inventory-worker") as me:
        say("worker: session %d (ttl %d ms) on %s" % (me.sid, int(ttl * 1000), c.leader_address))
        t0 = time.monotonic()
        # Queued behind the zombie (FIFO); granted once its lease expired.
        with me.lock("inventory", wait=10.0) as token:
            if token <= zombie_token:
                raise Unexpected("token %d does not exceed the zombie's %d" % (token,
                                                                              zombie_token))
            say("worker: got inventory after %.1f s, fencing token %d"
                % (time.monotonic() - t0, token))
            raw = c.get("stock")
            stock = int(raw) if raw is not None else 100  # first run: start with 100 items
            say("worker: stock is %d" % stock)
            if time.monotonic() >= me.safe_until():
                raise Unexpected("our lease may be gone: not acting")
            # Accepted only while our token is the current holder's; exactly once (REQ).
            rev = me.put("stock", stock - 1, fence=("inventory", token))
            say("worker: sold one, stock %d written at revision %d" % (stock - 1, rev))

            # The zombie wakes up and writes what it computed before freezing.
            try:
                c.put("stock", 0, fence=("inventory", zombie_token))
                raise Unexpected("the zombie's write with stale token %d was accepted"
                                 % zombie_token)
            except fencelock.Stale as e:
                say("zombie: write with token %d refused: -%s" % (zombie_token, e))
            if int(c.get("stock")) != stock - 1:
                raise Unexpected("the stock changed after a refused write")
    say("worker: unlocked and closed session %d" % me.sid)
    c.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Unexpected, fencelock.FencelockError) as e:
        print("inventory: unexpected: %s" % e, file=sys.stderr)
        sys.exit(1)
