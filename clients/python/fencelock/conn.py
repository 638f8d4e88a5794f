# SPDX-License-Identifier: Apache-2.0
"""Connections and the call path: endpoints, the known leader, a pool of redis-py
connections per address, redirects, reconnects and retries. The rules are libfencelock's
(src/client/conn.c, docs/client.md "Fail-over, retries and exactly-once"):

- a call has a deadline; within it -NOTLEADER is followed, -NOLEADER waited out, other
  endpoints tried, with a short backoff once every address failed in a row;
- a call made with retry=True (reads, and writes that carry `REQ sid seq`) is resent after a
  lost answer or -UNKNOWN: the servers answer a repeated (sid, seq) from their cache;
- a call made with retry=False (a write without a session) is sent once: a lost answer or
  -UNKNOWN raises OutcomeUnknown;
- a server that does not answer within connect_timeout (plus the time the command may block)
  is treated as gone (a SIGSTOPped leader accepts connections but never answers), and a
  blocked wait is abandoned as soon as another thread learns of a different leader.

Thread safety: the pool and the leader are guarded by one lock; a connection is used by one
thread at a time (taken out of the pool for the call, put back after a complete reply).
"""

import socket
import ssl as _ssl
import threading
import time
from typing import Any, Dict, List, Optional, Protocol, Tuple, Union, cast

import redis
from redis.backoff import NoBackoff
from redis.connection import Connection
from redis.retry import Retry

from . import errors
from ._common import (BACKOFF_MAX, BACKOFF_MIN, POOL_MAX, QUICK_REDIRECTS, WAIT_SLICE, SSLSpec,
                      as_map, error_text, is_tls_failure, make_ssl_context, split_addr,
                      split_endpoints)

__all__ = ["Cmd", "Pool", "as_map", "split_addr", "make_ssl_context", "error_text"]

# redis-py 5 and later introduce themselves with CLIENT SETINFO unless told not to (4.3 can't)
_HAS_LIB_NAME = int(redis.__version__.split(".")[0]) >= 5


class RawConn(Protocol):
    """What this module uses of a redis-py Connection, typed (redis-py's sync connection has
    no annotations)."""

    socket_timeout: Optional[float]
    _sock: Optional[socket.socket]

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def can_read(self, timeout: Optional[float] = 0) -> bool: ...

    def send_command(self, *args: Any) -> None: ...

    def read_response(self) -> Any: ...


class _TLSConnection(Connection):
    """A redis-py connection wrapped in a given SSLContext (redis-py 4.3 builds its own)."""

    def __init__(self, context: _ssl.SSLContext, server_name: Optional[str], **kw: Any) -> None:
        super().__init__(**kw)  # type: ignore[no-untyped-call]
        self._context = context
        self._server_name = server_name

    def _connect(self) -> socket.socket:
        sock: socket.socket = super()._connect()  # type: ignore[no-untyped-call]
        try:
            return self._context.wrap_socket(sock,
                                             server_hostname=self._server_name or self.host)
        except (OSError, _ssl.SSLError):
            sock.close()
            raise


class _Lost(Exception):
    """The connection failed after the command was (maybe) sent."""


class Cmd:
    """One command's arguments. A command with a WAIT (LOCK, SEM.ACQUIRE, ELECT.CAMPAIGN)
    asks, on every resend, for the wait that is left, never for the whole wait again."""

    def __init__(self, *args: Any, block_end: Optional[float] = None) -> None:
        self.argv: List[Any] = list(args)
        self.wait_idx: Optional[int] = None
        self.wait_end = 0.0
        self.block_end = block_end  # monotonic end of a server-side block (XREAD BLOCK)

    def wait(self, wait_end: float) -> "Cmd":
        """Append `WAIT ms` for a wait that ends at wait_end (monotonic seconds)."""
        self.argv += ["WAIT", 1]
        self.wait_idx = len(self.argv) - 1
        self.wait_end = wait_end
        return self

    def add(self, *args: Any) -> "Cmd":
        self.argv += list(args)
        return self

    def render(self) -> Tuple[List[Any], float]:
        """(argv, seconds the server may legitimately hold the reply back)."""
        if self.wait_idx is not None:
            left = self.wait_end - time.monotonic()
            self.argv[self.wait_idx] = max(1, int(left * 1000))
            return self.argv, max(0.0, left)
        if self.block_end is not None:
            return self.argv, max(0.0, self.block_end - time.monotonic())
        return self.argv, 0.0


