# SPDX-License-Identifier: Apache-2.0
"""LOCK ... NOTIFY in the Python client, blocking and fencelock.aio, against a real server: a
waiter's lock(..., notify=True) reaches the holder's Session.on_waiter callback (the lock, the
holder's token, the waiting session and its wait), once per waiting session; a waiter without
notify tells nobody; the holder lets go from the callback and the waiter is granted."""

import asyncio
import threading

import pytest

from conftest import endpoint
from test_aio import run

from fencelock import LockTimeout
from fencelock.aio import AsyncClient


def test_on_waiter_hears_a_notify_waiter_once_and_lets_go(client):
    got = []
    heard = threading.Event()
    with client.session(30.0) as holder, client.session(30.0) as quiet, \
            client.session(30.0) as waiter:
        token = holder.acquire("nw", wait=5.0)
        w = holder.on_waiter("nw", token, lambda x: (got.append(x), heard.set()))
        try:
            # a waiter without notify tells nobody: it times out queued, unheard
            with pytest.raises(LockTimeout):
                quiet.acquire("nw", wait=0.5)
            granted = []
            t = threading.Thread(target=lambda: granted.append(
                waiter.acquire("nw", wait=30.0, notify=True)))
            t.start()
            assert heard.wait(30.0), "the waiter never reached the callback"
            holder.unlock("nw")  # let go on hearing it
            t.join(30.0)
            assert granted and granted[0] > token
            # the event stream up to the grant has been read: still one waiter heard
            waiter.unlock("nw")
            assert [(x.name, x.token, x.sid) for x in got] == [("nw", token, waiter.sid)]
            assert 0 < got[0].wait <= 30.0, got  # what was left of the wait when it queued
        finally:
            w.stop(10.0)
        assert w.error is None


def test_notify_is_for_an_exclusive_lock(client):
    with client.session(30.0) as s:
        with pytest.raises(ValueError):
            s.acquire("nx", wait=1.0, shared=True, notify=True)


def test_aio_on_waiter_coroutine_callback_unlocks_and_the_waiter_is_granted(node):
    async def main():
        async with AsyncClient(endpoint(node)) as c:
            async with c.session(ttl=30.0) as holder, c.session(ttl=30.0) as waiter:
                token = await holder.acquire("anw", wait=5.0)
                got = []

                async def cb(x):
                    got.append(x)
                    await holder.unlock("anw")  # let go at once

                task = holder.on_waiter("anw", token, cb)
                try:
                    async with waiter.lock("anw", wait=30.0, notify=True) as t2:
                        assert t2 > token
                finally:
                    task.cancel()
                assert [(x.name, x.token, x.sid) for x in got] == [("anw", token, waiter.sid)]
                assert 0 < got[0].wait <= 30.0, got
    run(main())
