# SPDX-License-Identifier: Apache-2.0
"""AsyncClient: the asyncio twin of fencelock.Client, on redis.asyncio. One per event loop;
the calls that need no session (reads, writes without a session sent once, fence checks,
elections' leader and observe, watch, members) and AsyncSession's factory. Times at this API
are seconds (floats).
"""

import time
from typing import Any, Dict, List, Optional, Union

from .. import errors
from .._common import (Fence, LeaderInfo, SSLSpec, Value, as_map, history_args, history_entries,
                       leader_info, revoke_cmd_args, auth_token_args,
                       s_, seconds_arg, status, trace_args)
from .._txn import TxnBuilder, TxnResult, txn_result
from ..conn import Cmd
from ._conn import AsyncPool
from .session import AsyncSession, LostCallback, SessionOpener
from .watch import AsyncWatch

__all__ = ["AsyncClient"]


class AsyncClient:
    """A fencelock client for asyncio code. Arguments as fencelock.Client: endpoints
    ("host:port,..." or a list), username/password (AUTH on every new connection), ssl (None,
    True, an SSLContext, or {"ca", "cert", "key", "server_name"}), timeout (each call's
    deadline, seconds), connect_timeout, margin (seconds) and drift_ppm (what a session's
    safe deadline keeps back). Use `async with AsyncClient(...) as c` or await c.close()."""

    def __init__(self, endpoints: Union[str, List[str]], username: Optional[str] = None,
                 password: Optional[str] = None, ssl: SSLSpec = None, timeout: float = 5.0,
                 connect_timeout: float = 1.0, margin: Optional[float] = None,
                 drift_ppm: int = 10000, *, margin_ms: Optional[float] = None) -> None:
        self._pool = AsyncPool(endpoints, username, password, ssl, timeout, connect_timeout)
        self.timeout = timeout
        self.margin: float = seconds_arg(margin, margin_ms, "margin", 0.010) or 0.0
        self.drift_ppm = drift_ppm

    # ---- plumbing ----
    async def close(self) -> None:
        """Close the idle connections (sessions must be closed first)."""
        await self._pool.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def leader_address(self) -> Optional[str]:
        """The leader's client address as last learned, or None."""
        return self._pool.leader

    async def call(self, cmd: Cmd, deadline: Optional[float] = None, retry: bool = True,
                   anynode: bool = False) -> Any:
        """Send a Cmd through the call path (internal: AsyncSession, AsyncWatch)."""
        return await self._pool.call(cmd, deadline, retry, anynode)

    async def execute(self, *args: Any, retry: bool = True) -> Any:
        """Any command, with redirects followed. retry=False for a write that carries no
        `REQ sid seq`: sent once, a lost answer raises OutcomeUnknown."""
        return await self.call(Cmd(*args), retry=retry)

    def session(self, ttl: Optional[float] = None, lock_delay: Optional[float] = None,
                name: Optional[str] = None, on_lost: Optional[LostCallback] = None, *,
                ttl_ms: Optional[float] = None,
                lock_delay_ms: Optional[float] = None, reentrant: bool = False,
                max_count: Optional[int] = None) -> SessionOpener:
        """A session with a lease of ttl seconds, kept alive by a task: `s = await
        c.session(ttl=10.0)` or `async with c.session(ttl=10.0) as s:` (closed on exit).
        on_lost(session): a function or coroutine function, run once when it is lost.
        reentrant and max_count as fencelock.Client.session."""
        return SessionOpener(self, ttl, lock_delay, name, on_lost, ttl_ms, lock_delay_ms,
                             reentrant, max_count)

    # ---- keys ----
    async def get(self, key: str) -> Optional[bytes]:
        """The value (bytes) or None."""
        r: Optional[bytes] = await self.call(Cmd("GET", key))
        return r

    async def kv_get(self, key: str) -> Optional[Dict[str, Any]]:
        """None, or a dict: value, create_rev, mod_rev, version, lease."""
        r: Optional[Dict[str, Any]] = as_map(await self.call(Cmd("KV.GET", key)))
        return r

    async def keys(self, prefix: str = "", limit: Optional[int] = None) -> List[bytes]:
        cmd = Cmd("KEYS", prefix)
        if limit:
            cmd.add("LIMIT", limit)
        return list(await self.call(cmd))

    async def put(self, key: str, value: Value, fence: Optional[Fence] = None,
                  ifrev: Optional[int] = None, session: Optional[AsyncSession] = None,
                  lease: bool = False, traceparent: Optional[str] = None) -> int:
        """PUT: the revision; fence, ifrev, session and lease as fencelock.Client.put. Without
        a session it is sent once (OutcomeUnknown if the answer is lost)."""
        cmd = Cmd("PUT", key, value)
        if lease:
            if session is None:
                raise ValueError("lease needs a session")
            cmd.add("LEASE", session.sid)
        return int(await self._write(cmd, fence, ifrev, session, traceparent, traced=True))

    async def incr(self, key: str, by: int = 1, fence: Optional[Fence] = None,
                   ifrev: Optional[int] = None, session: Optional[AsyncSession] = None,
                   traceparent: Optional[str] = None) -> int:
        """INCR key BY by: the counter's new value, as fencelock.Client.incr."""
        return int(await self._write(Cmd("INCR", key, "BY", int(by)), fence, ifrev, session,
                                     traceparent, traced=True))

    def txn(self, session: Optional[AsyncSession] = None) -> "AsyncTxn":
        """A TXN builder, as fencelock.Client.txn; `await ....commit()`."""
        return AsyncTxn(self, session)

    async def delete(self, key: str, fence: Optional[Fence] = None, ifrev: Optional[int] = None,
                     session: Optional[AsyncSession] = None,
                     traceparent: Optional[str] = None) -> bool:
        """DEL: True if the key existed."""
        return bool(await self._write(Cmd("DEL", key), fence, ifrev, session, traceparent,
                                      traced=True) == 1)

    async def _write(self, cmd: Cmd, fence: Optional[Fence], ifrev: Optional[int],
                     session: Optional[AsyncSession], traceparent: Optional[str] = None,
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
            return await self.call(cmd, retry=False)
        return await session._mutate(cmd)

    # ---- locks and fencing ----
    async def lock_info(self, name: str) -> Optional[Dict[str, Any]]:
        """None if the lock is free and nobody waits; else a dict (holder, token, waiters,
        mode, holders, lockdelay, held_since_ms; count: the holds of a reentrant holder)."""
        d: Optional[Dict[str, Any]] = as_map(await self.call(Cmd("LOCK.INFO", name)))
        if d is not None and isinstance(d.get("holders"), list):
            d["holders"] = [as_map(h) for h in d["holders"]]
        return d

    async def lock_history(self, name: str, count: Optional[int] = None,
                           before: Optional[int] = None) -> List[Dict[str, Any]]:
        """LOCK.HISTORY, as Client.lock_history."""
        return history_entries(await self.call(Cmd(*history_args(name, count, before))))

    async def revoke_lock(self, name: str, deadline: Optional[float] = None,
                          reason: Optional[str] = None) -> int:
        """LOCK.REVOKE, as Client.revoke_lock."""
        return int(await self.call(Cmd(*revoke_cmd_args(name, deadline, reason))))

    async def fence_check(self, name: str, token: int) -> bool:
        """True while token is a current holder's (permit's, leader's) token, else False."""
        try:
            await self.call(Cmd("FENCE.CHECK", name, token))
            return True
        except errors.Stale:
            return False

    async def auth_token(self, ttl: Optional[float] = None) -> str:
        """AUTH.TOKEN: a bearer token for the HTTP API; as the sync Client.auth_token."""
        return str(s_(await self.call(Cmd(*auth_token_args(ttl)))))

    async def sign(self, name: str, token: int) -> str:
        """FENCE.SIGN: the server's signature of (name, token) as hex; Stale if not current."""
        return str(s_(await self.call(Cmd("FENCE.SIGN", name, token))))

    async def sem_info(self, name: str) -> Optional[Dict[str, Any]]:
        d: Optional[Dict[str, Any]] = as_map(await self.call(Cmd("SEM.INFO", name)))
        if d is not None and isinstance(d.get("holders"), list):
            d["holders"] = [as_map(h) for h in d["holders"]]
        return d

    async def sem_setlimit(self, name: str, limit: int) -> bool:
        """SEM.SETLIMIT (admin): as the sync Client.sem_setlimit."""
        return await self.call(Cmd("SEM.SETLIMIT", name, int(limit))) is not None

    async def sem_limit_reset(self, name: str) -> bool:
        """SEM.SETLIMIT name RESET (admin): as the sync Client.sem_limit_reset."""
        return bool(await self.call(Cmd("SEM.SETLIMIT", name, "RESET")) == 1)

    # ---- latches and barriers (docs/protocol.md "Latches and barriers") ----
    async def latch_create(self, name: str, count: int) -> None:
        """LATCH.CREATE: a countdown latch of `count` counts (the same count again: no change;
        another count: ServerError; a broken latch: Broken)."""
        await self.call(Cmd("LATCH.CREATE", name, int(count)), retry=False)

    async def latch_wait(self, name: str, wait: float = 30.0) -> bool:
        """LATCH.WAIT: True once the latch is at zero, False when wait (seconds) ran out;
        Broken if a joined session ended before counting down."""
        end = time.monotonic() + wait
        cmd = Cmd("LATCH.WAIT", name)
        if wait > 0:
            cmd.wait(end)
        return await self.call(cmd, deadline=end + self.timeout) is not None

    async def latch_info(self, name: str) -> Optional[Dict[str, Any]]:
        """LATCH.INFO: None, or type, state, count, remaining, joiners, counted, broken_sid."""
        d: Optional[Dict[str, Any]] = as_map(await self.call(Cmd("LATCH.INFO", name)))
        return d

    async def latch_delete(self, name: str) -> bool:
        """LATCH.DELETE: True if a latch or barrier of that name was deleted."""
        return bool(await self.call(Cmd("LATCH.DELETE", name), retry=False) == 1)

    # ---- elections ----
    async def leader(self, name: str) -> Optional[LeaderInfo]:
        """The election's LeaderInfo, or None if nobody leads."""
        r = await self.call(Cmd("ELECT.LEADER", name))
        return None if r is None else leader_info(r)

    async def observe(self, name: str, after_rev: int = 0,
                      wait: float = 10.0) -> Optional[LeaderInfo]:
        """The election's LeaderInfo once it changed after after_rev (0: at once), or None
        when wait (seconds) ran out. Pass each answer's .rev back."""
        end = time.monotonic() + wait
        cmd = Cmd("ELECT.OBSERVE", name)
        if after_rev:
            cmd.add("AFTER", after_rev)
        cmd.wait(end)
        r = await self.call(cmd, deadline=end + self.timeout)
        return None if r is None else leader_info(r)

    # ---- watch and cluster ----
    def watch(self, prefix: str = "", from_id: str = "$", block: float = 0.5) -> AsyncWatch:
        """An async iterator of the events after from_id ("$": after now) of the keys and
        names under prefix: `async for ev in c.watch("inv/"): ...`."""
        return AsyncWatch(self, prefix, from_id, block=block)

    async def members(self) -> List[Dict[str, Any]]:
        """CLUSTER.MEMBERS of any node: a list of dicts."""
        return [as_map(m) for m in await self.call(Cmd("CLUSTER.MEMBERS"), anynode=True)]

    async def session_info(self, sid: int) -> Optional[Dict[str, Any]]:
        r: Optional[Dict[str, Any]] = as_map(await self.call(Cmd("SESSION.INFO", sid)))
        return r

    async def revoke(self, sid: int) -> None:
        """SESSION.REVOKE (admin): end any session as an expiry does."""
        status(await self.call(Cmd("SESSION.REVOKE", sid), retry=False))


class AsyncTxn(TxnBuilder):
    """AsyncClient.txn(): `await commit()` sends it."""

    def __init__(self, client: "AsyncClient", session: Optional[AsyncSession]) -> None:
        super().__init__()
        self._client = client
        self._session = session

    async def commit(self) -> TxnResult:
        r = await self._client._write(self.cmd(), self._fence, None, self._session)
        return txn_result(r)