class Pool:
    """Endpoints, the known leader and idle connections; the call loop."""

    def __init__(self, endpoints: Union[str, List[str]], username: Optional[str],
                 password: Optional[str], ssl: SSLSpec, timeout: float,
                 connect_timeout: float) -> None:
        self.endpoints = split_endpoints(endpoints)
        self.username, self.password = username, password
        self.ssl_context, self.server_name = make_ssl_context(ssl)
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self.mu = threading.Lock()
        self.leader: Optional[str] = None
        self.next_ep = 0
        self.idle: Dict[str, List[RawConn]] = {}
        self.members_learned = False

    # ---- bookkeeping ----
    def pick(self) -> str:
        with self.mu:
            if self.leader:
                return self.leader
            a = self.endpoints[self.next_ep % len(self.endpoints)]
            self.next_ep += 1
            return a

    def set_leader(self, addr: str) -> None:
        with self.mu:
            try:
                split_addr(addr)
            except ValueError:
                self.leader = None
                return
            self.leader = addr
            if addr not in self.endpoints:
                self.endpoints.append(addr)

    def leader_failed(self, addr: str) -> None:
        with self.mu:
            if self.leader == addr:
                self.leader = None

    def leader_moved(self, addr: str) -> bool:
        with self.mu:
            return self.leader is not None and self.leader != addr

    def known_leader(self) -> Optional[str]:
        with self.mu:
            return self.leader

    # ---- connections ----
    def _new_conn(self, addr: str, budget: float, deadline: float) -> RawConn:
        host, port = split_addr(addr)
        # socket_timeout bounds the rest of a reply once its first bytes arrived (the wait for
        # them is await_reply's); it stays with the pooled connection, so it is not `budget`.
        # The AUTH sent on connect may take long (the server hashes the password, and delays a
        # wrong one): it is bounded by the call's deadline, as libfencelock's conn_auth.
        auth_budget = max(budget, deadline - time.monotonic())
        kw: Dict[str, Any] = dict(host=host, port=port, username=self.username,
                                  password=self.password, socket_timeout=auth_budget,
                                  socket_connect_timeout=budget)
        # No retries of redis-py's own (this loop owns them) and no CLIENT SETINFO on connect
        # (redis-py 5+): a frozen server would hold the connect for its whole timeout.
        kw["retry"] = Retry(NoBackoff(), 0)
        if _HAS_LIB_NAME:
            kw.update(lib_name=None, lib_version=None)
        if self.ssl_context is not None:
            c = cast(RawConn, _TLSConnection(self.ssl_context, self.server_name, **kw))
        else:
            c = cast(RawConn, Connection(**kw))  # type: ignore[no-untyped-call]
        try:
            c.connect()  # sends AUTH when credentials were given
        except redis.ResponseError as e:  # -WRONGPASS to AUTH
            c.disconnect()
            raise errors.from_reply(error_text(e)) from None
        except redis.AuthenticationError as e:
            c.disconnect()
            raise errors.AuthError(error_text(e)) from None
        c.socket_timeout = self.connect_timeout
        if c._sock is not None:
            c._sock.settimeout(self.connect_timeout)
        return c

    def get(self, addr: str, deadline: float) -> Tuple[RawConn, bool]:
        """(connection, fresh). Raises AuthError, or redis/OS errors when unreachable."""
        while True:
            with self.mu:
                lst = self.idle.get(addr)
                c = lst.pop() if lst else None
            if c is None:
                break
            try:  # an idle connection that became readable is dead (nothing comes unasked)
                if not c.can_read(0):
                    return c, False
            except (redis.ConnectionError, OSError):
                pass
            c.disconnect()
        budget = max(0.001, min(self.connect_timeout, deadline - time.monotonic()))
        return self._new_conn(addr, budget, deadline), True

    def put(self, addr: str, c: RawConn) -> None:
        with self.mu:
            lst = self.idle.setdefault(addr, [])
            if len(lst) < POOL_MAX:
                lst.append(c)
                return
        c.disconnect()

    def close(self) -> None:
        with self.mu:
            conns = [c for lst in self.idle.values() for c in lst]
            self.idle = {}
        for c in conns:
            c.disconnect()

    def learn_members(self, c: RawConn, until: float) -> None:
        """Learn the members' client addresses once (best effort), so that losing every given
        endpoint but one still leaves the others reachable."""
        with self.mu:
            if self.members_learned:
                return
            self.members_learned = True
        try:
            c.send_command("CLUSTER.MEMBERS")
            r = self.await_reply(c, None, until)
            for m in r or []:
                d = as_map(m)
                a = d.get("client_address")
                if a:
                    a = a.decode() if isinstance(a, bytes) else str(a)
                    with self.mu:
                        if a not in self.endpoints:
                            self.endpoints.append(a)
        except (redis.ResponseError, redis.AuthenticationError):
            # an error reply (-NOAUTH, -NOPERM): the connection is fine; the command itself
            # will get the same answer and report it
            with self.mu:
                self.members_learned = False
        except (redis.RedisError, OSError, _Lost, ValueError):
            with self.mu:
                self.members_learned = False
            raise _Lost("CLUSTER.MEMBERS failed")

    def await_reply(self, c: RawConn, addr: Optional[str], until: float,
                    cancel: Optional[threading.Event] = None) -> Any:
        """The reply to what was sent on c, waited for in short slices: abandoned (_Lost) when
        `until` passes or another thread learned of a leader other than addr."""
        while True:
            left = until - time.monotonic()
            if left <= 0:
                raise _Lost("no reply in time")
            if c.can_read(timeout=min(left, WAIT_SLICE)):
                return c.read_response()
            if addr is not None and self.leader_moved(addr):
                raise _Lost("abandoned: the leader moved")
            if cancel is not None and cancel.is_set():
                raise _Lost("cancelled")

    # ---- the call path ----
    def attempt(self, cmd: Cmd, deadline: float, retry: bool, anynode: bool,
                cancel: Optional[threading.Event], state: Dict[str, Any]) -> Tuple[str, Any]:
        """One try against one address: ("done", reply) or ("retry", None); raises final
        errors."""
        addr = self.pick()
        try:
            c, fresh = self.get(addr, deadline)
        except errors.AuthError:
            raise
        except (redis.RedisError, OSError) as e:
            self.leader_failed(addr)
            state["why"] = "connect %s: %s" % (addr, e)
            if is_tls_failure(e):
                state["tls"] = state["why"]
            return "retry", None  # nothing was sent
        if fresh:
            try:
                probe = time.monotonic() + self.connect_timeout
                self.learn_members(c, min(probe, deadline))
            except _Lost as e:  # nothing of cmd was sent: any call may try again
                c.disconnect()
                self.leader_failed(addr)
                state["why"] = "%s: %s" % (addr, e)
                return "retry", None
        try:
            argv, block = cmd.render()
            until = min(deadline, time.monotonic() + self.connect_timeout + block)
            c.send_command(*argv)
            reply = self.await_reply(c, addr, until, cancel)
        except redis.ResponseError as e:  # an error reply: the connection is fine
            self.put(addr, c)
            return self.on_error(addr, error_text(e), retry, state)
        except redis.AuthenticationError as e:  # -NOAUTH to a command
            self.put(addr, c)
            raise errors.AuthError(error_text(e)) from None
        except (redis.RedisError, OSError, _Lost, socket.timeout) as e:
            c.disconnect()
            self.leader_failed(addr)
            state["why"] = "%s: %s" % (addr, e)
            if retry:
                return "retry", None
            raise errors.OutcomeUnknown("%s: no answer to %s: outcome unknown (%s)"
                                        % (addr, cmd.argv[0], e)) from None
        self.put(addr, c)
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

    def call(self, cmd: Cmd, deadline: Optional[float] = None, retry: bool = True,
             anynode: bool = False, cancel: Optional[threading.Event] = None) -> Any:
        """The reply of cmd (a Cmd) by `deadline` (monotonic seconds; default now+timeout)."""
        if deadline is None:
            deadline = time.monotonic() + self.timeout
        backoff = BACKOFF_MIN
        quick = 0
        state: Dict[str, Any] = {"why": "", "unknown": False, "tls": ""}
        while True:
            if cancel is not None and cancel.is_set():
                raise errors.LockTimeout("cancelled")
            now = time.monotonic()
            if now >= deadline:
                msg = "deadline passed; last: %s" % (state["why"] or "no answer")
                if state["unknown"]:
                    raise errors.OutcomeUnknown(msg)
                if state["tls"]:
                    raise errors.TLSError("deadline passed; TLS: %s" % state["tls"])
                raise errors.Unavailable(msg)
            had_leader = self.known_leader() is not None
            st, reply = self.attempt(cmd, deadline, retry, anynode, cancel, state)
            if st == "done":
                return reply
            if not had_leader and self.known_leader() is not None and quick < QUICK_REDIRECTS:
                quick += 1
                continue
            time.sleep(max(0.0, min(backoff, deadline - time.monotonic())))
            backoff = min(backoff * 2, BACKOFF_MAX)
