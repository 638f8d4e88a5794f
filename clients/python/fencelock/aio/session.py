# SPDX-License-Identifier: Apache-2.0
"""AsyncSession: a lease on the servers, renewed by a task of its own every TTL/3, and the
numbering (`REQ sid seq`) that makes every mutation through it apply exactly once however
often it is resent across fail-overs. The rules are the blocking Session's (session.py) and
libfencelock's (docs/client.md "Sessions and the safe deadline"):

- safe_until() = send time of the last acknowledged keepalive + TTL - margin - TTL*drift, on
  time.monotonic(): never later than the servers' deadline, which they count from the
  keepalive's arrival on the leader;
- LOST when a server answers -NOSESSION or the safe deadline passes without an acknowledged
  keepalive (the keepalive task sleeps until then at the latest). Lost is terminal: the
  `lost` asyncio.Event is set, each on_lost callback runs once (a coroutine function's result
  is awaited in a task of its own), the tasks inside `async with session.guard()` are
  cancelled, safe_until() returns 0.0 and every call raises SessionLost;
- mutations are serialized by an asyncio.Lock (their seqs must reach the server in order):
  open one session per concurrent waiter;
- a wait (lock, permit, campaign) whose outcome could not be learned, or that the caller
  cancelled, sends the release with a fresh seq, so no grant the caller never saw outlives
  the call.

States: OPEN -> LOST (deadline passed, -NOSESSION: _set_lost: callbacks, guards cancelled)
and OPEN -> CLOSED (close(): the `lost` event is set too, as the session can do nothing more,
but neither callbacks nor guards hear of it, as with libfencelock's on_lost).
"""

import asyncio
import contextlib
import inspect
import time
from typing import (TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Collection, Dict,
                    Generator, List, Optional, Sequence, Set, Tuple, Union)

from .. import errors
from .._common import (KA_PER_TTL, KA_RETRIES_PER_TTL, KA_RETRY_MIN, Fence, Revoke, Value,
                       Waiter, check_ttl, lock_cmd_args, ms, multi_lock_args, reentrant_args,
                       seconds_arg, sem_args, span, trace_args)
from ..conn import Cmd

if TYPE_CHECKING:
    from .client import AsyncClient, AsyncTxn

__all__ = ["AsyncSession", "LostCallback"]

LostCallback = Callable[["AsyncSession"], Union[None, Awaitable[None]]]


