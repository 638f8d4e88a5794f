# SPDX-License-Identifier: Apache-2.0
"""fencelock: the Python client of fencelock (a replicated lock service with fencing tokens),
on redis-py. Blocking API here (threads); the asyncio one is fencelock.aio. Times are seconds.
See README.md and docs/python.md.

    from fencelock import Client
    c = Client("10.0.0.1:7480,10.0.0.2:7480")
    with c.session(ttl=10.0) as s, s.lock("inventory", wait=5.0) as token:
        s.put("stock", "9", fence=("inventory", token))
"""

from ._common import Event, LeaderInfo, Revoke, Waiter
from ._txn import Txn, TxnResult
from ._version import __version__
from .client import Client
from .errors import (AuthError, Broken, Compacted, DeadlockError, FencelockError, IfRevFailed, LockTimeout,
                     NoSpace, NotHolder, OutcomeUnknown, PermissionDenied, ProtocolError,
                     ServerError, SessionLost, Stale, TLSError, TooLarge, TxnOpError, Unavailable,
                     WrongType)
from .session import Session
from .watch import RevokeWatch, WaiterWatch, Watch

__all__ = ["Client", "Session", "LeaderInfo", "Watch", "Event", "Revoke", "RevokeWatch",
           "Waiter", "WaiterWatch", "Txn", "TxnResult",
           "FencelockError", "Unavailable", "TLSError", "OutcomeUnknown", "SessionLost", "NotHolder",
           "LockTimeout", "Stale", "IfRevFailed", "TooLarge", "NoSpace", "AuthError",
           "PermissionDenied", "WrongType", "DeadlockError", "Broken", "Compacted", "ServerError",
           "TxnOpError", "ProtocolError",
           "__version__"]
