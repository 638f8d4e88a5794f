# SPDX-License-Identifier: Apache-2.0
"""Session: a lease on the servers, renewed by a thread of its own every TTL/3, and the
numbering (`REQ sid seq`) that makes every mutation through it apply exactly once however
often it is resent across fail-overs. The rules are libfencelock's (src/client/session.c,
lock.c, prims.c; docs/client.md "Sessions and the safe deadline"):

- safe_until() = send time of the last acknowledged keepalive + TTL - margin - TTL*drift, on
  time.monotonic(): never later than the servers' deadline, which they count from the
  keepalive's *arrival* on the leader;
- the session is LOST when a server answers -NOSESSION or when the safe deadline passes
  without an acknowledged keepalive. Lost is terminal: on_lost runs once (on the keepalive
  thread), safe_until() returns 0.0 and every call raises SessionLost;
- mutations are serialized (their seqs must reach the server in order): use one session per
  thread if threads must wait for locks concurrently;
- a wait (lock, permit, campaign) whose outcome could not be learned sends the release with
  a fresh seq before raising, so no grant the caller never saw outlives the call.
"""

import contextlib
import threading
import time
from typing import (TYPE_CHECKING, Any, Callable, Collection, Dict, Iterator, List, Optional,
                    Sequence, Tuple, TypeVar, Union)

from . import errors
from ._common import (KA_PER_TTL, KA_RETRIES_PER_TTL, KA_RETRY_MIN, Fence, Revoke, Value,
                      Waiter, check_ttl, lock_cmd_args, ms, multi_lock_args, reentrant_args,
                      seconds_arg, sem_args, span, trace_args)
from .conn import Cmd

if TYPE_CHECKING:
    from ._txn import Txn
    from .client import Client
    from .watch import RevokeWatch, WaiterWatch

__all__ = ["Session"]