class AsyncSession:
    """A lease. Made by `await client.session(ttl=10.0)` or `async with client.session(...)`
    (closed on exit)."""

    def __init__(self, client: "AsyncClient", ttl: float, lock_delay: float,
                 name: Optional[str], on_lost: Optional[LostCallback], reentrant: bool = False,
                 max_count: Optional[int] = None) -> None:
        self._reentrant_args = reentrant_args(reentrant, max_count)
        self.reentrant = reentrant
        self.client = client
        self.ttl_ms = ms(ttl, "ttl")
        self.ttl = self.ttl_ms / 1000.0
        self.lock_delay_ms = ms(lock_delay, "lock_delay", 0)
        self.name = name
        self.sid = 0
        # set once the session is lost or closed (on_lost and guard() hear only of a loss)
        self.lost = asyncio.Event()
        self._safe_until = 0.0
        self._seq = 0
        self._op = asyncio.Lock()  # held across a mutation: seqs reach the server in order
        self._callbacks: List[LostCallback] = [on_lost] if on_lost is not None else []
        self._guarded: Set["asyncio.Task[Any]"] = set()
        self._background: Set["asyncio.Task[Any]"] = set()
        self._stopping = asyncio.Event()
        self._ka: Optional["asyncio.Task[None]"] = None

    async def _open(self) -> "AsyncSession":
        cmd = Cmd("SESSION.OPEN", self.ttl_ms)
        if self.lock_delay_ms:
            cmd.add("LOCKDELAY", self.lock_delay_ms)
        if self.name:
            cmd.add("NAME", self.name)
        cmd.add(*self._reentrant_args)
        sent = time.monotonic()
        # A resend after a lost answer may leave an unused session behind; it expires.
        self.sid = int(await self.client.call(cmd))
        self._safe_until = sent + self._span(self.ttl_ms)
        # max_hold_deadline by lock name, with the token of the grant it belongs to
        self._max_hold: Dict[str, Tuple[int, float]] = {}
        self._ka = asyncio.ensure_future(self._keepalive())
        return self

    # ---- the safe deadline and loss ----
    def _span(self, granted_ms: int) -> float:
        return span(granted_ms, self.client.margin, self.client.drift_ppm)

    def safe_until(self) -> float:
        """time.monotonic() value before which the session surely lives on the servers, so
        that what is held through it is still held; 0.0 once lost."""
        return 0.0 if self.is_lost() else self._safe_until

    def is_lost(self) -> bool:
        if not self.lost.is_set() and time.monotonic() >= self._safe_until:
            self._set_lost()
        return self.lost.is_set()

    def on_lost(self, cb: LostCallback) -> None:
        """cb(session) once the session is lost (soon, from the loop, if it already is). A
        coroutine function's coroutine runs as a task of its own."""
        self._callbacks.append(cb)
        if self.is_lost():
            self._run_callbacks()

    def _set_lost(self) -> None:
        """OPEN -> LOST: the event, the guarded tasks, the callbacks (each once)."""
        if self.lost.is_set():
            return
        self.lost.set()
        for t in list(self._guarded):
            t.cancel()
        self._run_callbacks()

    def _run_callbacks(self) -> None:
        cbs, self._callbacks = self._callbacks, []
        for cb in cbs:
            try:
                r = cb(self)
                if inspect.isawaitable(r):
                    self._spawn(r)
            except Exception:  # noqa: BLE001 - a callback's failure is its own
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "fencelock on_lost callback failed", "session": self.sid})

    def _spawn(self, aw: Awaitable[Any]) -> None:
        t = asyncio.ensure_future(aw)
        self._background.add(t)
        t.add_done_callback(self._background.discard)

    @contextlib.asynccontextmanager
    async def guard(self) -> AsyncIterator["AsyncSession"]:
        """`async with session.guard():` the block's task is cancelled when the session is
        lost, and the block then raises SessionLost (not CancelledError): the holder's work
        stops before the servers can have given the lock to another."""
        task = asyncio.current_task()
        assert task is not None
        if self.is_lost():
            raise errors.SessionLost("session %d is lost" % self.sid)
        self._guarded.add(task)
        try:
            yield self
        except asyncio.CancelledError:
            if not self.lost.is_set():
                raise
            uncancel = getattr(task, "uncancel", None)
            if uncancel is not None:
                uncancel()
            raise errors.SessionLost("session %d was lost inside its guard" % self.sid) \
                from None
        finally:
            self._guarded.discard(task)

    async def _keepalive(self) -> None:
        """Renew every TTL/3; after a failure retry sooner (TTL/10, at least 20 ms) until the
        safe deadline passes. This task owns the transition to LOST by deadline."""
        interval = self.ttl / KA_PER_TTL
        retry = max(KA_RETRY_MIN, self.ttl / KA_RETRIES_PER_TTL)
        nxt = time.monotonic() + interval
        while not self._stopping.is_set() and not self.is_lost():
            wake = min(nxt, self._safe_until)
            now = time.monotonic()
            if now < wake:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), wake - now)
                continue
            sent = time.monotonic()
            try:
                ttl = int(await self.client.call(Cmd("SESSION.KEEPALIVE", self.sid),
                                                 deadline=self._safe_until))
            except errors.SessionLost:
                self._set_lost()
                return
            except Exception:  # noqa: BLE001 - unreachable, auth, a bad reply: retry until
                nxt = time.monotonic() + retry  # the deadline makes it lost: never die early
                continue
            granted = min(ttl, self.ttl_ms)
            self._safe_until = max(self._safe_until, sent + self._span(granted))
            nxt = sent + interval

    # ---- mutations ----
    def _check(self) -> None:
        if self.is_lost():
            raise errors.SessionLost("session %d is lost" % self.sid)

    async def _send(self, cmd: Cmd, deadline: Optional[float] = None) -> Any:
        """Send cmd with the next REQ sid seq (the op lock held by the caller)."""
        self._seq += 1
        cmd.add("REQ", self.sid, self._seq)
        try:
            return await self.client.call(cmd, deadline=deadline, retry=True)
        except errors.SessionLost:
            self._set_lost()
            raise

    async def _mutate(self, cmd: Cmd, deadline: Optional[float] = None) -> Any:
        """Send cmd with the next REQ sid seq, retried until its outcome is known."""
        self._check()
        async with self._op:
            return await self._send(cmd, deadline)

    async def _release(self, release: str, name: str) -> None:
        """Leave a queue or give back a grant never seen (best effort, fresh seq)."""
        with contextlib.suppress(errors.FencelockError):
            async with self._op:
                await self._send(Cmd(release, name, self.sid))

    async def _wait_grant(self, cmd: Cmd, wait: float, release: str,
                          what: str) -> Optional[int]:
        """LOCK / SEM.ACQUIRE / ELECT.CAMPAIGN ... [WAIT] REQ: the token; LockTimeout for nil
        after a wait, None for nil of a try. On an unknown outcome or a cancellation, the
        release goes out with a fresh seq before the error is raised."""
        self._check()
        end = time.monotonic() + wait
        if wait > 0:
            cmd.wait(end)
        name = str(cmd.argv[1])
        sent = False
        try:
            async with self._op:
                sent = True
                r = await self._send(cmd, deadline=end + self.client.timeout)
        except (errors.Unavailable, errors.OutcomeUnknown):
            await self._release(release, name)
            raise
        except asyncio.CancelledError:
            if sent:  # not if cancelled while queued for the op lock: nothing was asked
                self._spawn(self._release(release, name))  # after this task is gone
            raise
        if r is None:
            if wait > 0:
                raise errors.LockTimeout("%s %s not granted within %.3f s" % (what, name, wait))
            return None
        return int(r)

    # ---- locks ----
    async def acquire(self, name: str, wait: float = 30.0, shared: bool = False,
                      notify: bool = False, value: Union[None, str, bytes] = None,
                      max_hold: Optional[float] = None,
                      traceparent: Optional[str] = None) -> int:
        """LOCK name: the fencing token once granted (FIFO; LockTimeout after wait seconds).
        shared=True: a read lock. Granted once, however many fail-overs the request crosses.
        Cancelling the call leaves the queue (or gives back a grant it never returned). notify=True: the holder it queues behind
        is told (on_waiter), once. value=: the grant's value (LOCK ... VALUE: who holds it, shown
        by lock_info and the grant event); max_hold= seconds: the servers end the grant that
        long after it was made, as an expiry (max_hold_deadline(name) is the local deadline)."""
        cmd = Cmd(*lock_cmd_args(name, self.sid, shared, notify, value, max_hold,
                                 traceparent))
        sent = time.monotonic()  # before the first LOCK: the grant can only come later
        token = _granted(await self._wait_grant(cmd, wait, "UNLOCK", "lock"))
        prev = self._max_hold.get(name)
        if prev is not None and prev[0] == token:
            pass  # the holder's retry: the grant and its max hold are the first ask's
        elif max_hold is not None:
            self._max_hold[name] = (token, sent + self._span(int(round(max_hold * 1000))))
        else:
            self._max_hold.pop(name, None)
        return token

    def max_hold_deadline(self, name: str) -> Optional[float]:
        """time.monotonic() value before which the max hold of this session's last grant of
        lock `name` (acquire(..., max_hold=...)) cannot have ended it on the servers, measured
        from before the LOCK was sent, less the margins of safe_until(); None without a max
        hold. Act on the resource only while time.monotonic() is below both this and
        safe_until(). A retry by the holder does not extend it: UNLOCK and lock again."""
        held = self._max_hold.get(name)
        return held[1] if held is not None else None

    async def try_lock(self, name: str, shared: bool = False,
                   traceparent: Optional[str] = None) -> Optional[int]:
        """The token if the lock was free, else None."""
        cmd = Cmd("LOCK", name, self.sid)
        if shared:
            cmd.add("SHARED")
        cmd.add(*trace_args(traceparent))
        return await self._wait_grant(cmd, 0, "UNLOCK", "lock")

    def on_revoke(self, name: str, token: int,
                  cb: Callable[[Revoke], Any]) -> "asyncio.Task[None]":
        """cb(Revoke) (a function or a coroutine function), run for each revoke request
        (LOCK.REVOKE) of this session's grant `token` of lock `name`, as Session.on_revoke.
        Returns the task reading the events: cancel it when the lock is released."""
        from .watch import revoke_task
        return revoke_task(self.client, self.sid, name, token, cb)

    def on_waiter(self, name: str, token: int,
                  cb: Callable[[Waiter], Any]) -> "asyncio.Task[None]":
        """cb(Waiter) (a function or a coroutine function), run for each session that queued
        with notify=True behind this session's grant `token` of lock `name`, as
        Session.on_waiter. Returns the task reading the events: cancel it when released."""
        from .watch import waiter_task
        return waiter_task(self.client, name, token, cb)

    async def unlock(self, name: str, traceparent: Optional[str] = None) -> None:
        """Release the lock or leave its queue (NotHolder if neither). traceparent as
        acquire's."""
        await self._mutate(Cmd("UNLOCK", name, self.sid, *trace_args(traceparent)))

    @contextlib.asynccontextmanager
    async def lock(self, name: str, wait: float = 30.0, shared: bool = False,
                   notify: bool = False, value: Union[None, str, bytes] = None,
                   max_hold: Optional[float] = None,
                   traceparent: Optional[str] = None) -> AsyncIterator[int]:
        """async with session.lock("inventory", wait=5.0) as token: ...; unlocked on exit.
        Check time.monotonic() < session.safe_until() before acting on the resource, and
        fence writes with the token. traceparent as acquire's."""
        token = await self.acquire(name, wait=wait, shared=shared, notify=notify, value=value,
                                   max_hold=max_hold, traceparent=traceparent)
        async with _held(lambda: self.unlock(name, traceparent=traceparent)):
            yield token

    # ---- several locks at once ----
    async def _release_all(self, names: Sequence[str]) -> None:
        for name in names:
            await self._release("UNLOCK", name)

    async def _wait_multi(self, names: Sequence[str], wait: float,
                          shared: Collection[str]) -> Optional[List[int]]:
        self._check()
        cmd = Cmd(*multi_lock_args(self.sid, names, shared))
        end = time.monotonic() + wait
        if wait > 0:
            cmd.wait(end)
        sent = False
        try:
            async with self._op:
                sent = True
                r = await self._send(cmd, deadline=end + self.client.timeout)
        except (errors.Unavailable, errors.OutcomeUnknown):
            await self._release_all(names)
            raise
        except asyncio.CancelledError:
            if sent:  # not if cancelled while queued for the op lock: nothing was asked
                self._spawn(self._release_all(list(names)))
            raise
        if r is None:
            if wait > 0:
                raise errors.LockTimeout("locks %s not granted within %.3f s"
                                         % (", ".join(names), wait))
            return None
        return [int(t) for t in r]

    async def acquire_multi(self, names: Sequence[str], wait: float = 30.0,
                            shared: Collection[str] = ()) -> List[int]:
        """LOCK.MULTI: every name at once, in one log entry, or none (Session.acquire_multi).
        Cancelling the call leaves every queue (or gives back a grant it never returned)."""
        r = await self._wait_multi(names, wait, shared)
        if r is None:
            raise errors.LockTimeout("not granted (a try found one taken)")
        return r

    async def try_lock_multi(self, names: Sequence[str],
                             shared: Collection[str] = ()) -> Optional[List[int]]:
        """The tokens if every name was free, else None (and nothing held)."""
        return await self._wait_multi(names, 0, shared)

    async def unlock_multi(self, names: Sequence[str]) -> None:
        """UNLOCK each name; every name is tried, the first error raised after."""
        first: Optional[errors.FencelockError] = None
        for name in names:
            try:
                await self.unlock(name)
            except errors.FencelockError as e:
                first = first or e
        if first is not None:
            raise first

    @contextlib.asynccontextmanager
    async def lock_multi(self, names: Sequence[str], wait: float = 30.0,
                         shared: Collection[str] = ()) -> AsyncIterator[List[int]]:
        """async with session.lock_multi(["stock/a", "stock/b"]) as tokens: ..."""
        tokens = await self.acquire_multi(names, wait=wait, shared=shared)
        async with _held(lambda: self.unlock_multi(names)):
            yield tokens

    # ---- keys ----
    async def put(self, key: str, value: Value, fence: Optional[Fence] = None,
                  ifrev: Optional[int] = None, lease: bool = False,
                  traceparent: Optional[str] = None) -> int:
        """AsyncClient.put through this session (exactly once)."""
        return await self.client.put(key, value, fence=fence, ifrev=ifrev, session=self,
                                     lease=lease, traceparent=traceparent)

    async def delete(self, key: str, fence: Optional[Fence] = None,
                     ifrev: Optional[int] = None, traceparent: Optional[str] = None) -> bool:
        return await self.client.delete(key, fence=fence, ifrev=ifrev, session=self,
                                        traceparent=traceparent)

    async def incr(self, key: str, by: int = 1, fence: Optional[Fence] = None,
                   ifrev: Optional[int] = None, traceparent: Optional[str] = None) -> int:
        """AsyncClient.incr through this session (exactly once)."""
        return await self.client.incr(key, by, fence=fence, ifrev=ifrev, session=self,
                                      traceparent=traceparent)

    def txn(self) -> "AsyncTxn":
        """AsyncClient.txn through this session (exactly once)."""
        return self.client.txn(session=self)

    # ---- semaphores ----
    async def sem_acquire(self, name: str, limit: int, wait: float = 30.0,
                          permits: int = 1) -> int:
        """SEM.ACQUIRE: as the sync Session.sem_acquire (`permits` at once, one token)."""
        return _granted(await self._wait_grant(Cmd(*sem_args(name, self.sid, limit, permits)),
                                               wait, "SEM.RELEASE", "permit of"))

    async def sem_release(self, name: str) -> None:
        await self._mutate(Cmd("SEM.RELEASE", name, self.sid))

    @contextlib.asynccontextmanager
    async def semaphore(self, name: str, limit: int, wait: float = 30.0,
                        permits: int = 1) -> AsyncIterator[int]:
        token = await self.sem_acquire(name, limit, wait, permits)
        async with _held(lambda: self.sem_release(name)):
            yield token

    # ---- latches and barriers ----
    async def latch_join(self, name: str) -> None:
        """LATCH.JOIN: this session promises one count-down; if it ends before, the latch
        breaks (every waiter gets Broken)."""
        await self._mutate(Cmd("LATCH.JOIN", name, self.sid))

    async def latch_countdown(self, name: str) -> int:
        """LATCH.COUNTDOWN: the counts left (a joined session counts down once)."""
        return int(await self._mutate(Cmd("LATCH.COUNTDOWN", name, self.sid)))

    async def barrier_enter(self, name: str, count: int, wait: float = 30.0) -> bool:
        """BARRIER.ENTER: True once `count` sessions are inside, False when wait ran out (the
        session stays inside); Broken if one ended inside."""
        end = time.monotonic() + wait
        cmd = Cmd("BARRIER.ENTER", name, self.sid, int(count))
        if wait > 0:
            cmd.wait(end)
        return await self._mutate(cmd, deadline=end + self.client.timeout) is not None

    async def barrier_leave(self, name: str, wait: float = 30.0) -> bool:
        """BARRIER.LEAVE: True once every session that entered has left, False when wait ran
        out (this session has left all the same); Broken if one ended inside."""
        end = time.monotonic() + wait
        cmd = Cmd("BARRIER.LEAVE", name, self.sid)
        if wait > 0:
            cmd.wait(end)
        return await self._mutate(cmd, deadline=end + self.client.timeout) is not None

    # ---- elections ----
    async def campaign(self, name: str, value: Value = b"", wait: float = 30.0) -> int:
        """ELECT.CAMPAIGN: the leader's token once this session leads; LockTimeout after
        wait (no longer a candidate then)."""
        return _granted(await self._wait_grant(Cmd("ELECT.CAMPAIGN", name, self.sid, value),
                                               wait, "ELECT.RESIGN", "leadership of"))

    async def proclaim(self, name: str, token: int, value: Value) -> int:
        """ELECT.PROCLAIM: the leader's new value; the revision (Stale if not the leader)."""
        return int(await self._mutate(Cmd("ELECT.PROCLAIM", name, self.sid, token, value)))

    async def resign(self, name: str) -> None:
        await self._mutate(Cmd("ELECT.RESIGN", name, self.sid))

    # ---- end ----
    async def _stop_task(self) -> None:
        self._stopping.set()
        if self._ka is not None and self._ka is not asyncio.current_task():
            await asyncio.gather(self._ka, return_exceptions=True)

    async def close(self) -> None:
        """Stop renewing, then SESSION.CLOSE (releases its locks now, no lock-delay). A
        session lost locally is still closed on the servers if it lives there."""
        await self._stop_task()
        try:
            async with self._op:  # after any mutation in flight
                self._seq += 1
                await self.client.call(Cmd("SESSION.CLOSE", self.sid, "REQ", self.sid,
                                           self._seq))
        except errors.SessionLost:
            pass  # already gone on the servers
        finally:
            self.lost.set()  # CLOSED: terminal, but not a loss (no callbacks, no cancel)

    async def abandon(self) -> None:
        """Stop renewing without closing: the lease runs out on the servers (lock-delay
        applies)."""
        await self._stop_task()

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, typ: Optional[type], val: Optional[BaseException],
                        tb: Any) -> None:
        try:
            await self.close()
        except errors.FencelockError:
            if typ is None:  # do not hide the block's own exception behind the close's
                raise


