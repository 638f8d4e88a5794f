# SPDX-License-Identifier: Apache-2.0
"""Watch: the event stream (docs/protocol.md "Watch"), read with XREAD on the leader.

Each event is delivered once, in id order: every read asks for the entries after the last id
handed out (last_id), so a read resent to a new leader after a fail-over or a lost connection
picks up exactly there, and a new Watch(from_id=w.last_id) resumes another's stream on any
node. from_id "$" (events after now) is turned into the newest id once, before the first read,
because resending "$" after a lost answer would skip what happened meanwhile. When the events
after the needed id are gone the read raises Compacted (its .oldest is the oldest retained
id): reload the state, then watch again from its .after (the id just before .oldest). Not from
"0": a new leader may retain more history, and "0" there would start before what was handed
out. Never a silent gap.
"""

import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, List, Optional

from . import errors
from ._common import (STREAM, Event, Revoke, Waiter, as_map, events, revoke_of, s_, seconds_arg,
                      stream_of, waiter_of)
from .conn import Cmd

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Watch", "Event", "STREAM", "RevokeWatch", "WaiterWatch"]


class Watch:
    """An iterator of Events; stop() ends the iteration within about `block` seconds."""

    def __init__(self, client: "Client", prefix: str = "", from_id: str = "$",
                 count: int = 1000, block: Optional[float] = None, *,
                 block_ms: Optional[float] = None) -> None:
        self.client = client
        self.stream = stream_of(prefix)
        self.last_id = from_id
        self.count = count
        self.block: float = seconds_arg(block, block_ms, "block", 0.5) or 0.0
        self._stopped = False

    def _resolve(self) -> None:
        if self.last_id == "$":
            info = as_map(self.client.call(Cmd("XINFO", "STREAM", self.stream)))
            self.last_id = s_(info.get("last-generated-id")) or "0-0"

    def read(self, block: Optional[float] = None, *,
             block_ms: Optional[float] = None) -> List[Event]:
        """One XREAD after last_id: a list of Events (empty when `block` seconds ran out;
        block_ms= is the deprecated spelling)."""
        self._resolve()
        wait = seconds_arg(block, block_ms, "block", self.block)
        b = self.block if wait is None else wait
        bms = max(1, int(round(b * 1000)))
        cmd = Cmd("XREAD", "COUNT", self.count, "BLOCK", bms, "STREAMS", self.stream,
                  self.last_id, block_end=time.monotonic() + bms / 1000.0)
        r = self.client.call(cmd, deadline=time.monotonic() + bms / 1000.0 +
                             self.client.timeout)
        out = events(r)
        if out:
            self.last_id = out[-1].id
        return out

    def stop(self) -> None:
        self._stopped = True

    def __iter__(self) -> Iterator[Event]:
        while not self._stopped:
            for ev in self.read():
                yield ev
                if self._stopped:
                    return


class _GrantWatch:
    """A thread that reads a lock's events from a grant on (so nothing sent to the holder
    before the first read is missed) and calls cb(x) for each x = pick(event) not None.
    stop() ends it within about a second; `error` is what ended it otherwise
    (PermissionDenied: the user may not read the event stream)."""

    def __init__(self, client: "Client", sid: int, name: str, token: int,
                 pick: Callable[[Event], Any], cb: Callable[[Any], None], what: str) -> None:
        self.name, self.sid, self.token = name, sid, token
        self._pick, self._cb = pick, cb
        self._watch = Watch(client, name, str(max(token - 1, 0)), block=0.5)
        self._stop = threading.Event()
        self.error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="fencelock-%s-%d" % (what, sid))
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                evs = self._watch.read()
            except errors.Compacted as e:  # go on from the oldest retained
                self._watch.last_id = e.after
                continue
            except (errors.Unavailable, errors.OutcomeUnknown):
                self._stop.wait(0.1)
                continue
            except errors.FencelockError as e:
                self.error = e
                return
            for ev in evs:
                x = self._pick(ev)
                if x is not None and not self._stop.is_set():
                    self._cb(x)

    def stop(self, timeout: Optional[float] = None) -> None:
        self._stop.set()
        self._watch.stop()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)


class RevokeWatch(_GrantWatch):
    """Session.on_revoke: cb(Revoke) for each revoke request of grant `token`."""

    def __init__(self, client: "Client", sid: int, name: str, token: int,
                 cb: Callable[[Revoke], None]) -> None:
        super().__init__(client, sid, name, token,
                         lambda ev: revoke_of(ev, name, sid, token), cb, "revoke")


class WaiterWatch(_GrantWatch):
    """Session.on_waiter: cb(Waiter) for each session that queued behind grant `token`
    with notify=True (a wait-notify event)."""

    def __init__(self, client: "Client", name: str, token: int,
                 cb: Callable[[Waiter], None]) -> None:
        super().__init__(client, 0, name, token, lambda ev: waiter_of(ev, name, token), cb,
                         "waiter")
