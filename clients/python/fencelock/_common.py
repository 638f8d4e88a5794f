# SPDX-License-Identifier: Apache-2.0
"""What the blocking client (Client, Session, Watch) and fencelock.aio share, written once:
addresses, the TLS context, the shape of replies, the election and event records, seconds at
the API turned into the wire's milliseconds, and the safe deadline's arithmetic. No I/O here.
"""

import importlib
import re
import ssl as _ssl
import warnings
from dataclasses import dataclass, field
from typing import Any, Collection, Dict, List, Optional, Sequence, Tuple, Union

import redis

SSLSpec = Union[None, bool, _ssl.SSLContext, Dict[str, str]]
Value = Union[str, bytes, int, float]
Fence = Tuple[str, int]

STREAM = "fencelock:events"


def split_addr(addr: str) -> Tuple[str, int]:
    """("host", port) of "host:port" or "[v6]:port"; ValueError if malformed."""
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("not a host:port: %r" % addr)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def split_endpoints(endpoints: Union[str, List[str]]) -> List[str]:
    """The endpoints as a checked list ("a:1,b:2" or a list); ValueError if none or bad."""
    if isinstance(endpoints, str):
        endpoints = [e.strip() for e in endpoints.split(",") if e.strip()]
    if not endpoints:
        raise ValueError("no endpoints")
    for e in endpoints:
        split_addr(e)
    return list(endpoints)


def make_ssl_context(spec: SSLSpec) -> Tuple[Optional[_ssl.SSLContext], Optional[str]]:
    """(context or None for plain TCP, server name or None for the endpoint's host) from: None
    or False, True (system CAs), an SSLContext as is, or a dict with any of ca, cert, key (file
    paths), server_name."""
    if spec is None or spec is False:
        return None, None
    if spec is True:
        return _ssl.create_default_context(), None
    if isinstance(spec, _ssl.SSLContext):
        return spec, None
    if isinstance(spec, dict):
        unknown = set(spec) - {"ca", "cert", "key", "server_name"}
        if unknown:
            raise ValueError("unknown ssl option(s): %s" % ", ".join(sorted(unknown)))
        ctx = _ssl.create_default_context(cafile=spec.get("ca"))
        if spec.get("cert"):
            ctx.load_cert_chain(spec["cert"], spec.get("key"))
        return ctx, spec.get("server_name")
    raise TypeError("ssl must be None, True, an ssl.SSLContext or a dict")


