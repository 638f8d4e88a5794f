#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Inventory service with fencing, from any Redis client: no fencelock library at all.

fencelock speaks the Redis protocol, so the stock `redis` package (Debian: python3-redis) is
enough: every command goes through its generic `execute_command`.

The story: a worker ("zombie") takes the inventory lock and then freezes (think of a long GC
pause) without renewing its session. Its lease runs out, our worker is granted the lock, sells
one item with a fenced write, and the zombie, waking up, tries to write with its old token: the
server refuses it with -STALE. That refusal is what fencing is for.

    /usr/bin/python3 examples/python/any_redis_client.py [host:port]

The endpoint is argv[1], else the first entry of $FENCELOCK_ENDPOINTS, else 127.0.0.1:7480.
Exits 0 if everything behaved as fencelock promises, 1 otherwise.
"""

import os
import sys
import threading
import time

import redis


class Unexpected(Exception):
    """Something fencelock should not have done: the example fails."""


class Client:
    """One connection that follows the leader and retries safely.

    Any node may be given: a follower answers writes with -NOTLEADER host:port and we simply
    reconnect there. -UNKNOWN means a leader change left the outcome open; resending the very
    same command (with the same REQ sid seq) is safe because the server deduplicates it.
    """

    def __init__(self, endpoint):
        self.connect(endpoint)

    def connect(self, endpoint):
        host, port = endpoint.rsplit(":", 1)
        self.endpoint = endpoint
        self.r = redis.Redis(host=host, port=int(port), socket_connect_timeout=2)

    def call(self, *args):
        last = None
        for _ in range(50):  # bounded: an example must not hang on a broken cluster
            try:
                return self.r.execute_command(*args)
            except redis.ConnectionError as e:
                last = e  # the node may be restarting; the same REQ makes a resend safe
                time.sleep(0.1)
                continue
            except redis.ResponseError as e:
                last = e
                code, _, rest = str(e).partition(" ")
                if code == "NOTLEADER" and rest:
                    self.r.close()
                    self.connect(rest.strip())
                    continue
                if code in ("UNKNOWN", "NOLEADER"):  # election under way: wait, then resend
                    time.sleep(0.1)
                    continue
                raise
        raise Unexpected("%s: no answer after 50 attempts (last: %s)" % (args[0], last))


class Session:
    """A lease plus the numbering every mutating command needs for exactly-once retries."""

    def __init__(self, client, ttl_ms, name):
        self.client = client
        self.sid = client.call("SESSION.OPEN", ttl_ms, "NAME", name)
        self.seq = 0

    def req(self):
        # Each mutating command gets a fresh, increasing seq; a resend reuses its args as-is.
        self.seq += 1
        return ["REQ", self.sid, self.seq]


class Keepalive(threading.Thread):
    """Renews the session every TTL/3 on its own connection, so a long blocked LOCK ... WAIT on
    the main connection never delays a renewal. Stops at the first failure and remembers it:
    after that the lease may be gone and nothing done under the lock can be trusted."""

    def __init__(self, endpoint, sid, ttl_ms):
        super().__init__(daemon=True)
        self.client = Client(endpoint)
        self.sid, self.interval = sid, ttl_ms / 3000.0
        self.stopped = threading.Event()
        self.error = None
        self.renewals = 0

    def run(self):
        while not self.stopped.wait(self.interval):
            try:
                self.client.call("SESSION.KEEPALIVE", self.sid)
                self.renewals += 1
            except Exception as e:  # noqa: BLE001 - any failure ends the renewals
                self.error = e
                print("keepalive: FAILED (%s); the lock may be lost" % e, flush=True)
                return

    def stop(self):
        self.stopped.set()
        self.join(5)


def say(msg):
    print(msg, flush=True)


def main():
    endpoint = (sys.argv[1] if len(sys.argv) > 1 else
                os.environ.get("FENCELOCK_ENDPOINTS", "").split(",")[0].strip()
                or "127.0.0.1:7480")
    c = Client(endpoint)

    # The zombie: 1 s lease, never renewed, so it runs out while the zombie is "frozen".
    zombie = Session(c, 1000, "zombie")
    zombie_token = c.call("LOCK", "inventory", zombie.sid, *zombie.req())
    if zombie_token is None:
        raise Unexpected("the inventory lock is already taken; is another example running?")
    say("zombie: session %d holds inventory with token %d, then freezes" % (zombie.sid,
                                                                            zombie_token))

    ttl = 2000  # short so that a renewal or two happen during this brief demo
    me = Session(c, ttl, "inventory-worker")
    say("worker: session %d (ttl %d ms) on %s" % (me.sid, ttl, c.endpoint))
    ka = Keepalive(c.endpoint, me.sid, ttl)
    ka.start()

    # Queued behind the zombie; granted once its lease expires. WAIT bounds how long we block.
    t0 = time.monotonic()
    token = c.call("LOCK", "inventory", me.sid, "WAIT", 10000, *me.req())
    if token is None:
        raise Unexpected("LOCK timed out: the zombie's lease should have expired")
    if token <= zombie_token:
        raise Unexpected("token %d does not exceed the zombie's %d" % (token, zombie_token))
    say("worker: got inventory after %.1f s, fencing token %d"
        % (time.monotonic() - t0, token))

    raw = c.call("GET", "stock")
    stock = int(raw) if raw is not None else 100  # first run: start with 100 items
    say("worker: stock is %d" % stock)

    # The resource (here fencelock's own KV) accepts the write only while our token is the
    # current holder's: if our lease had lapsed in between, this would fail with -STALE.
    rev = c.call("PUT", "stock", stock - 1, "FENCE", "inventory", token, *me.req())
    say("worker: sold one, stock %d written at revision %d" % (stock - 1, rev))

    # The zombie wakes up and writes what it computed before freezing. Its session ended with
    # its lease, so it has no REQ to number the write with (that alone would be -NOSESSION);
    # the token is what the resource checks, and it is no longer the holder's.
    try:
        c.call("PUT", "stock", 0, "FENCE", "inventory", zombie_token)
        raise Unexpected("the zombie's write with stale token %d was accepted" % zombie_token)
    except redis.ResponseError as e:
        if not str(e).startswith("STALE"):
            raise
        say("zombie: write with token %d refused: -%s" % (zombie_token, e))
    if int(c.call("GET", "stock")) != stock - 1:
        raise Unexpected("the stock changed after a refused write")

    ka.stop()  # before UNLOCK/CLOSE: a renewal of a closed session would be a false alarm
    if ka.error is not None:
        raise Unexpected("keepalive failed: %s" % ka.error)
    c.call("UNLOCK", "inventory", me.sid, *me.req())
    c.call("SESSION.CLOSE", me.sid, *me.req())
    say("worker: unlocked and closed session %d (%d keepalives sent)" % (me.sid, ka.renewals))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Unexpected, redis.RedisError) as e:
        print("inventory: unexpected: %s" % e, file=sys.stderr)
        sys.exit(1)
