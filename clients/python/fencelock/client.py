# SPDX-License-Identifier: Apache-2.0
"""Client: one per process is typical; thread-safe. Holds the endpoints, the known leader and
a pool of connections (conn.Pool), and offers the calls that need no session: reads (always
safe to resend), writes without a session (sent once: OutcomeUnknown when the answer is
lost), fence checks and signatures, elections' leader and observe, watch, cluster members.
Writes that must apply exactly once go through a Session (session.py).
"""

import time
from dataclasses import dataclass

from . import errors
from .conn import Cmd, Pool, as_map


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


@dataclass
class LeaderInfo:
    """An election's state (ELECT.LEADER / ELECT.OBSERVE): sid 0 when nobody leads."""
    sid: int
    token: int
    value: bytes
    since_rev: int
    rev: int


def _leader_info(r):
    d = as_map(r)
    return LeaderInfo(int(d.get("sid", 0)), int(d.get("token", 0)), d.get("value") or b"",
                      int(d.get("since_rev", 0)), int(d.get("rev", 0)))


def _status(r):
    if _s(r) != "OK":
        raise errors.ProtocolError("expected +OK, got %r" % (r,))


class Client:
    """A fencelock client.

    endpoints: "host:port,host:port" or a list: any members of the cluster; the others are
    learned from CLUSTER.MEMBERS and -NOTLEADER redirects. username/password: sent as AUTH on
    every new connection (servers with --acl-file). ssl: None, True (system CAs), an
    ssl.SSLContext, or a dict {"ca", "cert", "key", "server_name"}. timeout: each call's
    deadline in seconds (a lock wait gets its wait plus this). connect_timeout: a server that
    does not answer within it is treated as gone. margin_ms and drift_ppm: what a Session's
    safe deadline keeps back (see Session.safe_until).
    """

    def __init__(self, endpoints, username=None, password=None, ssl=None, timeout=5.0,
                 connect_timeout=1.0, margin_ms=10, drift_ppm=10000):
        self._pool = Pool(endpoints, username, password, ssl, timeout, connect_timeout)
        self.timeout = timeout
        self.margin_ms = margin_ms
        self.drift_ppm = drift_ppm

    # ---- plumbing ----
    def close(self):
        """Close the idle connections (sessions must be closed first)."""
        self._pool.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def leader_address(self):
        """The leader's client address as last learned, or None."""
        return self._pool.known_leader()

    def call(self, cmd, deadline=None, retry=True, anynode=False, cancel=None):
        """Send a conn.Cmd through the call path (internal, used by Session and Watch)."""
        return self._pool.call(cmd, deadline, retry, anynode, cancel)

    def execute(self, *args, retry=True):
        """Any command, with redirects followed. retry=False for a write that carries no
        `REQ sid seq`: it is then sent once and a lost answer raises OutcomeUnknown."""
        return self.call(Cmd(*args), retry=retry)

    def session(self, ttl_ms, lock_delay_ms=0, name=None, on_lost=None):
        """Open a Session (a lease kept alive by a thread of its own)."""
        from .session import Session
        return Session(self, ttl_ms, lock_delay_ms=lock_delay_ms, name=name, on_lost=on_lost)

    # ---- keys ----
    def get(self, key):
        """The value (bytes) or None."""
        return self.call(Cmd("GET", key))

    def kv_get(self, key):
        """None, or a dict: value, create_rev, mod_rev, version, lease."""
        return as_map(self.call(Cmd("KV.GET", key)))

    def keys(self, prefix="", limit=None):
        cmd = Cmd("KEYS", prefix)
        if limit:
            cmd.add("LIMIT", limit)
        return self.call(cmd)

    def put(self, key, value, fence=None, ifrev=None, session=None, lease=False):
        """PUT: the revision. fence=(lock name, token): applies only while token is the
        current holder's (Stale otherwise). ifrev: only if the key's mod_rev is that (0: only if
        absent; IfRevFailed otherwise). With session the write carries REQ sid seq and is
        retried until it is known to have applied once; lease=True attaches the key to it.
        Without a session it is sent once (OutcomeUnknown if the answer is lost)."""
        cmd = Cmd("PUT", key, value)
        if lease:
            if session is None:
                raise ValueError("lease needs a session")
            cmd.add("LEASE", session.sid)
        return self._write(cmd, fence, ifrev, session)

    def delete(self, key, fence=None, ifrev=None, session=None):
        """DEL: True if the key existed. Same fence/ifrev/session rules as put()."""
        return self._write(Cmd("DEL", key), fence, ifrev, session) == 1

    def _write(self, cmd, fence, ifrev, session):
        if fence is not None:
            name, token = fence
            cmd.add("FENCE", name, token)
        if ifrev is not None:
            cmd.add("IFREV", ifrev)
        if session is None:
            return self.call(cmd, retry=False)
        return session._mutate(cmd)

    # ---- locks and fencing ----
    def lock_info(self, name):
        """None if the lock is free and nobody waits; else a dict (holder, token, waiters,
        mode, holders, lockdelay, held_since_ms)."""
        d = as_map(self.call(Cmd("LOCK.INFO", name)))
        if d is not None and isinstance(d.get("holders"), list):
            d["holders"] = [as_map(h) for h in d["holders"]]
        return d

    def locks(self, prefix="", limit=None):
        cmd = Cmd("LOCKS", prefix)
        if limit:
            cmd.add("LIMIT", limit)
        return [as_map(x) for x in self.call(cmd)]

    def fence_check(self, name, token):
        """True while token is a current holder's (permit's, leader's) token, else False."""
        try:
            self.call(Cmd("FENCE.CHECK", name, token))
            return True
        except errors.Stale:
            return False

    def sign(self, name, token):
        """FENCE.SIGN name token: the server's signature of (name, token) as hex, for a
        resource that verifies tokens offline; Stale if token is not the current one."""
        return _s(self.call(Cmd("FENCE.SIGN", name, token)))

    # ---- semaphores and elections (reads) ----
    def sem_info(self, name):
        d = as_map(self.call(Cmd("SEM.INFO", name)))
        if d is not None and isinstance(d.get("holders"), list):
            d["holders"] = [as_map(h) for h in d["holders"]]
        return d

    def leader(self, name):
        """The election's LeaderInfo, or None if nobody leads."""
        r = self.call(Cmd("ELECT.LEADER", name))
        return None if r is None else _leader_info(r)

    def observe(self, name, after_rev=0, wait=10.0):
        """Block until the election changed after after_rev (0: the current state at once):
        its LeaderInfo (sid 0 when nobody leads), or None when wait (seconds) ran out. Pass
        each answer's .rev back: no change is missed, no older leader follows a newer one."""
        end = time.monotonic() + wait
        cmd = Cmd("ELECT.OBSERVE", name)
        if after_rev:
            cmd.add("AFTER", after_rev)
        cmd.wait(end)
        r = self.call(cmd, deadline=end + self.timeout)
        return None if r is None else _leader_info(r)

    # ---- watch and cluster ----
    def watch(self, prefix="", from_id="$"):
        """A Watch of the event stream (fencelock:events[:prefix]) after from_id."""
        from .watch import Watch
        return Watch(self, prefix, from_id)

    def members(self):
        """CLUSTER.MEMBERS of any node: a list of dicts."""
        return [as_map(m) for m in self.call(Cmd("CLUSTER.MEMBERS"), anynode=True)]

    def session_info(self, sid):
        return as_map(self.call(Cmd("SESSION.INFO", sid)))

    def revoke(self, sid):
        """SESSION.REVOKE (admin): end any session as an expiry does."""
        _status(self.call(Cmd("SESSION.REVOKE", sid), retry=False))
