# SPDX-License-Identifier: Apache-2.0
"""AsyncWatch: the event stream read with XREAD on the leader, as an async iterator. The
rules are the blocking Watch's (watch.py): each event once and in id order, every read after
the last id handed out (so a read resent to a new leader picks up exactly there), "$"
resolved to the newest id once before the first read, and Compacted raised (never a silent
gap) when the events after the needed id are gone.
"""

import time
from typing import TYPE_CHECKING, AsyncIterator, List, Optional

from .._common import Event, as_map, events, s_, stream_of
from ..conn import Cmd

if TYPE_CHECKING:
    from .client import AsyncClient

__all__ = ["AsyncWatch"]


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
