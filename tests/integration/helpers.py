# SPDX-License-Identifier: Apache-2.0
"""Assertion helpers shared by the test files."""

import threading
import time

from resp import Conn, RespError, as_map, text, ReplyTimeout, ConnectionClosed


def ok(reply, what=""):
    """Fail if the reply is an error; return it."""
    if isinstance(reply, RespError):
        raise AssertionError("%sunexpected error reply: -%s" % (what + ": " if what else "",
                                                                reply.text))
    return reply


def expect_ok(reply, what=""):
    if reply != "OK":
        raise AssertionError("%sexpected +OK, got %r" % (what + ": " if what else "", reply))


def expect_int(reply, what=""):
    if isinstance(reply, bool) or not isinstance(reply, int):
        raise AssertionError("%sexpected an integer reply, got %r"
                             % (what + ": " if what else "", reply))
    return reply


def expect_err(reply, code, what=""):
    """Fail unless the reply is an error whose code word is `code` (or one of a tuple)."""
    codes = (code,) if isinstance(code, str) else tuple(code)
    if not isinstance(reply, RespError):
        raise AssertionError("%sexpected -%s, got %r" % (what + ": " if what else "",
                                                         "/".join(codes), reply))
    if reply.code not in codes:
        raise AssertionError("%sexpected -%s, got -%s" % (what + ": " if what else "",
                                                          "/".join(codes), reply.text))
    return reply


def expect_nil(reply, what=""):
    if reply is not None:
        raise AssertionError("%sexpected nil, got %r" % (what + ": " if what else "", reply))


def eq(actual, expected, what=""):
    if actual != expected:
        raise AssertionError("%sexpected %r, got %r" % (what + ": " if what else "",
                                                        expected, actual))


def wait_until(pred, timeout=5.0, interval=0.01, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def cluster_info(c):
    return as_map(ok(c.call("CLUSTER.INFO"), "CLUSTER.INFO"))


def revision(c):
    return expect_int(cluster_info(c)["revision"], "CLUSTER.INFO revision")


def open_session(c, ttl=60000, *opts):
    return expect_int(c.call("SESSION.OPEN", ttl, *opts), "SESSION.OPEN %s" % ttl)


def lock_info(c, name):
    """LOCK.INFO as a dict (waiters as list of ints), or None if the lock is free."""
    r = ok(c.call("LOCK.INFO", name), "LOCK.INFO %s" % name)
    if r is None:
        return None
    return as_map(r)


def waiters(c, name):
    info = lock_info(c, name)
    return [] if info is None else list(info.get("waiters") or [])


def session_info(c, sid):
    """SESSION.INFO as a dict, or the RespError (e.g. -NOSESSION)."""
    r = c.call("SESSION.INFO", sid)
    if isinstance(r, RespError):
        return r
    return as_map(r)


def kv_get(c, key):
    r = ok(c.call("KV.GET", key), "KV.GET %r" % key)
    return None if r is None else as_map(r)


def no_reply(conn, seconds=0.15):
    """True if nothing arrives on conn within `seconds`."""
    return not conn.has_data(seconds)


def wait_queued(c, name, sid, timeout=30.0):
    """Wait until `sid` appears among the waiters of lock `name` (a blocked LOCK ... WAIT)."""
    wait_until(lambda: sid in waiters(c, name), timeout, what="session %d queued on %r"
               % (sid, name))


class Keepalive:
    """Background thread keeping sessions alive on its own connection."""

    def __init__(self, port, sids, interval=0.5):
        self.port, self.sids, self.interval = port, list(sids), interval
        self.errors = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        try:
            with Conn(self.port, timeout=5) as c:
                while not self._stop.is_set():
                    for sid in self.sids:
                        r = c.call("SESSION.KEEPALIVE", sid)
                        if isinstance(r, RespError):
                            self.errors.append((sid, r))
                    self._stop.wait(self.interval)
        except (OSError, ReplyTimeout, ConnectionClosed) as e:
            self.errors.append(("conn", e))

    def stop(self):
        self._stop.set()
        self._t.join(10)
        if self.errors:
            raise AssertionError("keepalive failed: %r" % (self.errors,))


def ms(t):
    return "%.0f ms" % (t * 1000)


__all__ = [n for n in dir() if not n.startswith("_")] + ["RespError", "as_map", "text"]
