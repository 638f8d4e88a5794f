# SPDX-License-Identifier: Apache-2.0
"""The asyncio call path: endpoints, the known leader, idle redis.asyncio connections per
address, redirects, reconnects and retries. The rules are the blocking client's
(fencelock/conn.py) and libfencelock's (docs/client.md "Fail-over, retries and exactly-once"):

- a call has a deadline; within it -NOTLEADER is followed, -NOLEADER waited out, other
  endpoints tried, with a short backoff once every address failed in a row;
- retry=True (reads, writes carrying `REQ sid seq`) resends after a lost answer or -UNKNOWN;
  retry=False (a write without a session) is sent once: a lost answer raises OutcomeUnknown;
- a server that does not answer within connect_timeout (plus the time the command may block)
  is treated as gone, and a blocked wait is abandoned as soon as another call learns of a
  different leader.

One event loop owns a Pool: nothing here is shared with threads. A connection is used by one
call at a time (taken out of `idle` for the call, put back after a complete reply); a call
cancelled while it waits for a reply closes its connection (the reply may still come).
"""

import asyncio
import ssl as _ssl
import time
from typing import Any, Dict, List, Mapping, Optional, Protocol, Tuple, Union, cast

import redis
import redis.asyncio
from redis.asyncio.connection import Connection
from redis.backoff import NoBackoff
from redis.retry import Retry

from .. import errors
from .._common import (BACKOFF_MAX, BACKOFF_MIN, POOL_MAX, QUICK_REDIRECTS, WAIT_SLICE, SSLSpec,
                       as_map, error_text, is_tls_failure, make_ssl_context, split_addr,
                       split_endpoints)
from ..conn import Cmd

__all__ = ["AsyncPool", "Cmd"]


class AsyncRawConn(Protocol):
    """What this module uses of a redis.asyncio Connection."""

    @property
    def is_connected(self) -> bool: ...

    async def connect(self) -> None: ...

    async def disconnect(self, nowait: bool = False) -> None: ...

    async def can_read_destructive(self) -> bool: ...

    async def send_command(self, *args: Any, **kwargs: Any) -> None: ...

    async def read_response(self, disable_decoding: bool = False,
                            timeout: Optional[float] = None) -> Any: ...


class _TLSConnection(Connection):
    """A redis.asyncio connection over a given SSLContext, the server name checked being the
    endpoint's host unless one is named (redis-py's SSLConnection builds its own context)."""

    def __init__(self, context: _ssl.SSLContext, server_name: Optional[str],
                 **kw: Any) -> None:
        super().__init__(**kw)
        self._context = context
        self._server_name = server_name

    def _connection_arguments(self) -> Mapping[str, Any]:
        args = dict(super()._connection_arguments())
        args["ssl"] = self._context
        args["server_hostname"] = self._server_name or self.host
        return args


class _Lost(Exception):
    """The connection failed after the command was (maybe) sent."""


