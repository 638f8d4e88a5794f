# SPDX-License-Identifier: Apache-2.0
"""The exceptions of the fencelock package, one per error word of the protocol
(docs/protocol.md "Errors", src/common/proto.h) plus the client's own outcomes.

Every exception derives from FencelockError. Map a server's error reply with from_reply(); the
word is the first word of the reply, the rest is the server's message. Each class's `word` is
its name in the clients' common vocabulary (docs/clients.md, tests/conformance/PROTOCOL.md
"Error words").
"""

import re
from typing import Dict, Type


class FencelockError(Exception):
    """Base class: anything the package raises on purpose."""

    word = "OTHER"


class Unavailable(FencelockError):
    """No leader could be reached before the call's deadline (nothing was applied by a call
    that carried REQ sid seq, or its outcome is known; otherwise see OutcomeUnknown)."""

    word = "UNAVAILABLE"


class OutcomeUnknown(FencelockError):
    """A write without a session was sent and its answer lost (-UNKNOWN, or the connection
    broke after the send): it may have applied. Writes through a Session are retried with
    their `REQ sid seq` instead and never end here unless the deadline passed."""

    word = "UNKNOWN"


class SessionLost(FencelockError):
    """The session is unknown, closed, expired (-NOSESSION), or known lost locally."""

    word = "SESSION"


class NotHolder(FencelockError):
    """UNLOCK / SEM.RELEASE / ELECT.RESIGN by a session that neither holds nor waits."""

    word = "NOTHOLDER"


class LockTimeout(FencelockError):
    """A lock, permit or leadership was not granted within the wait (the session left the
    queue on the servers)."""

    word = "TIMEOUT"


class Stale(FencelockError):
    """A fenced write, FENCE.CHECK, FENCE.SIGN or ELECT.PROCLAIM with a token that is not the
    current holder's; nothing changed."""

    word = "STALE"


class IfRevFailed(FencelockError):
    """An IFREV condition did not hold; nothing changed."""

    word = "IFREV"


class TooLarge(FencelockError):
    """A key, name or value over the server's limit; a TXN of more compares and ops, or
    bytes, than the servers take (-TOOLARGE)."""

    word = "TOOLARGE"


class NoSpace(FencelockError):
    """A server quota is full (--max-sessions, --max-locks, ...); nothing applied."""

    word = "NOSPACE"


class AuthError(FencelockError):
    """-WRONGPASS / -NOAUTH: the credentials were refused or missing. Not retried."""

    word = "AUTH"


class PermissionDenied(FencelockError):
    """-NOPERM: the user may not run that command or name that key, lock or session."""

    word = "PERM"


class WrongType(FencelockError):
    """-WRONGTYPE: the name is a lock, semaphore or election of another kind."""

    word = "WRONGTYPE"


class DeadlockError(FencelockError):
    """-DEADLOCK: the wait would have closed a cycle of sessions waiting for each other (the
    message names it: "cycle of 2: 5 -a-> 7 -b-> 5", session 5 waits for lock a, which 7
    holds or is queued for first, ...). The request was refused and not queued; the session
    keeps what it holds, and the other waits are untouched: release something and retry."""

    word = "DEADLOCK"


class Broken(FencelockError):
    """-BROKEN: a latch a joined session can no longer count down (its session ended before
    it did), or a barrier a session ended inside (the message names both). Every waiter and
    every later step gets it until the latch or barrier is deleted (latch_delete): it never
    waits forever for a participant that is gone."""

    word = "BROKEN"


class Compacted(FencelockError):
    """-COMPACTED: the events after the id asked for are no longer retained.
    `oldest` is the oldest retained id; `after` the id just before it: reload the state, then
    watch from `after` (the next read starts at `oldest`). Not from "0": the next read may go
    to a new leader that retains more history, and "0" there starts before what was handed
    out."""

    word = "COMPACTED"

    def __init__(self, msg: str, oldest: str) -> None:
        super().__init__(msg)
        self.oldest = oldest

    @property
    def after(self) -> str:
        """The id just before `oldest` ("" if the server named none)."""
        r, sep, k = self.oldest.partition("-")
        if not r.isdigit() or (sep and not k.isdigit()):
            return ""
        rev, n = int(r), int(k or 0)
        if n:
            return "%d-%d" % (rev, n - 1)
        return "%d-%d" % (rev - 1, 2 ** 64 - 1) if rev else "0-0"


class ServerError(FencelockError):
    """Any other error reply (-ERR ...): syntax, a refused request."""


class TxnOpError(ServerError):
    """-ERR TXN op N: ...: an op of the TXN's branch that ran cannot apply (an INCR of a value
    that is not a counter, or one that would overflow). `op` is its place in the branch, 1 for
    the first (as Go's TxnOpError.Op, Java's op(), Node's op).
    Nothing of the TXN applied. A ServerError as well, so older handlers still catch it."""

    def __init__(self, msg: str, op: int) -> None:
        super().__init__(msg)
        self.op = op


class ProtocolError(FencelockError):
    """A reply of a shape the package does not expect."""


class TLSError(Unavailable):
    """No leader was reached before the deadline and a TLS handshake failed on the way (an
    untrusted certificate, a name that does not match): the message says which."""

    word = "TLS"


_WORDS: Dict[str, Type[FencelockError]] = {
    "NOSESSION": SessionLost,
    "NOTHOLDER": NotHolder,
    "STALE": Stale,
    "IFREV": IfRevFailed,
    "TOOLARGE": TooLarge,
    "NOSPACE": NoSpace,
    "WRONGPASS": AuthError,
    "NOAUTH": AuthError,
    "NOPERM": PermissionDenied,
    "WRONGTYPE": WrongType,
    "DEADLOCK": DeadlockError,
    "BROKEN": Broken,
    "UNKNOWN": OutcomeUnknown,
}


# redis-py hands an -ERR reply over without its "ERR " (error_text): both forms are the servers'.
_TXN_OP = re.compile(r"(?:ERR )?TXN op ([0-9]+):")


def txn_op(text: str) -> int:
    """N of "ERR TXN op N: ..." (the servers' text for a TXN's failing op), 0 for any other
    text (N is never 0: the ops count from 1)."""
    m = _TXN_OP.match(text)
    return int(m.group(1)) if m else 0


def from_reply(text: str) -> FencelockError:
    """The exception for one error reply's text ("STALE token 5 is not ...")."""
    word = text.split(" ", 1)[0]
    if word == "COMPACTED":  # "COMPACTED oldest=41-0: ..."
        m = re.search(r"oldest=([0-9]+-[0-9]+)", text)
        return Compacted(text, m.group(1) if m else "")
    op = txn_op(text)
    if op > 0:
        return TxnOpError(text, op)
    return _WORDS.get(word, ServerError)(text)
