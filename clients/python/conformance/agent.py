# SPDX-License-Identifier: Apache-2.0
"""The Python client's conformance agent (tests/conformance/PROTOCOL.md): one AsyncClient of
fencelock.aio made from the FL_* environment, driven by one JSON request per line on stdin,
answering one JSON line per request on stdout (in any order: each request runs as a task of
its own) and writing the events (lost, watch, watch_end) as they happen. Only the package's
public API is used: what passes here is what a user of fencelock.aio gets.

The blocking client is covered by its own tests (clients/python/tests); this agent is the
asyncio one's. Everything that is not a protocol line goes to stderr.
"""

import asyncio
import json
import os
import sys
import threading
import time
from typing import Any, Awaitable, Callable, Dict, List, Optional, Set, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fencelock  # noqa: E402
from fencelock import Compacted, FencelockError, LockTimeout, SessionLost, Stale  # noqa: E402
from fencelock import TxnOpError  # noqa: E402
from fencelock import Revoke, Waiter  # noqa: E402
from fencelock.aio import AsyncClient, AsyncSession, AsyncWatch, Event  # noqa: E402

Req = Dict[str, Any]
Reply = Dict[str, Any]


def emit(obj: Dict[str, Any]) -> None:
    """One protocol line, flushed (only the event loop's thread writes)."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def word_of(e: BaseException) -> str:
    if isinstance(e, FencelockError):
        return e.word
    return "OTHER"


def text(v: Any) -> Optional[str]:
    if v is None:
        return None
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


class Agent:
    """The client, the named sessions and watchers, and one handler per op."""

    def __init__(self, client: AsyncClient) -> None:
        self.c = client
        self.sessions: Dict[str, AsyncSession] = {}
        self.watches: Dict[str, Tuple[AsyncWatch, "asyncio.Task[None]"]] = {}
        self.n_sessions = 0
        self.n_watches = 0
        self.stopped: Set[str] = set()  # watchers asked to stop
        self.ops: Dict[str, Callable[[Req], Awaitable[Reply]]] = {
            "session.open": self.session_open, "session.close": self.session_close,
            "session.safe": self.session_safe, "lock": self.lock, "unlock": self.unlock,
            "lock.multi": self.lock_multi, "unlock.multi": self.unlock_multi,
            "sem.acquire": self.sem_acquire, "sem.release": self.sem_release,
            "elect.campaign": self.campaign, "elect.resign": self.resign,
            "elect.leader": self.leader, "elect.observe": self.observe, "put": self.put,
            "del": self.delete, "get": self.get, "fence.check": self.fence_check,
            "watch.start": self.watch_start, "watch.stop": self.watch_stop,
            "revoke": self.revoke, "on_revoke": self.on_revoke, "on_waiter": self.on_waiter,
            "incr": self.incr, "txn": self.txn, "lock.info": self.lock_info, "lock.history": self.lock_history,
            "latch.create": self.latch_create, "latch.join": self.latch_join,
            "latch.countdown": self.latch_countdown, "latch.wait": self.latch_wait,
            "latch.info": self.latch_info, "latch.delete": self.latch_delete,
            "barrier.enter": self.barrier_enter, "barrier.leave": self.barrier_leave,
        }
        # on_revoke and on_waiter registrations by session handle: cancelled before that
        # session closes
        self.revokes: Dict[str, List["asyncio.Task[None]"]] = {}

    def session(self, req: Req, key: str = "session") -> AsyncSession:
        name = req.get(key)
        if name not in self.sessions:
            raise SessionLost("no session named %r" % (name,))
        return self.sessions[str(name)]

    # ---- sessions ----
    async def session_open(self, req: Req) -> Reply:
        self.n_sessions += 1
        name = "s%d" % self.n_sessions

        def lost(_: AsyncSession) -> None:
            emit({"event": "lost", "session": name, "mono_ms": int(time.monotonic() * 1000),
                  "wall_ms": int(time.time() * 1000)})
        mc = req.get("max_count")
        s = await self.c.session(ttl=float(req["ttl"]),
                                 lock_delay=float(req.get("lock_delay", 0) or 0),
                                 name=req.get("name"), on_lost=lost,
                                 reentrant=bool(req.get("reentrant", False)),
                                 max_count=int(mc) if mc is not None else None)
        self.sessions[name] = s
        return {"session": name, "sid": s.sid}

    async def session_close(self, req: Req) -> Reply:
        s = self.session(req)
        await self.stop_revokes(str(req["session"]))
        await s.close()
        return {}

    async def session_safe(self, req: Req) -> Reply:
        s = self.session(req)
        lost = s.is_lost()
        remaining = 0 if lost else int((s.safe_until() - time.monotonic()) * 1000)
        return {"remaining_ms": remaining, "lost": lost}

    # ---- grants: wait 0 is a try, whose refusal is BUSY ----
    async def grant(self, req: Req, op: Callable[[float], Awaitable[Optional[int]]]) -> Reply:
        wait = float(req.get("wait", 0) or 0)
        try:
            token = await op(wait)
        except LockTimeout:
            if wait <= 0:
                return busy()
            raise
        return busy() if token is None else {"token": token}

    async def lock(self, req: Req) -> Reply:
        s, name, shared = self.session(req), str(req["name"]), bool(req.get("shared", False))
        notify = bool(req.get("notify", False))
        value = text(req.get("value"))
        mh = req.get("max_hold")
        max_hold = float(mh) if mh is not None else None

        async def op(wait: float) -> Optional[int]:
            if wait <= 0 and value is None and max_hold is None:  # a try: nobody to notify
                return await s.try_lock(name, shared=shared)
            return await s.acquire(name, wait=wait, shared=shared, notify=notify, value=value,
                                   max_hold=max_hold)
        return await self.grant(req, op)

    async def unlock(self, req: Req) -> Reply:
        await self.session(req).unlock(str(req["name"]))
        return {}

    async def lock_multi(self, req: Req) -> Reply:
        s, names = self.session(req), [str(n) for n in req["names"]]
        shared = [str(n) for n in req.get("shared") or []]
        wait = float(req.get("wait", 0) or 0)
        try:
            if wait <= 0:
                tokens = await s.try_lock_multi(names, shared=shared)
            else:
                tokens = await s.acquire_multi(names, wait=wait, shared=shared)
        except LockTimeout:
            if wait <= 0:
                return busy()
            raise
        return busy() if tokens is None else {"tokens": tokens}

    async def unlock_multi(self, req: Req) -> Reply:
        await self.session(req).unlock_multi([str(n) for n in req["names"]])
        return {}

    async def sem_acquire(self, req: Req) -> Reply:
        s = self.session(req)
        return await self.grant(req, lambda wait: s.sem_acquire(
            str(req["name"]), int(req["limit"]), wait, permits=int(req.get("permits", 1) or 1)))

    async def sem_release(self, req: Req) -> Reply:
        await self.session(req).sem_release(str(req["name"]))
        return {}

    async def campaign(self, req: Req) -> Reply:
        s = self.session(req)
        return await self.grant(req, lambda wait: s.campaign(str(req["name"]),
                                                            str(req.get("value", "")), wait))

    async def resign(self, req: Req) -> Reply:
        await self.session(req).resign(str(req["name"]))
        return {}

    async def leader(self, req: Req) -> Reply:
        li = await self.c.leader(str(req["name"]))
        if li is None or li.sid == 0:
            return error("NOTFOUND", "no leader of %s" % req["name"])
        return {"sid": li.sid, "value": text(li.value), "token": li.token}

    async def observe(self, req: Req) -> Reply:
        li = await self.c.observe(str(req["name"]), int(req.get("after_rev", 0) or 0),
                                  float(req.get("wait", 10.0)))
        if li is None:
            return error("TIMEOUT", "no change within the wait")
        return {"sid": li.sid, "value": text(li.value), "rev": li.rev}

    # ---- keys ----
    def write_args(self, req: Req) -> Tuple[Optional[AsyncSession], Any, Optional[int]]:
        s = self.session(req) if req.get("session") is not None else None
        f = req.get("fence")
        fence = (str(f[0]), int(f[1])) if f is not None else None
        ifrev = int(req["ifrev"]) if req.get("ifrev") is not None else None
        return s, fence, ifrev

    async def put(self, req: Req) -> Reply:
        s, fence, ifrev = self.write_args(req)
        key, value = str(req["key"]), str(req["value"])
        if s is not None:
            rev = await s.put(key, value, fence=fence, ifrev=ifrev)
        else:
            rev = await self.c.put(key, value, fence=fence, ifrev=ifrev)
        return {"rev": rev}

    async def delete(self, req: Req) -> Reply:
        s, fence, ifrev = self.write_args(req)
        if s is not None:
            existed = await s.delete(str(req["key"]), fence=fence, ifrev=ifrev)
        else:
            existed = await self.c.delete(str(req["key"]), fence=fence, ifrev=ifrev)
        return {"deleted": existed}

    async def incr(self, req: Req) -> Reply:
        s, fence, ifrev = self.write_args(req)
        key, by = str(req["key"]), int(req.get("by", 1))
        if s is not None:
            value = await s.incr(key, by, fence=fence, ifrev=ifrev)
        else:
            value = await self.c.incr(key, by, fence=fence, ifrev=ifrev)
        return {"value": value}

    async def txn(self, req: Req) -> Reply:
        s, fence, _ = self.write_args(req)
        t = self.c.txn(session=s)
        for c in req.get("if") or []:
            kind = str(c[0])
            if kind == "rev":
                t.if_rev(str(c[1]), str(c[2]), int(c[3]))
            elif kind == "value":
                t.if_value(str(c[1]), str(c[2]), str(c[3]))
            elif kind == "exists":
                t.if_exists(str(c[1]))
            elif kind == "missing":
                t.if_missing(str(c[1]))
            elif kind == "token":
                t.if_token(str(c[1]), int(c[3]), str(c[2]))
            elif kind == "holds":
                t.if_holds(str(c[1]), int(c[2]))
            else:
                return error("OTHER", "unknown compare %r" % (kind,))
        for branch in ("then", "else"):
            for o in req.get(branch) or []:
                kind = str(o[0])
                if kind == "put":
                    (t.then_put if branch == "then" else t.else_put)(str(o[1]), str(o[2]))
                elif kind == "del":
                    (t.then_delete if branch == "then" else t.else_delete)(str(o[1]))
                elif kind == "incr":
                    (t.then_incr if branch == "then" else t.else_incr)(str(o[1]), int(o[2]))
                else:
                    return error("OTHER", "unknown op %r" % (kind,))
        if fence is not None:
            t.fence(*fence)
        r = await t.commit()
        return {"succeeded": r.succeeded, "rev": r.revision, "results": r.results}

    async def get(self, req: Req) -> Reply:
        kv = await self.c.kv_get(str(req["key"]))
        if kv is None:
            return error("NOTFOUND", "no key %s" % req["key"])
        return {"value": text(kv.get("value")), "mod_rev": int(kv.get("mod_rev", 0)),
                "version": int(kv.get("version", 0))}

    async def fence_check(self, req: Req) -> Reply:
        if not await self.c.fence_check(str(req["name"]), int(req["token"])):
            raise Stale("token %s is not the current one of %s" % (req["token"], req["name"]))
        return {}

    # ---- lock state and history ----
    async def lock_info(self, req: Req) -> Reply:
        d = await self.c.lock_info(str(req["name"]))
        if d is None:
            return error("NOTFOUND", "lock %s is free" % req["name"])
        holder = int(d.get("holder", 0) or 0)
        # only a reentrant holder's count is sent: any other exclusive holder holds once
        count = int(d["count"]) if "count" in d else (1 if holder else 0)
        return {"holder": holder, "token": int(d.get("token", 0) or 0),
                "value": text(d.get("value")) or "", "max_hold_ms": int(d.get("max_hold_ms", 0)),
                "transitions": int(d.get("transitions", 0)), "count": count}

    async def lock_history(self, req: Req) -> Reply:
        hs = await self.c.lock_history(str(req["name"]), count=req.get("count"),
                                       before=req.get("before"))
        keys = ("session", "session_name", "value", "token", "ended_by", "granted_ms",
                "ended_ms", "held_ms", "waited_ms", "waiters_total")
        return {"entries": [dict({k: h.get(k) for k in keys},
                                 waiters=[{"session": w.get("session"),
                                           "waited_ms": w.get("waited_ms")}
                                          for w in h.get("waiters", [])])
                            for h in hs]}

    # ---- latches and barriers ----
    async def latch_create(self, req: Req) -> Reply:
        await self.c.latch_create(str(req["name"]), int(req["count"]))
        return {}

    async def latch_join(self, req: Req) -> Reply:
        await self.session(req).latch_join(str(req["name"]))
        return {}

    async def latch_countdown(self, req: Req) -> Reply:
        return {"remaining": await self.session(req).latch_countdown(str(req["name"]))}

    async def latch_wait(self, req: Req) -> Reply:
        if not await self.c.latch_wait(str(req["name"]), float(req.get("wait", 0) or 0)):
            return error("TIMEOUT", "latch %s not at zero within the wait" % req["name"])
        return {}

    async def latch_info(self, req: Req) -> Reply:
        d = await self.c.latch_info(str(req["name"]))
        if d is None:
            return error("NOTFOUND", "no latch or barrier %s" % req["name"])
        return {"type": text(d.get("type")), "state": text(d.get("state")),
                "count": int(d.get("count", 0)), "remaining": int(d.get("remaining", 0)),
                "broken_sid": int(d.get("broken_sid", 0))}

    async def latch_delete(self, req: Req) -> Reply:
        return {"deleted": await self.c.latch_delete(str(req["name"]))}

    async def barrier_enter(self, req: Req) -> Reply:
        if not await self.session(req).barrier_enter(str(req["name"]), int(req["count"]),
                                                     float(req.get("wait", 0) or 0)):
            return error("TIMEOUT", "barrier %s not full within the wait" % req["name"])
        return {}

    async def barrier_leave(self, req: Req) -> Reply:
        if not await self.session(req).barrier_leave(str(req["name"]),
                                                     float(req.get("wait", 0) or 0)):
            return error("TIMEOUT", "barrier %s not left by all within the wait" % req["name"])
        return {}

    # ---- watch ----
    async def watch_start(self, req: Req) -> Reply:
        self.n_watches += 1
        name = "w%d" % self.n_watches
        w = self.c.watch(str(req.get("prefix", "")), str(req.get("from") or "$"), block=0.25)
        # "$" is resolved now, before the reply: the events after it are this watcher's (what
        # this first read returns is emitted first, after the reply)
        first = await w.read(block=0.001) if w.last_id == "$" else []
        task = asyncio.ensure_future(self.watch_loop(name, w, first))
        self.watches[name] = (w, task)
        return {"watch": name}

    async def watch_loop(self, name: str, w: AsyncWatch, first: List[Event]) -> None:
        """Read on by id until stopped; a fail-over's Unavailable is waited out (the next read
        starts after the last event handed out), Compacted ends the watcher."""
        err: Optional[str] = None
        evs = first
        while True:
            for ev in evs:
                emit({"event": "watch", "watch": name, "id": ev.id, "type": ev.type,
                      "name": ev.name})
            if name in self.stopped:
                break
            try:
                evs = await w.read()
            except Compacted:
                err = "COMPACTED"
                break
            except FencelockError as e:
                if e.word in ("AUTH", "PERM", "TLS"):
                    err = e.word
                    break
                evs = []
                await asyncio.sleep(0.05)
        emit({"event": "watch_end", "watch": name, "error": err, "last": w.last_id})

    async def watch_stop(self, req: Req) -> Reply:
        name = str(req["watch"])
        if name not in self.watches:
            return error("OTHER", "no watcher named %s" % name)
        w, task = self.watches.pop(name)
        self.stopped.add(name)
        await task
        return {"last": w.last_id}

    # ---- cooperative revocation ----
    async def revoke(self, req: Req) -> Reply:
        dl = int(req.get("deadline_ms", 0) or 0)
        token = await self.c.revoke_lock(str(req["name"]), deadline=dl / 1000.0 if dl else None,
                                         reason=text(req.get("reason")))
        return {"token": token}

    async def on_revoke(self, req: Req) -> Reply:
        """Register and answer without yielding to the loop in between: the callback runs on
        this loop, so its line comes after the reply (PROTOCOL.md's order rule)."""
        h = str(req["session"])
        s = self.session(req)

        def heard(r: Revoke) -> None:
            emit({"event": "revoke", "session": h, "name": r.name, "token": r.token,
                  "deadline_ms": int(round(r.deadline * 1000)) if r.deadline else 0,
                  "reason": r.reason, "by": r.by})
        task = s.on_revoke(str(req["name"]), int(req["token"]), heard)
        self.revokes.setdefault(h, []).append(task)
        return {}

    async def on_waiter(self, req: Req) -> Reply:
        """As on_revoke: registered and answered without yielding, so lines follow the reply."""
        h = str(req["session"])
        s = self.session(req)

        def heard(w: Waiter) -> None:
            emit({"event": "waiter", "session": h, "name": w.name, "token": w.token,
                  "sid": w.sid, "wait_ms": int(round(w.wait * 1000))})
        task = s.on_waiter(str(req["name"]), int(req["token"]), heard)
        self.revokes.setdefault(h, []).append(task)
        return {}

    async def stop_revokes(self, h: str) -> None:
        for task in self.revokes.pop(h, []):
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, FencelockError):
                pass

    # ---- end ----
    async def quit(self) -> None:
        for h in list(self.revokes):
            await self.stop_revokes(h)
        for name in list(self.watches):
            self.stopped.add(name)
            await self.watches.pop(name)[1]
        for s in self.sessions.values():
            if not s.is_lost():
                try:
                    await s.close()
                except FencelockError:
                    pass
        await self.c.close()


