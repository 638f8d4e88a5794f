# SPDX-License-Identifier: Apache-2.0
"""fencelock: the Python client of fencelock (a replicated lock service with fencing tokens),
on redis-py. See docs/python.md.

    from fencelock import Client
    c = Client("10.0.0.1:7480,10.0.0.2:7480")
    with c.session(ttl_ms=10000) as s, s.lock("inventory", wait=5.0) as token:
        s.put("stock", "9", fence=("inventory", token))
"""

from .client import Client, LeaderInfo
from .errors import (AuthError, Compacted, FencelockError, IfRevFailed, LockTimeout, NoSpace,
                     NotHolder, OutcomeUnknown, PermissionDenied, ProtocolError, ServerError,
                     SessionLost, Stale, TooLarge, Unavailable, WrongType)
from .session import Session
from .watch import Event, Watch

__version__ = "0.1.0"

__all__ = ["Client", "Session", "LeaderInfo", "Watch", "Event", "FencelockError",
           "Unavailable", "OutcomeUnknown", "SessionLost", "NotHolder", "LockTimeout", "Stale",
           "IfRevFailed", "TooLarge", "NoSpace", "AuthError", "PermissionDenied", "WrongType",
           "Compacted", "ServerError", "ProtocolError"]
