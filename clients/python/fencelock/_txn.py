# SPDX-License-Identifier: Apache-2.0
"""TXN's builder, written once for fencelock.Client and fencelock.aio (docs/protocol.md "TXN"):

    r = c.txn().if_holds("job", s.sid).if_rev("cfg", "=", 7) \\
            .then_put("cfg", "v2").then_incr("gen", 1).else_put("log", "lost").commit()
    r.succeeded, r.revision, r.results

compares, then all of one branch's ops in one log entry, or none. No I/O here: Txn.commit
and AsyncTxn.commit send the command through their client (with a session: REQ, exactly once).
"""

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, TypeVar

from ._common import Fence, Value, s_
from .conn import Cmd

T = TypeVar("T", bound="TxnBuilder")
RELATIONS = ("=", "!=", "<", ">")


@dataclass(frozen=True)
class TxnResult:
    """succeeded: THEN ran (every compare held); revision: the store's revision after the TXN;
    results: per op of the branch that ran (put: its revision, delete: 1 or 0, incr: the new
    value), None for a resend answered by a node that no longer has them."""
    succeeded: bool
    revision: int
    results: Optional[List[int]]


def txn_result(r: Any) -> TxnResult:
    branch, rev, results = r
    return TxnResult(s_(branch) == "THEN", int(rev),
                     None if results is None else [int(x) for x in results])


class TxnBuilder:
    """The compares and the two branches; each method returns the builder."""

    def __init__(self) -> None:
        self._if: List[Any] = []
        self._then: List[Any] = []
        self._else: List[Any] = []
        self._fence: Optional[Fence] = None

    @staticmethod
    def _rel(op: str) -> str:
        if op not in RELATIONS:
            raise ValueError("relation must be one of %s" % ", ".join(RELATIONS))
        return op

    def if_rev(self: T, key: str, op: str, rev: int) -> T:
        """The key's mod_rev (0 if absent) compared with rev (=, !=, <, >)."""
        self._if += ["IF", "REV", key, self._rel(op), int(rev)]
        return self

    def if_value(self: T, key: str, op: str, value: Value) -> T:
        """The key's value = or != value (an absent key has none)."""
        self._if += ["IF", "VALUE", key, self._rel(op), value]
        return self

    def if_exists(self: T, key: str) -> T:
        self._if += ["IF", "EXISTS", key]
        return self

    def if_missing(self: T, key: str) -> T:
        self._if += ["IF", "MISSING", key]
        return self

    def if_token(self: T, lock: str, token: int, op: str = "=") -> T:
        """token is (=) or is not (!=) a current token of lock (FENCE's rule)."""
        self._if += ["IF", "TOKEN", lock, self._rel(op), int(token)]
        return self

    def if_holds(self: T, lock: str, sid: int) -> T:
        """Session sid holds lock (exclusively, shared or a permit)."""
        self._if += ["IF", "HOLDS", lock, int(sid)]
        return self

    def then_put(self: T, key: str, value: Value) -> T:
        self._then += ["PUT", key, value]
        return self

    def then_delete(self: T, key: str) -> T:
        self._then += ["DEL", key]
        return self

    def then_incr(self: T, key: str, by: int = 1) -> T:
        self._then += ["INCR", key, int(by)]
        return self

    def else_put(self: T, key: str, value: Value) -> T:
        self._else += ["PUT", key, value]
        return self

    def else_delete(self: T, key: str) -> T:
        self._else += ["DEL", key]
        return self

    def else_incr(self: T, key: str, by: int = 1) -> T:
        self._else += ["INCR", key, int(by)]
        return self

    def fence(self: T, name: str, token: int) -> T:
        """FENCE name token on the whole TXN: Stale (nothing applied) unless token is current."""
        self._fence = (name, int(token))
        return self

    def cmd(self) -> Cmd:
        """The TXN command (without FENCE: the client's write path adds it)."""
        argv: List[Any] = ["TXN"] + self._if + ["THEN"] + self._then
        if self._else:
            argv += ["ELSE"] + self._else
        return Cmd(*argv)


class Txn(TxnBuilder):
    """fencelock.Client.txn(): commit() sends it."""

    def __init__(self, send: Callable[[Cmd, Optional[Fence]], Any]) -> None:
        super().__init__()
        self._send = send

    def commit(self) -> TxnResult:
        return txn_result(self._send(self.cmd(), self._fence))
