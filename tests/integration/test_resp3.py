# SPDX-License-Identifier: Apache-2.0
"""HELLO 2/3 and the RESP3 reply types (maps, nulls)."""

from helpers import eq, expect_int, ok, open_session, text
from resp import _parse


def _raw_reply(c, *args):
    c.send(*args)
    data, _ = c.read_until_eof(timeout=0.3)
    return data


def test_hello3_returns_map_and_switches_protocol(ctx):
    c = ctx.conn()
    data = _raw_reply(c, "HELLO", 3)
    assert data[:1] == b"%", "HELLO 3 reply must be a RESP3 map: %r" % data[:80]
    h, end = _parse(data, 0)
    eq(end, len(data), "HELLO 3 is one reply")
    assert isinstance(h, dict), "HELLO 3 reply %r" % (h,)
    eq(text(h.get("server")), "fencelock", "server")
    eq(h.get("proto"), 3, "proto")
    eq(text(h.get("mode")), "cluster", "mode")
    eq(text(h.get("role")), "leader", "role")
    eq(h.get("id"), 1, "id")
    assert "version" in h, "HELLO map lacks version: %r" % (h,)


def test_resp3_kv_get_is_map_and_nil_is_null(ctx):
    c = ctx.conn()
    ok(c.call("HELLO", 3))
    sid = open_session(c)
    r = expect_int(c.call("PUT", "k", "v", "LEASE", sid))
    kv = c.call("KV.GET", "k")
    assert isinstance(kv, dict), "KV.GET in RESP3 must be a map, got %r" % (kv,)
    eq(kv, {"value": b"v", "create_rev": r, "mod_rev": r, "version": 1, "lease": sid})
    eq(_raw_reply(c, "GET", "missing"), b"_\r\n", "RESP3 nil of GET")
    eq(_raw_reply(c, "KV.GET", "missing"), b"_\r\n", "RESP3 nil of KV.GET")
    eq(_raw_reply(c, "LOCK.INFO", "free"), b"_\r\n", "RESP3 nil of LOCK.INFO")
    holder = open_session(c)
    expect_int(c.call("LOCK", "busy", holder))
    eq(_raw_reply(c, "LOCK", "busy", sid), b"_\r\n", "RESP3 nil of a failed try-lock")
    info = c.call("LOCK.INFO", "busy")
    assert isinstance(info, dict) and isinstance(info.get("waiters"), list), \
        "LOCK.INFO in RESP3: %r" % (info,)
    assert isinstance(c.call("CLUSTER.INFO"), dict), "CLUSTER.INFO in RESP3 must be a map"
    assert isinstance(c.call("SESSION.INFO", sid), dict), "SESSION.INFO in RESP3 must be a map"


def test_resp2_default_flat_arrays_and_nil_bulk(ctx):
    c = ctx.conn()
    r = expect_int(c.call("PUT", "k", "v"))
    kv = c.call("KV.GET", "k")
    assert isinstance(kv, list) and len(kv) == 10, "KV.GET in RESP2: flat array, got %r" % (kv,)
    eq(_raw_reply(c, "GET", "missing"), b"$-1\r\n", "RESP2 nil")
    h = c.call("HELLO", 2)
    assert isinstance(h, list), "HELLO 2 reply in RESP2 must be a flat array: %r" % (h,)
    d = dict(zip([text(x) for x in h[0::2]], h[1::2]))
    eq(d.get("proto"), 2)
    eq(text(d.get("server")), "fencelock")
    assert r


def test_hello2_switches_back_from_resp3(ctx):
    c = ctx.conn()
    ok(c.call("HELLO", 3))
    eq(_raw_reply(c, "GET", "missing"), b"_\r\n")
    h = c.call("HELLO", 2)
    assert isinstance(h, list), "HELLO 2 reply must be a flat array: %r" % (h,)
    eq(_raw_reply(c, "GET", "missing"), b"$-1\r\n", "RESP2 nil after HELLO 2")
