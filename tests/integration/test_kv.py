# SPDX-License-Identifier: Apache-2.0
"""Keys: revisions, IFREV, DEL, LEASE keys bound to sessions, KEYS prefix LIMIT."""

import time

from helpers import (eq, expect_err, expect_int, kv_get, ms, ok, open_session, revision,
                     session_info)


def test_put_records_create_mod_rev_and_version(ctx):
    c = ctx.conn()
    r1 = expect_int(c.call("PUT", "k", "a"))
    r2 = expect_int(c.call("PUT", "k", "b"))
    assert r2 > r1
    kv = kv_get(c, "k")
    eq(kv["value"], b"b")
    eq(kv["create_rev"], r1)
    eq(kv["mod_rev"], r2)
    eq(kv["version"], 2)
    assert kv["lease"] in (0, None), "lease of a key without LEASE: %r" % (kv["lease"],)
    eq(revision(c), r2, "CLUSTER.INFO revision equals the last PUT's revision")
    eq(c.call("KV.GET", "missing"), None)
    eq(c.call("GET", "missing"), None)


def test_values_are_binary_safe(ctx):
    c = ctx.conn()
    val = bytes(range(256)) + b"\r\n$-1\r\n"
    key = b"bin\x00\xff\r\nkey"
    expect_int(c.call("PUT", key, val))
    eq(ok(c.call("GET", key)), val)
    expect_int(c.call("PUT", "empty", ""))
    eq(ok(c.call("GET", "empty")), b"", "an empty value is not nil")


def test_ifrev_conditions(ctx):
    c = ctx.conn()
    r1 = expect_int(c.call("PUT", "k", "a", "IFREV", 0), "IFREV 0 on a missing key")
    rev = revision(c)
    expect_err(c.call("PUT", "k", "b", "IFREV", 0), "IFREV", "IFREV 0 on an existing key")
    expect_err(c.call("PUT", "k", "b", "IFREV", r1 + 1000), "IFREV", "wrong IFREV")
    expect_err(c.call("DEL", "k", "IFREV", r1 - 1), "IFREV", "DEL with a wrong IFREV")
    eq(revision(c), rev, "failed IFREV changes nothing")
    r2 = expect_int(c.call("PUT", "k", "b", "IFREV", r1), "IFREV with the current mod_rev")
    expect_err(c.call("PUT", "k", "c", "IFREV", r1), "IFREV", "IFREV with the old mod_rev")
    eq(c.call("DEL", "k", "IFREV", r2), 1, "DEL with the current mod_rev")


def test_del_returns_count_and_recreate_resets_version(ctx):
    c = ctx.conn()
    expect_int(c.call("PUT", "k", "a"))
    expect_int(c.call("PUT", "k", "b"))
    eq(c.call("DEL", "k"), 1)
    rev = revision(c)
    eq(c.call("DEL", "k"), 0, "DEL of a missing key")
    eq(revision(c), rev, "DEL of a missing key changes nothing")
    r = expect_int(c.call("PUT", "k", "c"))
    kv = kv_get(c, "k")
    eq(kv["version"], 1, "version of a re-created key")
    eq(kv["create_rev"], r, "create_rev of a re-created key")


def test_lease_keys_vanish_when_session_expires(ctx):
    c = ctx.conn()
    s = open_session(c, 600)
    expect_int(c.call("PUT", "lk1", "v", "LEASE", s))
    expect_int(c.call("PUT", "lk2", "v", "LEASE", s))
    expect_int(c.call("PUT", "plain", "v"))
    eq(kv_get(c, "lk1")["lease"], s, "KV.GET lease")
    eq(session_info(c, s)["keys"], 2, "SESSION.INFO keys")
    t_send = time.monotonic()
    expect_int(c.call("SESSION.KEEPALIVE", s))
    t_reply = time.monotonic()
    last_present = t_send
    while True:
        t0 = time.monotonic()
        r = c.call("GET", "lk1")
        t1 = time.monotonic()
        if r is None:
            break
        last_present = t0
        assert t1 - t_send < 3, "lease key still there 3 s after a 600 ms session's keepalive"
        time.sleep(0.01)
    assert t1 - t_send >= 0.6, "lease key deleted %s after the keepalive (ttl 600)" % ms(t1 - t_send)
    assert last_present - t_reply <= 0.8, "lease key deleted late"
    eq(c.call("GET", "lk2"), None, "second lease key")
    eq(ok(c.call("GET", "plain")), b"v", "key without lease stays")
    eq(ok(c.call("KEYS", "lk")), [], "KEYS after the lease ended")


def test_lease_keys_vanish_when_session_closes(ctx):
    c = ctx.conn()
    s = open_session(c, 60000)
    other = open_session(c, 60000)
    expect_int(c.call("PUT", "lk1", "v", "LEASE", s))
    expect_int(c.call("PUT", "lk2", "v", "LEASE", other))
    eq(c.call("SESSION.CLOSE", s), "OK")
    eq(c.call("GET", "lk1"), None, "lease key right after SESSION.CLOSE")
    eq(ok(c.call("GET", "lk2")), b"v", "another session's lease key stays")


def test_put_without_lease_detaches_key_from_session(ctx):
    c = ctx.conn()
    s = open_session(c, 60000)
    expect_int(c.call("PUT", "k", "v1", "LEASE", s))
    expect_int(c.call("PUT", "k", "v2"))
    kv = kv_get(c, "k")
    assert kv["lease"] in (0, None), \
        "a PUT without LEASE kept lease %r (etcd semantics: the new PUT sets no lease)" % (
            kv["lease"],)
    eq(c.call("SESSION.CLOSE", s), "OK")
    eq(ok(c.call("GET", "k")), b"v2", "key re-put without lease survives the session")


def test_keys_prefix_limit_in_byte_order(ctx):
    c = ctx.conn()
    for k in [b"a/3", b"a/1", b"a/10", b"a/2", b"b/1", b"a", b"ab", b"a/\xff", b"a/z",
              b"a/\x00", b"gone"]:
        expect_int(c.call("PUT", k, "v"))
    eq(c.call("DEL", "gone"), 1)
    eq(ok(c.call("KEYS", "a/")), [b"a/\x00", b"a/1", b"a/10", b"a/2", b"a/3", b"a/z", b"a/\xff"],
       "KEYS a/")
    eq(ok(c.call("KEYS", "a/", "LIMIT", 2)), [b"a/\x00", b"a/1"], "KEYS a/ LIMIT 2")
    eq(ok(c.call("KEYS", "a")), [b"a", b"a/\x00", b"a/1", b"a/10", b"a/2", b"a/3", b"a/z",
                                 b"a/\xff", b"ab"], "KEYS a")
    eq(ok(c.call("KEYS", "")), [b"a", b"a/\x00", b"a/1", b"a/10", b"a/2", b"a/3", b"a/z",
                                b"a/\xff", b"ab", b"b/1"], "KEYS \"\"")
    eq(ok(c.call("KEYS", "", "LIMIT", 1)), [b"a"])
    eq(ok(c.call("KEYS", "zz")), [], "KEYS with no match")
    eq(ok(c.call("KEYS", "a/", "limit", 100)), ok(c.call("KEYS", "a/")),
       "lower-case option name")
