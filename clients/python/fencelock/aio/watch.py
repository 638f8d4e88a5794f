# SPDX-License-Identifier: Apache-2.0
"""AsyncWatch: the event stream read with XREAD on the leader, as an async iterator. The
rules are the blocking Watch's (watch.py): each event once and in id order, every read after
the last id handed out (so a read resent to a new leader picks up exactly there), "$"
resolved to the newest id once before the first read, and Compacted raised (never a silent
gap) when the events after the needed id are gone.
"""

import asyncio
import inspect
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, List, Optional

from .. import errors
from .._common import Event, Revoke, Waiter, as_map, events, revoke_of, s_, stream_of, waiter_of
from ..conn import Cmd

if TYPE_CHECKING:
    from .client import AsyncClient

__all__ = ["AsyncWatch", "revoke_task"]


class AsyncWatch:
    """`async for ev in watch:`; stop() ends the iteration within about `block` seconds.
    last_id is the id of the last event handed out: AsyncClient.watch(prefix, last_id)
    resumes there, on any node."""

    def __init__(self, client: "AsyncClient", prefix: str = "", from_id: str = "$",
                 count: int = 1000, block: float = 0.5) -> None:
        self.client = client
        self.stream = stream_of(prefix)
        self.last_id = from_id
        self.count = count
        self.block = block
        self._stopped = False

    async def _resolve(self) -> None:
        if self.last_id == "$":
            info = as_map(await self.client.call(Cmd("XINFO", "STREAM", self.stream)))
            self.last_id = s_(info.get("last-generated-id")) or "0-0"

    async def read(self, block: Optional[float] = None) -> List[Event]:
        """One XREAD after last_id: a list of Events (empty when `block` seconds ran out)."""
        await self._resolve()
        bms = max(1, int(round((self.block if block is None else block) * 1000)))
        end = time.monotonic() + bms / 1000.0
        cmd = Cmd("XREAD", "COUNT", self.count, "BLOCK", bms, "STREAMS", self.stream,
                  self.last_id, block_end=end)
        out = events(await self.client.call(cmd, deadline=end + self.client.timeout))
        if out:
            self.last_id = out[-1].id
        return out

    def stop(self) -> None:
        self._stopped = True

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Event]:
        while not self._stopped:
            for ev in await self.read():
                yield ev
                if self._stopped:
                    return


async def _grant_loop(client: "AsyncClient", name: str, token: int,
                      pick: Callable[[Event], Any], cb: Callable[[Any], Any]) -> None:
    """on_revoke's and on_waiter's task: the rules of the blocking _GrantWatch (watch.py)."""
    w = AsyncWatch(client, name, str(max(token - 1, 0)), block=0.5)
    while True:
        try:
            evs = await w.read()
        except errors.Compacted as e:
            w.last_id = e.after
            continue
        except (errors.Unavailable, errors.OutcomeUnknown):
            await asyncio.sleep(0.1)
            continue
        for ev in evs:
            rv = pick(ev)
            if rv is not None:
                r = cb(rv)
                if inspect.isawaitable(r):
                    await r


def revoke_task(client: "AsyncClient", sid: int, name: str, token: int,
                cb: Callable[[Revoke], Any]) -> "asyncio.Task[None]":
    return asyncio.ensure_future(
        _grant_loop(client, name, token, lambda ev: revoke_of(ev, name, sid, token), cb))


def waiter_task(client: "AsyncClient", name: str, token: int,
                cb: Callable[[Waiter], Any]) -> "asyncio.Task[None]":
    return asyncio.ensure_future(
        _grant_loop(client, name, token, lambda ev: waiter_of(ev, name, token), cb))
