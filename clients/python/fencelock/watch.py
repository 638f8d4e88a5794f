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

import time
from dataclasses import dataclass, field

from .conn import Cmd, as_map

STREAM = "fencelock:events"


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


@dataclass
class Event:
    """One entry: id "<rev>-<n>", type (put, del, grant, ...), name ("" for session events)
    and every field as the server sent it (values bytes)."""
    id: str
    type: str
    name: str
    fields: dict = field(default_factory=dict)

    @property
    def rev(self):
        return int(self.id.split("-")[0])


class Watch:
    """An iterator of Events; stop() ends the iteration within about block_ms."""

    def __init__(self, client, prefix="", from_id="$", count=1000, block_ms=500):
        self.client = client
        self.stream = STREAM + (":" + prefix if prefix else "")
        self.last_id = from_id
        self.count, self.block_ms = count, block_ms
        self._stopped = False

    def _resolve(self):
        if self.last_id == "$":
            info = as_map(self.client.call(Cmd("XINFO", "STREAM", self.stream)))
            self.last_id = _s(info.get("last-generated-id")) or "0-0"

    def read(self, block_ms=None):
        """One XREAD after last_id: a list of Events (empty when block_ms ran out)."""
        self._resolve()
        block = self.block_ms if block_ms is None else block_ms
        cmd = Cmd("XREAD", "COUNT", self.count, "BLOCK", block, "STREAMS", self.stream,
                  self.last_id, block_end=time.monotonic() + block / 1000.0)
        r = self.client.call(cmd, deadline=time.monotonic() + block / 1000.0 +
                             self.client.timeout)
        if not r:
            return []
        entries = r[0][1] if isinstance(r, list) else list(r.values())[0]
        out = []
        for eid, kv in entries:
            f = as_map(kv)
            out.append(Event(_s(eid), _s(f.get("type", b"")), _s(f.get("name", b"")), f))
        if out:
            self.last_id = out[-1].id
        return out

    def stop(self):
        self._stopped = True

    def __iter__(self):
        while not self._stopped:
            for ev in self.read():
                yield ev
                if self._stopped:
                    return