class SessionOpener:
    """What AsyncClient.session() returns: awaited, the open session; used with `async with`,
    the open session, closed on exit."""

    def __init__(self, client: "AsyncClient", ttl: Optional[float], lock_delay: Optional[float],
                 name: Optional[str], on_lost: Optional[LostCallback],
                 ttl_ms: Optional[float], lock_delay_ms: Optional[float],
                 reentrant: bool = False, max_count: Optional[int] = None) -> None:
        ttl_s = seconds_arg(ttl, ttl_ms, "ttl", None, 4)
        if ttl_s is None:
            raise TypeError("a session needs a ttl (seconds)")
        if ttl_ms is None:
            check_ttl(ttl_s, 4)
        delay = seconds_arg(lock_delay, lock_delay_ms, "lock_delay", 0.0, 4) or 0.0
        self._session = AsyncSession(client, ttl_s, delay, name, on_lost, reentrant, max_count)

    def __await__(self) -> Generator[Any, None, AsyncSession]:
        return self._session._open().__await__()

    async def __aenter__(self) -> AsyncSession:
        return await self._session._open()

    async def __aexit__(self, typ: Optional[type], val: Optional[BaseException],
                        tb: Any) -> None:
        await self._session.__aexit__(typ, val, tb)


def _granted(token: Optional[int]) -> int:
    if token is None:
        raise errors.LockTimeout("not granted (a try found it taken)")
    return token


@contextlib.asynccontextmanager
async def _held(release: Callable[[], Awaitable[None]]) -> AsyncIterator[None]:
    """Release on exit. A release that fails because the session is gone is not an error of
    the block (the hold is gone with it); other failures surface unless the block raised."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(errors.FencelockError):
            await release()
        raise
    with contextlib.suppress(errors.SessionLost, errors.NotHolder):
        await release()
