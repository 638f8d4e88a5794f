# SPDX-License-Identifier: Apache-2.0
"""LOCK ... NOTIFY through libfencelock (tests/client/fl_notify.c): a waiter's fl_lock_notify
reaches the holder's fl_waiter_watch callback (the waiting session, its wait, the holder's
token); the holder lets go from it and the waiter is granted a larger token."""

import os

from test_client import Probe


class Notify(Probe):
    """fl_notify instead of fl_probe: the same line protocol."""

    def __init__(self, ctx, *args):
        import test_client
        path = os.path.join(os.path.dirname(ctx.binary), "tests", "client", "fl_notify")
        real = test_client.probe_path
        test_client.probe_path = lambda _ctx: path
        try:
            super().__init__(ctx, *args)
        finally:
            test_client.probe_path = real


def test_c_client_waiter_notify_reaches_the_holders_on_waiter(ctx):
    ep = "127.0.0.1:%d" % ctx.srv.port
    holder = Notify(ctx, "hold", ep, "n/C")
    hsid, token = (int(x) for x in holder.expect("held ", timeout=30).split())
    waiter = Notify(ctx, "wait", ep, "n/C", 30000)
    wsid = int(waiter.expect("session ", timeout=30))
    sid, wait_ms, tok = (int(x) for x in holder.expect("waiter ", timeout=30).split())
    assert (sid, tok) == (wsid, token), (sid, tok, wsid, token)
    assert 0 < wait_ms <= 30000, wait_ms
    assert holder.expect("unlocked ", timeout=30) == "ok"
    granted = int(waiter.expect("granted ", timeout=30))
    assert granted > token, (granted, token)
    assert hsid != wsid