class AsyncPool:
    """Endpoints, the known leader and idle connections; the call loop."""

    def __init__(self, endpoints: Union[str, List[str]], username: Optional[str],
                 password: Optional[str], ssl: SSLSpec, timeout: float,
                 connect_timeout: float) -> None:
        self.endpoints = split_endpoints(endpoints)
        self.username, self.password = username, password
        self.ssl_context, self.server_name = make_ssl_context(ssl)
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self.leader: Optional[str] = None
        self.next_ep = 0
        self.idle: Dict[str, List[AsyncRawConn]] = {}
        self.members_learned = False

    # ---- bookkeeping ----
    def pick(self) -> str:
        if self.leader:
            return self.leader
        a = self.endpoints[self.next_ep % len(self.endpoints)]
        self.next_ep += 1
        return a

    def set_leader(self, addr: str) -> None:
        try:
            split_addr(addr)
        except ValueError:
            self.leader = None
            return
        self.leader = addr
        if addr not in self.endpoints:
            self.endpoints.append(addr)

    def leader_failed(self, addr: str) -> None:
        if self.leader == addr:
            self.leader = None

    def leader_moved(self, addr: str) -> bool:
        return self.leader is not None and self.leader != addr

    # ---- connections ----
    async def _new_conn(self, addr: str, budget: float, deadline: float) -> AsyncRawConn:
        host, port = split_addr(addr)
        # The AUTH sent on connect may take long (the server hashes the password and delays
        # a wrong one): the connect and it are bounded by the call's deadline.
        auth_budget = max(budget, deadline - time.monotonic())
        kw: Dict[str, Any] = dict(host=host, port=port, username=self.username,
                                  password=self.password, socket_timeout=None,
                                  socket_connect_timeout=budget, retry=Retry(NoBackoff(), 0),
                                  lib_name=None, lib_version=None)
        c: AsyncRawConn
        if self.ssl_context is not None:
            c = cast(AsyncRawConn, _TLSConnection(self.ssl_context, self.server_name, **kw))
        else:
            c = cast(AsyncRawConn, Connection(**kw))
        try:
            await asyncio.wait_for(c.connect(), auth_budget)
        except redis.AuthenticationError as e:
            await c.disconnect(nowait=True)
            raise errors.AuthError(error_text(e)) from None
        except redis.ResponseError as e:  # -WRONGPASS to AUTH
            await c.disconnect(nowait=True)
            raise errors.from_reply(error_text(e)) from None
        except BaseException:
            await c.disconnect(nowait=True)
            raise
        return c

    async def get(self, addr: str, deadline: float) -> Tuple[AsyncRawConn, bool]:
        """(connection, fresh). Raises AuthError, or redis/OS errors when unreachable."""
        while True:
            lst = self.idle.get(addr)
            c = lst.pop() if lst else None
            if c is None:
                break
            try:  # an idle connection that became readable is dead (nothing comes unasked)
                if c.is_connected and not await c.can_read_destructive():
                    return c, False
            except (redis.RedisError, OSError):
                pass
            await c.disconnect(nowait=True)
        budget = max(0.001, min(self.connect_timeout, deadline - time.monotonic()))
        return await self._new_conn(addr, budget, deadline), True

    async def put(self, addr: str, c: AsyncRawConn) -> None:
        lst = self.idle.setdefault(addr, [])
        if len(lst) < POOL_MAX:
            lst.append(c)
            return
        await c.disconnect(nowait=True)

    async def close(self) -> None:
        conns = [c for lst in self.idle.values() for c in lst]
        self.idle = {}
        for c in conns:
            await c.disconnect(nowait=True)

    async def learn_members(self, c: AsyncRawConn, until: float) -> None:
        """Learn the members' client addresses once (best effort), so that losing every given
        endpoint but one still leaves the others reachable."""
        if self.members_learned:
            return
        self.members_learned = True
        try:
            await c.send_command("CLUSTER.MEMBERS")
            r = await self.await_reply(c, None, until)
            for m in r or []:
                a = as_map(m).get("client_address")
                if a:
                    a = a.decode() if isinstance(a, bytes) else str(a)
                    if a not in self.endpoints:
                        self.endpoints.append(a)
        except (redis.ResponseError, redis.AuthenticationError):
            # an error reply (-NOAUTH, -NOPERM): the connection is fine; the command itself
            # will get the same answer and report it
            self.members_learned = False
        except (redis.RedisError, OSError, _Lost, ValueError):
            self.members_learned = False
            raise _Lost("CLUSTER.MEMBERS failed")

    async def await_reply(self, c: AsyncRawConn, addr: Optional[str], until: float) -> Any:
        """The reply to what was sent on c, waited for in short slices: abandoned (_Lost, the
        connection closed) when `until` passes or another call learned of a leader other
        than addr."""
        task = asyncio.ensure_future(c.read_response())
        try:
            while True:
                left = until - time.monotonic()
                if left <= 0:
                    raise _Lost("no reply in time")
                done, _ = await asyncio.wait({task}, timeout=min(left, WAIT_SLICE))
                if done:
                    return task.result()
                if addr is not None and self.leader_moved(addr):
                    raise _Lost("abandoned: the leader moved")
        finally:
            if not task.done():
                task.cancel()  # read_response closes the connection when cancelled
                await asyncio.gather(task, return_exceptions=True)

    # ---- the call path ----
    async def attempt(self, cmd: Cmd, deadline: float, retry: bool, anynode: bool,
                      state: Dict[str, Any]) -> Tuple[str, Any]:
        """One try against one address: ("done", reply) or ("retry", None); raises final
        errors."""
        addr = self.pick()
        try:
            c, fresh = await self.get(addr, deadline)
        except errors.AuthError:
            raise
        except (redis.RedisError, OSError, asyncio.TimeoutError) as e:
            self.leader_failed(addr)
            state["why"] = "connect %s: %s" % (addr, e or type(e).__name__)
            if is_tls_failure(e):
                state["tls"] = state["why"]
            return "retry", None  # nothing was sent
        if fresh:
            try:
                probe = time.monotonic() + self.connect_timeout
                await self.learn_members(c, min(probe, deadline))
            except _Lost as e:  # nothing of cmd was sent: any call may try again
                await c.disconnect(nowait=True)
                self.leader_failed(addr)
                state["why"] = "%s: %s" % (addr, e)
                return "retry", None
        try:
            argv, block = cmd.render()
            until = min(deadline, time.monotonic() + self.connect_timeout + block)
            await c.send_command(*argv)
            reply = await self.await_reply(c, addr, until)
        except redis.ResponseError as e:  # an error reply: the connection is fine
            await self.put(addr, c)
            return self.on_error(addr, error_text(e), retry, state)
        except redis.AuthenticationError as e:  # -NOAUTH to a command
            await self.put(addr, c)
            raise errors.AuthError(error_text(e)) from None
        except (redis.RedisError, OSError, _Lost, asyncio.TimeoutError) as e:
            await c.disconnect(nowait=True)
            self.leader_failed(addr)
            state["why"] = "%s: %s" % (addr, e)
            if retry:
                return "retry", None
            raise errors.OutcomeUnknown("%s: no answer to %s: outcome unknown (%s)"
                                        % (addr, cmd.argv[0], e)) from None
        except BaseException:  # cancelled: the reply may still come on this connection
            await c.disconnect(nowait=True)
            raise
        await self.put(addr, c)
        if not anynode:
            self.set_leader(addr)  # it answered a leader-only command
        return "done", reply

    def on_error(self, addr: str, text: str, retry: bool,
                 state: Dict[str, Any]) -> Tuple[str, Any]:
        word, _, rest = text.partition(" ")
        if word == "NOTLEADER":
            self.set_leader(rest.strip())
            state["why"] = "%s: %s" % (addr, text)
            return "retry", None
        if word == "NOLEADER":
            self.leader_failed(addr)
            state["why"] = "%s: %s" % (addr, text)
            return "retry", None
        if word == "UNKNOWN":
            state["unknown"] = True
            state["why"] = "%s: %s" % (addr, text)
            if retry:
                return "retry", None
            raise errors.OutcomeUnknown(text)
        raise errors.from_reply(text)

    async def call(self, cmd: Cmd, deadline: Optional[float] = None, retry: bool = True,
                   anynode: bool = False) -> Any:
        """The reply of cmd by `deadline` (time.monotonic() seconds; default now+timeout)."""
        if deadline is None:
            deadline = time.monotonic() + self.timeout
        backoff = BACKOFF_MIN
        quick = 0
        state: Dict[str, Any] = {"why": "", "unknown": False, "tls": ""}
        while True:
            now = time.monotonic()
            if now >= deadline:
                msg = "deadline passed; last: %s" % (state["why"] or "no answer")
                if state["unknown"]:
                    raise errors.OutcomeUnknown(msg)
                if state["tls"]:
                    raise errors.TLSError("deadline passed; TLS: %s" % state["tls"])
                raise errors.Unavailable(msg)
            had_leader = self.leader is not None
            st, reply = await self.attempt(cmd, deadline, retry, anynode, state)
            if st == "done":
                return reply
            if not had_leader and self.leader is not None and quick < QUICK_REDIRECTS:
                quick += 1
                continue
            await asyncio.sleep(max(0.0, min(backoff, deadline - time.monotonic())))
            backoff = min(backoff * 2, BACKOFF_MAX)