class Session:
    """A lease. Use as a context manager (closes on exit) or call close().

    ttl and lock_delay are seconds (floats); ttl_ms= and lock_delay_ms= are the deprecated
    spellings of earlier releases (milliseconds, with a DeprecationWarning)."""

    def __init__(self, client: "Client", ttl: Optional[float] = None,
                 lock_delay: Optional[float] = None, name: Optional[str] = None,
                 on_lost: Optional[Callable[["Session"], None]] = None, *,
                 ttl_ms: Optional[float] = None, lock_delay_ms: Optional[float] = None,
                 reentrant: bool = False, max_count: Optional[int] = None,
                 _depth: int = 0) -> None:
        lvl = 3 + _depth
        ttl_s = seconds_arg(ttl, ttl_ms, "ttl", None, lvl)
        if ttl_s is None:
            raise TypeError("a session needs a ttl (seconds)")
        if ttl_ms is None:
            check_ttl(ttl_s, lvl)
        delay_s = seconds_arg(lock_delay, lock_delay_ms, "lock_delay", 0.0, lvl) or 0.0
        self.client = client
        self.ttl_ms = ms(ttl_s, "ttl")
        self.ttl = self.ttl_ms / 1000.0
        self.lock_delay_ms = ms(delay_s, "lock_delay", 0)
        self._cv = threading.Condition()
        self._op = threading.Lock()  # held across a mutation: seqs reach the server in order
        self._seq = 0
        self._lost = False
        self._stopping = False
        self._cb_done = False
        self._on_lost = on_lost
        cmd = Cmd("SESSION.OPEN", self.ttl_ms)
        if self.lock_delay_ms:
            cmd.add("LOCKDELAY", self.lock_delay_ms)
        if name:
            cmd.add("NAME", name)
        self.reentrant = reentrant
        cmd.add(*reentrant_args(reentrant, max_count))
        sent = time.monotonic()
        # A resend after a lost answer may leave an unused session behind; it expires.
        self.sid = int(client.call(cmd))
        self._safe_until = sent + self._span(self.ttl_ms)
        # max_hold_deadline by lock name, with the token of the grant it belongs to
        self._max_hold: Dict[str, Tuple[int, float]] = {}
        self._thread = threading.Thread(target=self._keepalive, daemon=True,
                                        name="fencelock-keepalive-%d" % self.sid)
        self._thread.start()

    # ---- the safe deadline and loss ----
    def _span(self, granted_ms: int) -> float:
        """What the servers granted, less the margin for the clocks' rates, in seconds."""
        return span(granted_ms, self.client.margin, self.client.drift_ppm)

    def _lost_locked(self) -> bool:
        if not self._lost and time.monotonic() >= self._safe_until:
            self._lost = True
            self._cv.notify_all()
        return self._lost

    def safe_until(self) -> float:
        """time.monotonic() value before which the session surely lives on the servers, so
        that what is held through it is still held; 0.0 once lost."""
        with self._cv:
            return 0.0 if self._lost_locked() else self._safe_until

    def is_lost(self) -> bool:
        with self._cv:
            return self._lost_locked()

    def on_lost(self, cb: Callable[["Session"], None]) -> None:
        """cb(session), run once when the session is lost (at once if it already is)."""
        with self._cv:
            self._on_lost = cb
            self._cb_done = False
            if self._lost_locked():
                self._fire_lost()

    def _mark_lost(self) -> None:
        with self._cv:
            self._lost = True
            self._cv.notify_all()

    def _fire_lost(self) -> None:
        """Run the callback once, outside the lock (called with it held)."""
        if self._cb_done or self._on_lost is None:
            return
        self._cb_done = True
        cb = self._on_lost
        self._cv.release()
        try:
            cb(self)
        finally:
            self._cv.acquire()

    def _keepalive(self) -> None:
        """Renew every TTL/3; after a failure retry sooner (TTL/10, at least 20 ms) until the
        safe deadline passes. This thread owns the transition to LOST by deadline."""
        interval = self.ttl / KA_PER_TTL
        retry = max(KA_RETRY_MIN, self.ttl / KA_RETRIES_PER_TTL)
        nxt = time.monotonic() + interval
        with self._cv:
            while not self._stopping and not self._lost_locked():
                wake = min(nxt, self._safe_until)
                now = time.monotonic()
                if now < wake:
                    self._cv.wait(wake - now)
                    continue
                deadline = self._safe_until
                self._cv.release()
                sent = time.monotonic()
                err: Optional[Exception] = None
                ttl = 0
                try:
                    ttl = int(self.client.call(Cmd("SESSION.KEEPALIVE", self.sid),
                                               deadline=deadline))
                except errors.SessionLost as e:
                    err = e
                except Exception as e:  # noqa: BLE001 - unreachable, auth: retry until lost
                    err = e
                finally:
                    self._cv.acquire()
                if err is None:
                    granted = min(ttl, self.ttl_ms)
                    self._safe_until = max(self._safe_until, sent + self._span(granted))
                    nxt = sent + interval
                elif isinstance(err, errors.SessionLost):
                    self._lost = True
                else:
                    nxt = time.monotonic() + retry
            if self._lost:
                self._fire_lost()

    # ---- mutations ----
    def _begin(self) -> int:
        if self.is_lost():
            raise errors.SessionLost("session %d is lost" % self.sid)
        self._op.acquire()
        with self._cv:
            self._seq += 1
            return self._seq

    def _send(self, cmd: Cmd, seq: int, deadline: Optional[float] = None) -> Any:
        cmd.add("REQ", self.sid, seq)
        try:
            return self.client.call(cmd, deadline=deadline, retry=True)
        except errors.SessionLost:
            self._mark_lost()
            raise

    def _mutate(self, cmd: Cmd, deadline: Optional[float] = None) -> Any:
        """Send cmd with the next REQ sid seq, retried until its outcome is known."""
        seq = self._begin()
        try:
            return self._send(cmd, seq, deadline)
        finally:
            self._op.release()

    def _wait_grant(self, cmd: Cmd, wait: float, release: str, what: str) -> Optional[int]:
        """LOCK / SEM.ACQUIRE / ELECT.CAMPAIGN ... [WAIT] REQ: the token; LockTimeout for nil
        after a wait, None for nil of a try. On an unknown outcome, `release` with a fresh seq
        (leaves the queue or gives back a grant never seen) before raising."""
        end = time.monotonic() + wait
        if wait > 0:
            cmd.wait(end)
        seq = self._begin()
        try:
            r = self._send(cmd, seq, deadline=end + self.client.timeout)
        except (errors.Unavailable, errors.OutcomeUnknown):
            self._op.release()
            try:
                seq = self._begin()
                try:
                    self._send(Cmd(release, cmd.argv[1], self.sid), seq)
                finally:
                    self._op.release()
            except errors.FencelockError:
                pass
            raise
        except BaseException:
            self._op.release()
            raise
        self._op.release()
        if r is None:
            if wait > 0:
                raise errors.LockTimeout("%s %s not granted within %.3f s"
                                         % (what, cmd.argv[1], wait))
            return None
        return int(r)

    # ---- locks ----
    def acquire(self, name: str, wait: float = 30.0, shared: bool = False,
                      notify: bool = False, value: Union[None, str, bytes] = None,
                      max_hold: Optional[float] = None,
                      traceparent: Optional[str] = None) -> int:
        """LOCK name: the fencing token once granted (FIFO; LockTimeout after wait seconds).
        shared=True: a read lock (any number of readers or one writer). Granted once, however
        many fail-overs the request crosses. notify=True: the holder it queues behind is told
        (Session.on_waiter), once. value=: the grant's value (LOCK ... VALUE: who holds it, shown
        by lock_info and the grant event); max_hold= seconds: the servers end the grant that
        long after it was made, as an expiry (max_hold_deadline(name) is the local deadline)."""
        cmd = Cmd(*lock_cmd_args(name, self.sid, shared, notify, value, max_hold,
                                 traceparent))
        sent = time.monotonic()  # before the first LOCK: the grant can only come later
        token = _granted(self._wait_grant(cmd, wait, "UNLOCK", "lock"))
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

    def try_lock(self, name: str, shared: bool = False,
                   traceparent: Optional[str] = None) -> Optional[int]:
        """The token if the lock was free, else None."""
        cmd = Cmd("LOCK", name, self.sid)
        if shared:
            cmd.add("SHARED")
        cmd.add(*trace_args(traceparent))
        return self._wait_grant(cmd, 0, "UNLOCK", "lock")

    def unlock(self, name: str, traceparent: Optional[str] = None) -> None:
        """Release the lock or leave its queue (NotHolder if neither). traceparent as
        acquire's."""
        self._mutate(Cmd("UNLOCK", name, self.sid, *trace_args(traceparent)))

    @contextlib.contextmanager
    def lock(self, name: str, wait: float = 30.0, shared: bool = False,
             notify: bool = False, value: Union[None, str, bytes] = None,
             max_hold: Optional[float] = None,
             traceparent: Optional[str] = None) -> Iterator[int]:
        """with session.lock("inventory", wait=5.0) as token: ... ; unlocked on exit. Check
        time.monotonic() < session.safe_until() before acting on the resource, and fence
        writes with the token. traceparent as acquire's (the UNLOCK takes the span current
        then)."""
        token = self.acquire(name, wait=wait, shared=shared, notify=notify, value=value,
                             max_hold=max_hold, traceparent=traceparent)
        yield from _held(lambda: self.unlock(name, traceparent=traceparent), token)

    # ---- several locks at once ----
    def _release_all(self, names: Sequence[str]) -> None:
        """UNLOCK every name with a fresh seq each (best effort): leaves the queues of a
        request whose outcome was not learned, or gives back a grant never seen."""
        for name in names:
            try:
                seq = self._begin()
                try:
                    self._send(Cmd("UNLOCK", name, self.sid), seq)
                finally:
                    self._op.release()
            except errors.FencelockError:
                pass

    def _wait_multi(self, names: Sequence[str], wait: float,
                    shared: Collection[str]) -> Optional[List[int]]:
        cmd = Cmd(*multi_lock_args(self.sid, names, shared))
        end = time.monotonic() + wait
        if wait > 0:
            cmd.wait(end)
        seq = self._begin()
        try:
            r = self._send(cmd, seq, deadline=end + self.client.timeout)
        except (errors.Unavailable, errors.OutcomeUnknown):
            self._op.release()
            self._release_all(names)
            raise
        except BaseException:
            self._op.release()
            raise
        self._op.release()
        if r is None:
            if wait > 0:
                raise errors.LockTimeout("locks %s not granted within %.3f s"
                                         % (", ".join(names), wait))
            return None
        return [int(t) for t in r]

    def acquire_multi(self, names: Sequence[str], wait: float = 30.0,
                      shared: Collection[str] = ()) -> List[int]:
        """LOCK.MULTI: every name at once, in one log entry, or none. It waits FIFO on every
        name and holds nothing meanwhile, so two sessions asking for overlapping names in any
        order cannot deadlock. The tokens in the order of names (each resource fences with its
        own lock's token); `shared`: the names taken in shared mode. LockTimeout after wait
        seconds (nothing held). Granted once, however many fail-overs the request crosses."""
        r = self._wait_multi(names, wait, shared)
        if r is None:
            raise errors.LockTimeout("not granted (a try found one taken)")
        return r

    def try_lock_multi(self, names: Sequence[str],
                       shared: Collection[str] = ()) -> Optional[List[int]]:
        """The tokens if every name was free, else None (and nothing held)."""
        return self._wait_multi(names, 0, shared)

    def unlock_multi(self, names: Sequence[str]) -> None:
        """UNLOCK each name (each releases that name only, or leaves the request's queues);
        every name is tried, the first error raised after."""
        first: Optional[errors.FencelockError] = None
        for name in names:
            try:
                self.unlock(name)
            except errors.FencelockError as e:
                first = first or e
        if first is not None:
            raise first

    @contextlib.contextmanager
    def lock_multi(self, names: Sequence[str], wait: float = 30.0,
                   shared: Collection[str] = ()) -> Iterator[List[int]]:
        """with session.lock_multi(["stock/a", "stock/b"]) as tokens: ...; all unlocked on
        exit."""
        tokens = self.acquire_multi(names, wait=wait, shared=shared)
        yield from _held(lambda: self.unlock_multi(names), tokens)

    # ---- keys ----
    def put(self, key: str, value: Value, fence: Optional[Fence] = None,
            ifrev: Optional[int] = None, lease: bool = False,
            traceparent: Optional[str] = None) -> int:
        """Client.put through this session (exactly once)."""
        return self.client.put(key, value, fence=fence, ifrev=ifrev, session=self, lease=lease,
                               traceparent=traceparent)

    def delete(self, key: str, fence: Optional[Fence] = None, ifrev: Optional[int] = None,
               traceparent: Optional[str] = None) -> bool:
        return self.client.delete(key, fence=fence, ifrev=ifrev, session=self,
                                  traceparent=traceparent)

    def incr(self, key: str, by: int = 1, fence: Optional[Fence] = None,
             ifrev: Optional[int] = None, traceparent: Optional[str] = None) -> int:
        """Client.incr through this session (exactly once)."""
        return self.client.incr(key, by, fence=fence, ifrev=ifrev, session=self,
                                traceparent=traceparent)

    def txn(self) -> "Txn":
        """Client.txn through this session (exactly once)."""
        return self.client.txn(session=self)

    # ---- semaphores ----
    def sem_acquire(self, name: str, limit: int, wait: float = 30.0, permits: int = 1) -> int:
        """SEM.ACQUIRE: the token of one acquisition of `permits` permits (1..limit; at most
        limit permits in use; queued requests are served in order, a later one for fewer never
        goes first); LockTimeout after wait. sem_release gives back all of them."""
        return _granted(self._wait_grant(Cmd(*sem_args(name, self.sid, limit, permits)), wait,
                                         "SEM.RELEASE", "permit of"))

    def sem_release(self, name: str) -> None:
        self._mutate(Cmd("SEM.RELEASE", name, self.sid))

    @contextlib.contextmanager
    def semaphore(self, name: str, limit: int, wait: float = 30.0,
                  permits: int = 1) -> Iterator[int]:
        token = self.sem_acquire(name, limit, wait, permits)
        yield from _held(lambda: self.sem_release(name), token)

    # ---- latches and barriers ----
    def latch_join(self, name: str) -> None:
        """LATCH.JOIN: this session promises one count-down; if it ends before, the latch
        breaks (every waiter gets Broken)."""
        self._mutate(Cmd("LATCH.JOIN", name, self.sid))

    def latch_countdown(self, name: str) -> int:
        """LATCH.COUNTDOWN: the counts left (a joined session counts down once)."""
        return int(self._mutate(Cmd("LATCH.COUNTDOWN", name, self.sid)))

    def barrier_enter(self, name: str, count: int, wait: float = 30.0) -> bool:
        """BARRIER.ENTER: True once `count` sessions are inside, False when wait ran out (the
        session stays inside); Broken if one ended inside."""
        end = time.monotonic() + wait
        cmd = Cmd("BARRIER.ENTER", name, self.sid, int(count))
        if wait > 0:
            cmd.wait(end)
        return self._mutate(cmd, deadline=end + self.client.timeout) is not None

    def barrier_leave(self, name: str, wait: float = 30.0) -> bool:
        """BARRIER.LEAVE: True once every session that entered has left, False when wait ran
        out (this session has left all the same); Broken if one ended inside."""
        end = time.monotonic() + wait
        cmd = Cmd("BARRIER.LEAVE", name, self.sid)
        if wait > 0:
            cmd.wait(end)
        return self._mutate(cmd, deadline=end + self.client.timeout) is not None

    # ---- elections ----
    def campaign(self, name: str, value: Value = b"", wait: float = 30.0) -> int:
        """ELECT.CAMPAIGN: the leader's token once this session leads; LockTimeout after
        wait (no longer a candidate then)."""
        return _granted(self._wait_grant(Cmd("ELECT.CAMPAIGN", name, self.sid, value), wait,
                                         "ELECT.RESIGN", "leadership of"))

    def proclaim(self, name: str, token: int, value: Value) -> int:
        """ELECT.PROCLAIM: the leader's new value; the revision (Stale if not the leader)."""
        return int(self._mutate(Cmd("ELECT.PROCLAIM", name, self.sid, token, value)))

    def resign(self, name: str) -> None:
        self._mutate(Cmd("ELECT.RESIGN", name, self.sid))

    # ---- end ----
    def on_revoke(self, name: str, token: int,
                  cb: Callable[[Revoke], None]) -> "RevokeWatch":
        """cb(Revoke), run on a thread of its own for each revoke request (LOCK.REVOKE) of
        this session's grant `token` of lock `name` (a second request runs it again: the
        earliest deadline stands). The deadline counts from when the request applied on the
        leader, before cb runs: stop the work well before it, or unlock. Returns the watcher:
        stop() it when the lock is released. Reading the event stream needs the read
        permission without keys= / locks= globs."""
        from .watch import RevokeWatch
        return RevokeWatch(self.client, self.sid, name, token, cb)

    def on_waiter(self, name: str, token: int,
                  cb: Callable[[Waiter], None]) -> "WaiterWatch":
        """cb(Waiter), run on a thread of its own for each session that queued with
        notify=True (LOCK ... NOTIFY) behind this session's grant `token` of lock `name`,
        once per waiting session: the holder may let go early, or ignore it. Returns the
        watcher: stop() it when the lock is released. Needs the read permission as on_revoke."""
        from .watch import WaiterWatch
        return WaiterWatch(self.client, name, token, cb)

    def _stop_thread(self) -> None:
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def close(self) -> None:
        """Stop renewing, then SESSION.CLOSE (releases its locks now, no lock-delay). A session
        lost locally is still closed on the servers if it lives there."""
        with self._op:  # after any mutation in flight
            with self._cv:
                self._seq += 1
                seq = self._seq
        self._stop_thread()
        try:
            self.client.call(Cmd("SESSION.CLOSE", self.sid, "REQ", self.sid, seq))
        except errors.SessionLost:
            pass  # already gone on the servers
        finally:
            self._mark_lost()

    def abandon(self) -> None:
        """Stop renewing without closing: the lease runs out on the servers (lock-delay
        applies). For a process going away abnormally."""
        self._stop_thread()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, typ: Optional[type], val: Optional[BaseException],
                 tb: Any) -> None:
        try:
            self.close()
        except errors.FencelockError:
            if typ is None:  # do not hide the block's own exception behind the close's
                raise


def _granted(token: Optional[int]) -> int:
    """A wait's token (a wait > 0 raises LockTimeout rather than returning None; a wait of 0
    through acquire() is a try that found the lock taken)."""
    if token is None:
        raise errors.LockTimeout("not granted (a try found it taken)")
    return token


T = TypeVar("T")


def _held(release: Callable[[], None], token: T) -> Iterator[T]:
    """Yield token; release on exit. A release that fails because the session is gone is
    not an error of the block (the hold is gone with it); other failures surface unless the
    block itself raised."""
    try:
        yield token
    except BaseException:
        try:
            release()
        except errors.FencelockError:
            pass
        raise
    try:
        release()
    except (errors.SessionLost, errors.NotHolder):
        pass
