# SPDX-License-Identifier: Apache-2.0
"""fencelock.aio: the asyncio client, on redis.asyncio (redis-py 5.0 or later). The same
contract as the blocking client (docs/clients.md): a session kept alive by a task,
safe_until(), `lost` (an asyncio.Event), on_lost callbacks and guard() to stop the holder's
work, exactly-once REQ numbering, OutcomeUnknown, -NOTLEADER following, TLS and AUTH, watch
as an async iterator. Times are seconds. The exceptions are fencelock's.

    import asyncio, fencelock.aio
    async def main():
        async with fencelock.aio.AsyncClient("127.0.0.1:7480") as c, \\
                c.session(ttl=10.0) as s, s.lock("inventory", wait=5.0) as token:
            await s.put("stock", "9", fence=("inventory", token))
    asyncio.run(main())
"""

import redis

if int(redis.__version__.split(".")[0]) < 5:
    raise ImportError("fencelock.aio needs redis-py 5.0 or later (found %s)" % redis.__version__)

from .._common import Event, LeaderInfo, Revoke, Waiter  # noqa: E402
from ..errors import (AuthError, Compacted, DeadlockError, FencelockError, IfRevFailed,  # noqa: E402
                      LockTimeout, NoSpace, NotHolder, OutcomeUnknown, PermissionDenied,
                      ProtocolError, ServerError, SessionLost, Stale, TLSError, TooLarge,
                      TxnOpError, Unavailable, WrongType)
from .._txn import TxnResult  # noqa: E402
from .client import AsyncClient, AsyncTxn  # noqa: E402
from .session import AsyncSession  # noqa: E402
from .watch import AsyncWatch  # noqa: E402

__all__ = ["AsyncClient", "AsyncSession", "AsyncWatch", "AsyncTxn", "TxnResult", "Event",
           "LeaderInfo", "Revoke", "Waiter",
           "FencelockError", "Unavailable", "TLSError", "OutcomeUnknown", "SessionLost",
           "NotHolder", "LockTimeout", "Stale", "IfRevFailed", "TooLarge", "NoSpace",
           "AuthError", "PermissionDenied", "WrongType", "DeadlockError", "Compacted",
           "ServerError", "TxnOpError", "ProtocolError"]
