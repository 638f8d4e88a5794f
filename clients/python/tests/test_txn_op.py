# SPDX-License-Identifier: Apache-2.0
"""A TXN refused because an op of its branch cannot apply (-ERR TXN op N: ...) is a
fencelock.TxnOpError whose `op` is N, counted from 1 as Go's TxnOpError.Op, Java's op() and
Node's op; it is a ServerError as well, so a handler of ServerError still catches it. Every
other TXN refusal is unchanged (a plain ServerError, Stale, TooLarge, ...). The reading of the
servers' text first (no server), then against a real fencelockd: the blocking client and
fencelock.aio, with and without a session, nothing of a refused TXN applied."""

import asyncio

import pytest

from conftest import endpoint

import fencelock
import fencelock.aio
from fencelock import ServerError, Stale, TooLarge, TxnOpError
from fencelock.aio import AsyncClient
from fencelock.errors import from_reply


def test_the_failing_op_is_read_from_the_servers_text():
    # redis-py hands -ERR replies over without "ERR ": both forms name the op
    for text, op in (("TXN op 2: value of key k is not a signed 64-bit decimal integer", 2),
                     ("ERR TXN op 2: value of key k is not a signed 64-bit decimal integer", 2),
                     ("TXN op 1: increment would overflow: key n is 9223372036854775807", 1),
                     ("TXN op 64: x", 64)):
        e = from_reply(text)
        assert type(e) is TxnOpError and e.op == op and str(e) == text, (text, e)
        assert isinstance(e, ServerError) and e.word == "OTHER"


def test_other_texts_are_no_txn_op_error():
    for text in ("TXN op 0: x", "TXN op : x", "TXN op 2 x", "TXN op 2x: x", "TXN op -2: x",
                 "TXN op 2", "syntax error in TXN op 2: x", "key 'k' is written twice in one "
                 "branch of the TXN", "txn op 2: x"):
        e = from_reply(text)
        assert type(e) is ServerError and not hasattr(e, "op"), (text, e)
    assert type(from_reply("STALE TXN op 2: x")) is Stale
    assert type(from_reply("TOOLARGE TXN op 2: x")) is TooLarge


def test_txn_op_error_is_exported_by_both_apis():
    assert fencelock.TxnOpError is TxnOpError and "TxnOpError" in fencelock.__all__
    assert fencelock.aio.TxnOpError is TxnOpError and "TxnOpError" in fencelock.aio.__all__


def test_commit_names_the_op_that_cannot_apply(client):
    client.put("word", "abc")
    rev = client.kv_get("word")["mod_rev"]
    with pytest.raises(TxnOpError) as ei:  # op 2 of THEN: an INCR of "abc"
        client.txn().then_put("t1", "1").then_incr("word").commit()
    assert ei.value.op == 2 and isinstance(ei.value, ServerError)
    with client.session(10.0) as s:  # through a session (REQ): the same
        with pytest.raises(TxnOpError) as ei:
            s.txn().if_exists("word").then_incr("word", 1).then_put("t1", "1") \
                .else_put("t2", "2").commit()
        assert ei.value.op == 1
        with pytest.raises(TxnOpError) as ei:  # ELSE ran: its op 3, counted in ELSE
            s.txn().if_missing("word").then_put("t1", "1").else_put("t2", "2") \
                .else_delete("t3").else_incr("word", 1).commit()
        assert ei.value.op == 3
    client.put("big", str(2**63 - 1))
    with pytest.raises(TxnOpError) as ei:  # an overflow is one too
        client.txn().then_incr("big", 1).commit()
    assert ei.value.op == 1
    # other refusals stay what they were: no op named
    with pytest.raises(ServerError) as ei2:
        client.txn().then_put("t1", "1").then_delete("t1").commit()
    assert not isinstance(ei2.value, TxnOpError)
    assert client.get("t1") is None and client.get("t2") is None
    assert client.kv_get("word")["mod_rev"] == rev and client.get("word") == b"abc"


def test_aio_commit_names_the_op_that_cannot_apply(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c, c.session(ttl=10.0) as s:
            await c.put("aword", "abc")
            with pytest.raises(TxnOpError) as ei:
                await s.txn().then_put("at1", "1").then_incr("aword").commit()
            assert ei.value.op == 2 and isinstance(ei.value, ServerError)
            with pytest.raises(TxnOpError) as ei:
                await c.txn().then_incr("aword", 1).commit()
            assert ei.value.op == 1
            with pytest.raises(ServerError) as ei2:
                await c.txn().then_put("at1", "1").then_put("at1", "2").commit()
            assert not isinstance(ei2.value, TxnOpError)
            assert await c.get("at1") is None and await c.get("aword") == b"abc"

    asyncio.run(asyncio.wait_for(main(), 120.0))