def is_tls_failure(e: BaseException) -> bool:
    """Did a connect fail in the TLS handshake (rather than at the TCP level)?"""
    seen: Optional[BaseException] = e
    for _ in range(4):  # redis-py wraps the ssl error into its ConnectionError
        if seen is None:
            return False
        if isinstance(seen, _ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(seen) \
                or "certificate verify failed" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def error_text(e: BaseException) -> str:
    """The server's error reply as it was sent (redis-py strips some words off)."""
    if isinstance(e, redis.exceptions.NoPermissionError):
        return "NOPERM " + str(e)
    if isinstance(e, redis.exceptions.AuthenticationError):
        s = str(e)
        return s if s.startswith(("NOAUTH", "WRONGPASS")) else "NOAUTH " + s
    return str(e)


def s_(v: Any) -> Any:
    """bytes decoded as UTF-8; anything else as is."""
    return v.decode() if isinstance(v, bytes) else v


def as_map(r: Any) -> Any:
    """A RESP2 flat array (or a RESP3 dict) as a dict with str keys; None stays None."""
    if r is None:
        return None
    if isinstance(r, dict):
        items = list(r.items())
    else:
        items = list(zip(r[0::2], r[1::2]))
    return {s_(k): v for k, v in items}


HISTORY_TEXT = ("kind", "session_name", "user", "value", "ended_by", "traceparent",
                "end_traceparent")


def history_args(name: str, count: Optional[int], before: Optional[int]) -> List[Any]:
    """LOCK.HISTORY's arguments."""
    args: List[Any] = ["LOCK.HISTORY", name]
    if count:
        args += ["COUNT", int(count)]
    if before:
        args += ["BEFORE", int(before)]
    return args


def history_entries(r: Any) -> List[Dict[str, Any]]:
    """LOCK.HISTORY's reply as dicts, newest first; text fields decoded, waiters as dicts."""
    out: List[Dict[str, Any]] = []
    for e in r or []:
        d: Dict[str, Any] = as_map(e)
        for k in HISTORY_TEXT:
            if k in d:
                d[k] = s_(d[k])
        d["waiters"] = [as_map(w) for w in d.get("waiters") or []]
        out.append(d)
    return out


def status(r: Any) -> None:
    """Check a +OK reply."""
    if s_(r) != "OK":
        from .errors import ProtocolError
        raise ProtocolError("expected +OK, got %r" % (r,))


@dataclass
class LeaderInfo:
    """An election's state (ELECT.LEADER / ELECT.OBSERVE): sid 0 when nobody leads."""
    sid: int
    token: int
    value: bytes
    since_rev: int
    rev: int


def leader_info(r: Any) -> LeaderInfo:
    d = as_map(r)
    return LeaderInfo(int(d.get("sid", 0)), int(d.get("token", 0)), d.get("value") or b"",
                      int(d.get("since_rev", 0)), int(d.get("rev", 0)))


@dataclass
class Event:
    """One entry of the event stream: id "<rev>-<n>", type (put, del, grant, ...), name (""
    for session events) and every field as the server sent it (values bytes)."""
    id: str
    type: str
    name: str
    fields: Dict[str, Any] = field(default_factory=dict)

    @property
    def rev(self) -> int:
        return int(self.id.split("-")[0])


def events(r: Any) -> List[Event]:
    """The Events of one XREAD reply (RESP2 list or RESP3 map); [] for nil."""
    if not r:
        return []
    entries = r[0][1] if isinstance(r, list) else list(r.values())[0]
    out = []
    for eid, kv in entries:
        f = as_map(kv)
        out.append(Event(s_(eid), s_(f.get("type", b"")), s_(f.get("name", b"")), f))
    return out


def stream_of(prefix: str) -> str:
    return STREAM + (":" + prefix if prefix else "")


def ms(seconds: float, what: str, minimum: int = 1) -> int:
    """Seconds at the API as the wire's whole milliseconds (rounded); ValueError below
    `minimum` ms."""
    v = int(round(float(seconds) * 1000))
    if v < minimum:
        raise ValueError("%s must be at least %d ms (got %r s)" % (what, minimum, seconds))
    return v


def seconds_arg(value: Optional[float], value_ms: Optional[float], name: str,
                default: Optional[float], stacklevel: int = 3) -> Optional[float]:
    """The seconds a caller meant: `name` (seconds), or the deprecated `name_ms` keyword
    (milliseconds, with a DeprecationWarning); both given is a TypeError."""
    if value_ms is not None:
        if value is not None:
            raise TypeError("give %s (seconds) or %s_ms, not both" % (name, name))
        warnings.warn("%s_ms= is deprecated: pass %s= in seconds (%s=%g)"
                      % (name, name, name, value_ms / 1000.0), DeprecationWarning,
                      stacklevel=stacklevel)
        return value_ms / 1000.0
    return default if value is None else value


def sem_args(name: str, sid: int, limit: int, permits: int) -> List[Any]:
    """SEM.ACQUIRE's arguments; PERMITS only for more than 1 (the request is then the same as
    before weighted semaphores). ValueError unless 1 <= permits <= limit."""
    limit, permits = int(limit), int(permits)
    if not 1 <= permits <= limit:
        raise ValueError("permits must be 1..limit (%d), not %d" % (limit, permits))
    args: List[Any] = ["SEM.ACQUIRE", name, sid, limit]
    return args + ["PERMITS", permits] if permits > 1 else args


def check_ttl(ttl: float, stacklevel: int = 3) -> None:
    """A warning for a ttl that looks like milliseconds (the API took them before 0.2)."""
    if isinstance(ttl, int) and ttl >= 1000:
        warnings.warn("ttl=%d is %d seconds (the API takes seconds since 0.2; ttl_ms= for "
                      "milliseconds)" % (ttl, ttl), UserWarning, stacklevel=stacklevel)


def span(granted_ms: int, margin: float, drift_ppm: int) -> float:
    """What the servers granted, less the margin and the clocks' rate difference, in seconds:
    the safe deadline is `send time of the keepalive + span`."""
    drift = granted_ms * drift_ppm // 1000000
    return (granted_ms - margin * 1000.0 - drift) / 1000.0


KA_PER_TTL = 3
KA_RETRIES_PER_TTL = 10
KA_RETRY_MIN = 0.020
BACKOFF_MIN = 0.010
# the longest pause between rounds over the endpoints; short, so that a call reaches a follower
# waiting for the new leader soon after the dead one is given up (docs/client.md), ~20 rounds/s
BACKOFF_MAX = 0.050
WAIT_SLICE = 0.100  # how often a long wait checks whether the leader moved
QUICK_REDIRECTS = 3
POOL_MAX = 16  # idle connections kept per address


@dataclass
class Revoke:
    """A request to a holder to let go of a lock (LOCK.REVOKE, docs/protocol.md
    "Revocation"): the lock, the grant's token and session, the deadline in seconds from when
    the request applied on the leader (None: asked only, never forced), the reason and who
    asked."""
    name: str
    token: int
    sid: int
    deadline: Optional[float]
    reason: str
    by: str


def revoke_of(ev: "Event", name: str, sid: int, token: int) -> Optional[Revoke]:
    """The Revoke an event carries for grant `token` of lock `name` held by session `sid`,
    None for any other event (the prefix stream also carries other names and events)."""
    f = ev.fields
    if ev.type != "revoke-requested" or ev.name != name:
        return None
    if int(f.get("sid", 0)) != sid or int(f.get("token", 0)) != token:
        return None
    dl = int(f.get("deadline_ms", 0))
    return Revoke(name, token, sid, dl / 1000.0 if dl else None,
                  s_(f.get("reason", b"")) or "", s_(f.get("by", b"")) or "")


@dataclass
class Waiter:
    """A session that queued behind a held lock with notify=True (LOCK ... NOTIFY,
    docs/protocol.md "Revocation"): the lock, the holder's grant it queued behind, the
    waiting session and how long it said it would wait (seconds)."""
    name: str
    token: int
    sid: int
    wait: float


def waiter_of(ev: "Event", name: str, token: int) -> Optional[Waiter]:
    """The Waiter an event carries for grant `token` of lock `name`, None for any other."""
    f = ev.fields
    if ev.type != "wait-notify" or ev.name != name or int(f.get("token", 0)) != token:
        return None
    return Waiter(name, token, int(f.get("sid", 0)), int(f.get("wait_ms", 0)) / 1000.0)


# W3C Trace Context, version 00 exactly (docs/protocol.md "Trace context"): lowercase hex, the
# trace id and the parent id not all zeros.
_TRACEPARENT = re.compile(r"00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}\Z")


def current_traceparent() -> Optional[str]:
    """The current OpenTelemetry span's context as a traceparent, when the opentelemetry API
    package is importable and a valid span is current; else None. The import is optional: the
    client does not depend on opentelemetry."""
    try:
        otel = importlib.import_module("opentelemetry.trace")
    except ImportError:
        return None
    ctx = otel.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return "00-%032x-%016x-%02x" % (ctx.trace_id, ctx.span_id, int(ctx.trace_flags))


def trace_args(traceparent: Optional[str]) -> List[Any]:
    """TRACEPARENT tp: `traceparent` when given (ValueError if it is not the exact W3C form;
    "" sends none), else the current OpenTelemetry span's, else nothing."""
    tp = current_traceparent() if traceparent is None else traceparent
    if not tp:
        return []
    if not _TRACEPARENT.match(tp):
        raise ValueError("traceparent must be 00-<32 hex>-<16 hex>-<2 hex> (lowercase, ids "
                         "not all zeros), not %r" % tp)
    return ["TRACEPARENT", tp]


def lock_cmd_args(name: str, sid: int, shared: bool, notify: bool,
                  value: Union[None, str, bytes] = None,
                  max_hold: Optional[float] = None,
                  traceparent: Optional[str] = None) -> List[Any]:
    """LOCK name sid [SHARED | NOTIFY] [VALUE v] [MAXHOLD ms]: a shared request cannot notify
    (nobody holds a lock exclusively for it to tell), and has no value or max hold (they belong
    to an exclusive grant)."""
    if shared and notify:
        raise ValueError("notify=True is for an exclusive lock")
    if shared and (value is not None or max_hold is not None):
        raise ValueError("value= and max_hold= are for an exclusive lock")
    if max_hold is not None and max_hold <= 0:
        raise ValueError("max_hold must be > 0 seconds")
    args: List[Any] = ["LOCK", name, sid]
    args += ["SHARED"] if shared else ["NOTIFY"] if notify else []
    if value is not None and len(value):
        args += ["VALUE", value]
    if max_hold is not None:
        args += ["MAXHOLD", max(1, int(round(max_hold * 1000)))]
    return args + trace_args(traceparent)


def reentrant_args(reentrant: bool, max_count: Optional[int]) -> List[Any]:
    """SESSION.OPEN's REENTRANT [MAXCOUNT n]; ValueError for a max_count without reentrant or
    below 1 (the server refuses it too, after a round trip)."""
    if max_count is not None and not reentrant:
        raise ValueError("max_count needs reentrant=True")
    if max_count is not None and (isinstance(max_count, bool) or int(max_count) < 1):
        raise ValueError("max_count must be at least 1")
    if not reentrant:
        return []
    return ["REENTRANT"] + (["MAXCOUNT", int(max_count)] if max_count is not None else [])


def revoke_cmd_args(name: str, deadline: Optional[float], reason: Optional[str]) -> List[Any]:
    """LOCK.REVOKE's arguments; deadline in seconds (None: ask only)."""
    args: List[Any] = ["LOCK.REVOKE", name]
    if deadline is not None:
        args += ["DEADLINE", ms(deadline, "deadline", 1)]
    if reason is not None:
        args += ["REASON", reason]
    return args


def auth_token_args(ttl: Optional[float]) -> List[Any]:
    """AUTH.TOKEN's arguments; ttl in seconds (None: the servers' --http-token-ttl)."""
    args: List[Any] = ["AUTH.TOKEN"]
    if ttl is not None:
        args += ["TTL", ms(ttl, "ttl", 1000)]
    return args


def multi_lock_args(sid: int, names: Sequence[str], shared: Collection[str]) -> List[Any]:
    """LOCK.MULTI sid n name... [SHARED name]...: the arguments (the wait and REQ come after).
    ValueError for no name, an empty or repeated one, or a shared name that is not among
    them (the server refuses those too: no round trip for a mistake)."""
    given = list(names)
    if not given or any(not n for n in given) or len(set(given)) != len(given):
        raise ValueError("LOCK.MULTI needs distinct non-empty names: %r" % (given,))
    extra = set(shared) - set(given)
    if extra:
        raise ValueError("shared names not among the names: %r" % sorted(extra))
    args: List[Any] = ["LOCK.MULTI", sid, len(given)]
    args += given
    for n in given:
        if n in shared:
            args += ["SHARED", n]
    return args
