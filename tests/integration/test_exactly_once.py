# SPDX-License-Identifier: Apache-2.0
"""REQ sid seq: a retried mutation is answered from the request table, never applied twice."""

from helpers import (eq, expect_err, expect_int, kv_get, lock_info, ok, open_session, revision,
                     wait_queued)


def test_put_retried_with_same_req_applies_once(ctx):
    c = ctx.conn()
    sid = open_session(c)
    r1 = expect_int(c.call("PUT", "k", "v", "REQ", sid, 1), "first PUT")
    rev = revision(c)
    r2 = expect_int(c.call("PUT", "k", "v", "REQ", sid, 1), "retried PUT")
    eq(r2, r1, "revision answered to the retry")
    eq(revision(c), rev, "revision counter after the retry")
    kv = kv_get(c, "k")
    eq(kv["version"], 1, "version after a retried PUT")
    eq(kv["mod_rev"], r1, "mod_rev after a retried PUT")
    # A "retry" carrying different data is another command: refused (the replay check), nothing applies.
    e = expect_err(c.call("PUT", "k", "other", "REQ", sid, 1), "ERR", "retry with another value")
    eq(e.text, "ERR request seq 1 of session %d was used by a different command" % sid)
    eq(ok(c.call("GET", "k")), b"v", "value after a retry with another value")
    eq(revision(c), rev, "revision counter after the second retry")


def test_req_options_may_come_anywhere(ctx):
    c = ctx.conn()
    sid = open_session(c)
    r1 = expect_int(c.call("PUT", "k", "v", "REQ", sid, 3, "IFREV", 0), "REQ before IFREV")
    eq(c.call("PUT", "k", "v", "IFREV", 0, "REQ", sid, 3), r1, "same request, options reordered")
    eq(kv_get(c, "k")["version"], 1)


def test_req_seq_below_highest_is_superseded(ctx):
    c = ctx.conn()
    sid = open_session(c)
    expect_int(c.call("PUT", "k", "v1", "REQ", sid, 1))
    r5 = expect_int(c.call("PUT", "k", "v5", "REQ", sid, 5), "seqs need not be contiguous")
    rev = revision(c)
    e = expect_err(c.call("PUT", "k", "v3", "REQ", sid, 3), "ERR", "seq 3 after seq 5")
    assert "superseded" in e.text, "error text %r should say the seq is superseded" % e.text
    expect_err(c.call("PUT", "k", "v1", "REQ", sid, 1), "ERR", "seq 1 after seq 5")
    eq(revision(c), rev, "revision after superseded requests")
    eq(ok(c.call("GET", "k")), b"v5")
    eq(c.call("PUT", "k", "v5", "REQ", sid, 5), r5, "the highest seq is still answered")
    r6 = expect_int(c.call("PUT", "k", "v6", "REQ", sid, 6))
    assert r6 > r5
    # Seqs are per session: another session starts from scratch.
    other = open_session(c)
    expect_int(c.call("PUT", "k2", "x", "REQ", other, 1), "seq 1 of another session")


def test_lock_retried_with_same_req_returns_same_token(ctx):
    c = ctx.conn()
    sid = open_session(c)
    t1 = expect_int(c.call("LOCK", "l", sid, "REQ", sid, 5), "LOCK REQ sid 5")
    rev = revision(c)
    eq(c.call("LOCK", "l", sid, "REQ", sid, 5), t1, "retried LOCK")
    eq(revision(c), rev, "revision after the retried LOCK")
    eq(lock_info(c, "l")["token"], t1)
    ok(c.call("UNLOCK", "l", sid, "REQ", sid, 6))
    rev = revision(c)
    eq(c.call("UNLOCK", "l", sid, "REQ", sid, 6), "OK", "retried UNLOCK answers the cached +OK")
    eq(revision(c), rev, "revision after the retried UNLOCK")
    eq(c.call("LOCK.INFO", "l"), None)


def test_lock_retry_after_queued_answers_the_truth(ctx):
    c = ctx.conn()
    holder = open_session(c)
    expect_int(c.call("LOCK", "l", holder))
    sid = open_session(c)
    w = ctx.conn()
    w.send("LOCK", "l", sid, "WAIT", 10000, "REQ", sid, 1)
    wait_queued(c, "l", sid)
    w.close()  # the client lost its connection while queued
    ok(c.call("UNLOCK", "l", holder))
    info = lock_info(c, "l")
    eq(info["holder"], sid, "holder after the unlock")
    w2 = ctx.conn()
    eq(w2.call("LOCK", "l", sid, "WAIT", 10000, "REQ", sid, 1, timeout=3), info["token"],
       "retry of the queued LOCK")


def test_session_close_retried_with_same_req(ctx):
    c = ctx.conn()
    sid = open_session(c)
    eq(c.call("SESSION.CLOSE", sid, "REQ", sid, 1), "OK")
    # The request table goes with the session: the retry answers NOSESSION or the cached +OK,
    # but never applies anything.
    rev = revision(c)
    r = c.call("SESSION.CLOSE", sid, "REQ", sid, 1)
    assert r == "OK" or getattr(r, "code", "") == "NOSESSION", "retried CLOSE -> %r" % (r,)
    eq(revision(c), rev)