def busy() -> Reply:
    return error("BUSY", "held by another (a try)")


def error(word: str, message: str) -> Reply:
    return {"ok": False, "error": word, "message": message}


async def handle(agent: Agent, req: Req) -> None:
    rid = req.get("id")
    op = agent.ops.get(str(req.get("op")))
    try:
        if op is None:
            raise ValueError("unknown op %r" % req.get("op"))
        reply = await op(req)
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - every failure is an answer
        reply = error(word_of(e), "%s: %s" % (type(e).__name__, e))
        if isinstance(e, TxnOpError):  # the TXN's failing op, typed (PROTOCOL.md)
            reply["op"] = e.op
    out = {"id": rid, "ok": True}
    out.update(reply)
    emit(out)


def make_client() -> AsyncClient:
    env = os.environ
    ssl: Any = None
    if env.get("FL_TLS_CA"):
        ssl = {"ca": env["FL_TLS_CA"]}
        if env.get("FL_TLS_CERT"):
            ssl["cert"] = env["FL_TLS_CERT"]
            ssl["key"] = env.get("FL_TLS_KEY") or env["FL_TLS_CERT"]
    kw: Dict[str, Any] = {}
    if env.get("FL_TIMEOUT"):
        kw["timeout"] = float(env["FL_TIMEOUT"])
    return AsyncClient(env.get("FL_ENDPOINTS", ""), username=env.get("FL_USER") or None,
                       password=env.get("FL_PASSWORD") or None, ssl=ssl, **kw)


