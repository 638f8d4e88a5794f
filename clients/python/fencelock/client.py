# SPDX-License-Identifier: Apache-2.0
"""Client: one per process is typical; thread-safe. Holds the endpoints, the known leader and
a pool of connections (conn.Pool), and offers the calls that need no session: reads (always
safe to resend), writes without a session (sent once: OutcomeUnknown when the answer is
lost), fence checks and signatures, elections' leader and observe, watch, cluster members.
Writes that must apply exactly once go through a Session (session.py). Times at this API are
seconds (floats); the wire's milliseconds are made in _common.ms.
"""

import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Union

from . import errors
from ._common import (Fence, LeaderInfo, SSLSpec, Value, as_map, history_args, history_entries,
                      leader_info, revoke_cmd_args, s_, auth_token_args,
                      seconds_arg, status, trace_args)
from ._txn import Txn
from .conn import Cmd, Pool

if TYPE_CHECKING:
    from .session import Session
    from .watch import Watch

__all__ = ["Client", "LeaderInfo"]


class Client:
    """A fencelock client.

    endpoints: "host:port,host:port" or a list: any members of the cluster; the others are
    learned from CLUSTER.MEMBERS and -NOTLEADER redirects. username/password: sent as AUTH on
    every new connection (servers with --acl-file). ssl: None, True (system CAs), an
    ssl.SSLContext, or a dict {"ca", "cert", "key", "server_name"}. timeout: each call's
    deadline in seconds (a lock wait gets its wait plus this). connect_timeout: a server that
    does not answer within it is treated as gone. margin (seconds) and drift_ppm: what a
    Session's safe deadline keeps back (see Session.safe_until). margin_ms= is the deprecated
    spelling of margin.
    """

    def __init__(self, endpoints: Union[str, List[str]], username: Optional[str] = None,
                 password: Optional[str] = None, ssl: SSLSpec = None, timeout: float = 5.0,
                 connect_timeout: float = 1.0, margin: Optional[float] = None,
                 drift_ppm: int = 10000, *, margin_ms: Optional[float] = None) -> None:
        self._pool = Pool(endpoints, username, password, ssl, timeout, connect_timeout)
        self.timeout = timeout
        self.margin: float = seconds_arg(margin, margin_ms, "margin", 0.010) or 0.0
        self.drift_ppm = drift_ppm

    # ---- plumbing ----
    def close(self) -> None:
        """Close the idle connections (sessions must be closed first)."""
        self._pool.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def leader_address(self) -> Optional[str]:
        """The leader's client address as last learned, or None."""
        return self._pool.known_leader()

    def call(self, cmd: Cmd, deadline: Optional[float] = None, retry: bool = True,
             anynode: bool = False, cancel: Optional[threading.Event] = None) -> Any:
        """Send a conn.Cmd through the call path (internal, used by Session and Watch)."""
        return self._pool.call(cmd, deadline, retry, anynode, cancel)

    def execute(self, *args: Any, retry: bool = True) -> Any:
        """Any command, with redirects followed. retry=False for a write that carries no
        `REQ sid seq`: it is then sent once and a lost answer raises OutcomeUnknown."""
        return self.call(Cmd(*args), retry=retry)

    def session(self, ttl: Optional[float] = None, lock_delay: Optional[float] = None,
                name: Optional[str] = None,
                on_lost: Optional[Callable[["Session"], None]] = None, *,
                ttl_ms: Optional[float] = None,
                lock_delay_ms: Optional[float] = None, reentrant: bool = False,
                max_count: Optional[int] = None) -> "Session":
        """Open a Session (a lease kept alive by a thread of its own): ttl and lock_delay in
        seconds (ttl_ms= and lock_delay_ms= are deprecated). reentrant=True: a lock() of a
        lock it holds exclusively counts up (the same token), unlock() counts down and releases
        the last hold; max_count (with reentrant) bounds the count (default: the server's
        --reentrant-max-count)."""
        from .session import Session
        return Session(self, ttl, lock_delay, name, on_lost, ttl_ms=ttl_ms,
                       lock_delay_ms=lock_delay_ms, reentrant=reentrant, max_count=max_count,
                       _depth=1)

    # ---- keys ----
    def get(self, key: str) -> Optional[bytes]:
        """The value (bytes) or None."""
        r: Optional[bytes] = self.call(Cmd("GET", key))
        return r

    def kv_get(self, key: str) -> Optional[Dict[str, Any]]:
        """None, or a dict: value, create_rev, mod_rev, version, lease."""
        r: Optional[Dict[str, Any]] = as_map(self.call(Cmd("KV.GET", key)))
        return r

    def keys(self, prefix: str = "", limit: Optional[int] = None) -> List[bytes]:
        cmd = Cmd("KEYS", prefix)
        if limit:
            cmd.add("LIMIT", limit)
        return list(self.call(cmd))

    def put(self, key: str, value: Value, fence: Optional[Fence] = None,
            ifrev: Optional[int] = None, session: Optional["Session"] = None,
            lease: bool = False, traceparent: Optional[str] = None) -> int:
        """PUT: the revision. fence=(lock name, token): applies only while token is the
        current holder's (Stale otherwise). ifrev: only if the key's mod_rev is that (0: only if
        absent; IfRevFailed otherwise). With session the write carries REQ sid seq and is
        retried until it is known to have applied once; lease=True attaches the key to it.
        Without a session it is sent once (OutcomeUnknown if the answer is lost).
        traceparent: a fenced write's W3C trace context (TRACEPARENT; default: the current
        OpenTelemetry span's, when that package is importable); ValueError without fence."""
        cmd = Cmd("PUT", key, value)
        if lease:
            if session is None:
                raise ValueError("lease needs a session")
            cmd.add("LEASE", session.sid)
        return int(self._write(cmd, fence, ifrev, session, traceparent, traced=True))

    def incr(self, key: str, by: int = 1, fence: Optional[Fence] = None,
             ifrev: Optional[int] = None, session: Optional["Session"] = None,
             traceparent: Optional[str] = None) -> int:
        """INCR key BY by: the new value of the counter (a signed 64-bit integer stored as its
        decimal text; an absent key counts as 0). ServerError if the value is not such an
        integer or the sum overflows (nothing changes). fence, ifrev and session as put()."""
        return int(self._write(Cmd("INCR", key, "BY", int(by)), fence, ifrev, session,
                               traceparent, traced=True))

    def txn(self, session: Optional["Session"] = None) -> Txn:
        """A TXN builder (docs/protocol.md "TXN"): c.txn().if_rev("k", "=", 7).then_put("k",
        "v").else_incr("misses").commit() -> TxnResult(succeeded, revision, results). All of
        one branch applies, or nothing (ServerError, Stale, TooLarge, NoSpace: nothing changed).
        With a session it is sent with REQ (exactly once, retried until its outcome is known)."""
        return Txn(lambda cmd, fence: self._write(cmd, fence, None, session))

    def delete(self, key: str, fence: Optional[Fence] = None, ifrev: Optional[int] = None,
               session: Optional["Session"] = None, traceparent: Optional[str] = None) -> bool:
        """DEL: True if the key existed. Same fence/ifrev/session/traceparent rules as put()."""
        return bool(self._write(Cmd("DEL", key), fence, ifrev, session, traceparent,
                                traced=True) == 1)

    def _write(self, cmd: Cmd, fence: Optional[Fence], ifrev: Optional[int],
               session: Optional["Session"], traceparent: Optional[str] = None,
               traced: bool = False) -> Any:
        if traceparent and fence is None:
            raise ValueError("traceparent goes with fence: only a fenced write carries one")
        if fence is not None:
            name, token = fence
            cmd.add("FENCE", name, token)
            if traced:  # PUT, DEL, INCR (not a TXN's own FENCE)
                cmd.add(*trace_args(traceparent))
        if ifrev is not None:
            cmd.add("IFREV", ifrev)
        if session is None:
            return self.call(cmd, retry=False)
        return session._mutate(cmd)

    # ---- locks and fencing ----
    def lock_info(self, name: str) -> Optional[Dict[str, Any]]:
        """None if the lock is free and nobody waits; else a dict (holder, token, waiters,
        mode, holders, lockdelay, held_since_ms; count: the holds of a reentrant holder)."""
        d: Optional[Dict[str, Any]] = as_map(self.call(Cmd("LOCK.INFO", name)))
        if d is not None and isinstance(d.get("holders"), list):
            d["holders"] = [as_map(h) for h in d["holders"]]
        return d

    def lock_history(self, name: str, count: Optional[int] = None,
                     before: Optional[int] = None) -> List[Dict[str, Any]]:
        """LOCK.HISTORY: the grants of lock (semaphore, election) `name`, newest first, each a
        dict (session, session_name, user, token, granted_ms, waited_ms, ended_rev, ended_ms,
        ended_by, held_ms, waiters_total, waiters ...); at most `count`, tokens below `before`
        (the next page). errors.Compacted when that range was dropped."""
        return history_entries(self.call(Cmd(*history_args(name, count, before))))

    def locks(self, prefix: str = "", limit: Optional[int] = None) -> List[Dict[str, Any]]:
        cmd = Cmd("LOCKS", prefix)
        if limit:
            cmd.add("LIMIT", limit)
        return [as_map(x) for x in self.call(cmd)]

    def fence_check(self, name: str, token: int) -> bool:
        """True while token is a current holder's (permit's, leader's) token, else False."""
        try:
            self.call(Cmd("FENCE.CHECK", name, token))
            return True
        except errors.Stale:
            return False

    def revoke_lock(self, name: str, deadline: Optional[float] = None,
                    reason: Optional[str] = None) -> int:
        """LOCK.REVOKE: ask the holder of lock `name` to let go; with `deadline` (seconds) the
        servers take the grant then if it still holds the lock (as an expiry: lock-delay,
        then the next waiter). The grant's token; NotHolder if nobody holds it exclusively,
        PermissionDenied without the revoke permission (or admin)."""
        return int(self.call(Cmd(*revoke_cmd_args(name, deadline, reason))))

    def auth_token(self, ttl: Optional[float] = None) -> str:
        """AUTH.TOKEN: a bearer token for the HTTP API naming the user this client authenticated
        as, valid for `ttl` seconds (None: the servers' --http-token-ttl; at least 1 s, at most
        --http-token-max-ttl). Send it as `Authorization: Bearer <token>`; it has the user's
        rights until it expires, the user is removed or re-passworded, or the key changes.
        ServerError without users on the servers (no --acl-file). A credential: do not log it."""
        return str(s_(self.call(Cmd(*auth_token_args(ttl)))))

    def sign(self, name: str, token: int) -> str:
        """FENCE.SIGN name token: the server's signature of (name, token) as hex, for a
        resource that verifies tokens offline; Stale if token is not the current one."""
        return str(s_(self.call(Cmd("FENCE.SIGN", name, token))))

    # ---- semaphores and elections (reads) ----
    def sem_info(self, name: str) -> Optional[Dict[str, Any]]:
        d: Optional[Dict[str, Any]] = as_map(self.call(Cmd("SEM.INFO", name)))
        if d is not None and isinstance(d.get("holders"), list):
            d["holders"] = [as_map(h) for h in d["holders"]]
        return d

    def sem_setlimit(self, name: str, limit: int) -> bool:
        """SEM.SETLIMIT (admin): the operator's limit of the semaphore name, kept until
        sem_limit_reset whether or not the semaphore exists, and winning over the acquirers'
        limit (sem_info shows limit_set_by_operator 1). True (the server's servers before
        operators' limits answered False for a semaphore that did not exist). Holders above a
        lower limit keep their permits; nothing is granted until they fit."""
        return self.call(Cmd("SEM.SETLIMIT", name, int(limit))) is not None

    def sem_limit_reset(self, name: str) -> bool:
        """SEM.SETLIMIT name RESET (admin): remove the operator's limit; True if there was one
        (a resend after a lost reply answers False). A live semaphore keeps its limit until it
        is dropped; then the acquirers' limit rules again."""
        return bool(self.call(Cmd("SEM.SETLIMIT", name, "RESET")) == 1)

    def leader(self, name: str) -> Optional[LeaderInfo]:
        """The election's LeaderInfo, or None if nobody leads."""
        r = self.call(Cmd("ELECT.LEADER", name))
        return None if r is None else leader_info(r)

    def observe(self, name: str, after_rev: int = 0, wait: float = 10.0) -> Optional[LeaderInfo]:
        """Block until the election changed after after_rev (0: the current state at once):
        its LeaderInfo (sid 0 when nobody leads), or None when wait (seconds) ran out. Pass
        each answer's .rev back: no change is missed, no older leader follows a newer one."""
        end = time.monotonic() + wait
        cmd = Cmd("ELECT.OBSERVE", name)
        if after_rev:
            cmd.add("AFTER", after_rev)
        cmd.wait(end)
        r = self.call(cmd, deadline=end + self.timeout)
        return None if r is None else leader_info(r)

    # ---- latches and barriers (docs/protocol.md "Latches and barriers") ----
    def latch_create(self, name: str, count: int) -> None:
        """LATCH.CREATE: a countdown latch of `count` counts (the same count again: no change;
        another count: ServerError; a broken latch: Broken)."""
        self.call(Cmd("LATCH.CREATE", name, int(count)), retry=False)

    def latch_wait(self, name: str, wait: float = 30.0) -> bool:
        """LATCH.WAIT: True once the latch is at zero, False when wait (seconds) ran out;
        Broken if a joined session ended before counting down."""
        end = time.monotonic() + wait
        cmd = Cmd("LATCH.WAIT", name)
        if wait > 0:
            cmd.wait(end)
        return self.call(cmd, deadline=end + self.timeout) is not None

    def latch_info(self, name: str) -> Optional[Dict[str, Any]]:
        """LATCH.INFO: None, or type, state, count, remaining, joiners, counted, broken_sid."""
        d: Optional[Dict[str, Any]] = as_map(self.call(Cmd("LATCH.INFO", name)))
        return d

    def latch_delete(self, name: str) -> bool:
        """LATCH.DELETE: True if a latch or barrier of that name was deleted."""
        return bool(self.call(Cmd("LATCH.DELETE", name), retry=False) == 1)

    # ---- watch and cluster ----
    def watch(self, prefix: str = "", from_id: str = "$") -> "Watch":
        """A Watch of the event stream (fencelock:events[:prefix]) after from_id."""
        from .watch import Watch
        return Watch(self, prefix, from_id)

    def members(self) -> List[Dict[str, Any]]:
        """CLUSTER.MEMBERS of any node: a list of dicts."""
        return [as_map(m) for m in self.call(Cmd("CLUSTER.MEMBERS"), anynode=True)]

    def session_info(self, sid: int) -> Optional[Dict[str, Any]]:
        r: Optional[Dict[str, Any]] = as_map(self.call(Cmd("SESSION.INFO", sid)))
        return r

    def revoke(self, sid: int) -> None:
        """SESSION.REVOKE (admin): end any session as an expiry does."""
        status(self.call(Cmd("SESSION.REVOKE", sid), retry=False))