def stdin_lines(loop: asyncio.AbstractEventLoop, q: "asyncio.Queue[Optional[str]]") -> None:
    """The reader thread: each line of stdin into the loop's queue, None at its end."""
    for line in sys.stdin:
        loop.call_soon_threadsafe(q.put_nowait, line)
    loop.call_soon_threadsafe(q.put_nowait, None)


async def main() -> int:
    try:
        client = make_client()
    except (ValueError, TypeError, OSError) as e:
        emit({"ready": False, "error": "OTHER" if not isinstance(e, OSError) else "TLS",
              "message": str(e)})
        return 0
    agent = Agent(client)
    emit({"ready": True, "client": "python", "version": fencelock.__version__})
    q: "asyncio.Queue[Optional[str]]" = asyncio.Queue()
    threading.Thread(target=stdin_lines, args=(asyncio.get_running_loop(), q),
                     daemon=True).start()
    tasks: List["asyncio.Task[None]"] = []
    while True:
        line = await q.get()
        if line is None:
            break
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            print("agent: not JSON: %r (%s)" % (line, e), file=sys.stderr)
            continue
        if req.get("op") == "quit":
            await agent.quit()
            emit({"id": req.get("id"), "ok": True})
            return 0
        tasks = [t for t in tasks if not t.done()]
        tasks.append(asyncio.ensure_future(handle(agent, req)))
    await agent.quit()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
