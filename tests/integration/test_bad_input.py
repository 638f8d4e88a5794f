# SPDX-License-Identifier: Apache-2.0
"""Bad input gets a clear error, changes nothing, and never crashes the server."""

import random
import socket
import time

from helpers import (eq, expect_err, expect_int, ok, open_session, revision, RespError)
from resp import Conn, as_map, encode_command

BIG_SID = 999999999  # far above any revision a test reaches


def _rejected(c, cmds, code="ERR", key_absent=None):
    """Each command gets -code; the revision is unchanged; the connection still answers."""
    rev = revision(c)
    bad = []
    for args in cmds:
        r = c.call(*args)
        codes = (code,) if isinstance(code, str) else code
        if not isinstance(r, RespError) or r.code not in codes:
            bad.append("%s -> %r" % (" ".join(map(repr, args)), r))
        pong = c.call("PING")
        assert pong == "PONG", "after %r the connection answers PING with %r" % (args, pong)
    assert not bad, "expected -%s for:\n  %s" % ("/".join((code,) if isinstance(code, str)
                                                         else code), "\n  ".join(bad))
    eq(revision(c), rev, "revision after rejected commands")
    if key_absent is not None:
        eq(c.call("GET", key_absent), None, "key %r after rejected commands" % key_absent)


def test_unknown_command_is_an_error(ctx):
    c = ctx.conn()
    _rejected(c, [("FOO",), ("FOO", "bar", "baz"), ("SESSION.BOGUS", 1), ("LOCKX", "a", 1),
                  ("SET", "k", "v"), ("",)], key_absent="k")


def test_wrong_arity_is_an_error_for_each_command(ctx):
    c = ctx.conn()
    sid = open_session(c)
    _rejected(c, [
        ("SESSION.OPEN",),
        ("SESSION.KEEPALIVE",), ("SESSION.KEEPALIVE", sid, "extra"),
        ("SESSION.CLOSE",),
        ("SESSION.INFO",), ("SESSION.INFO", sid, "extra"),
        ("LOCK",), ("LOCK", "l"),
        ("UNLOCK",), ("UNLOCK", "l"),
        ("LOCK.INFO",), ("LOCK.INFO", "l", "extra"),
        ("FENCE.CHECK",), ("FENCE.CHECK", "l"), ("FENCE.CHECK", "l", 1, "extra"),
        ("FENCE.SIGN",), ("FENCE.SIGN", "l"), ("FENCE.SIGN", "l", 1, "extra"),
        ("FENCE.VERIFY", "l", 1), ("FENCE.VERIFY", "l", 1, "s", "extra"),
        ("GET",), ("GET", "k", "extra"),
        ("KV.GET",), ("KV.GET", "k", "extra"),
        ("PUT",), ("PUT", "k"),
        ("DEL",),
        ("KEYS",),
        ("PING", "a", "b"),
        ("SEM.ACQUIRE", "s", sid), ("SEM.RELEASE", "s"), ("SEM.INFO",), ("SEM.INFO", "s", "x"),
        ("ELECT.CAMPAIGN", "e", sid), ("ELECT.PROCLAIM", "e", sid, 1), ("ELECT.RESIGN", "e"),
        ("ELECT.LEADER",), ("ELECT.LEADER", "e", "x"), ("ELECT.OBSERVE",),
        ("SNAPSHOT.SAVE", "x"),
    ], key_absent="k")
    # The session is untouched by all that.
    expect_int(c.call("SESSION.KEEPALIVE", sid))


def test_option_without_value_or_extra_argument_is_an_error(ctx):
    c = ctx.conn()
    sid = open_session(c)
    expect_int(c.call("LOCK", "held", sid))
    _rejected(c, [
        ("SESSION.OPEN", 1000, "LOCKDELAY"), ("SESSION.OPEN", 1000, "NAME"),
        ("SESSION.OPEN", 1000, "BOGUS", 1), ("SESSION.OPEN", 1000, "extra"),
        ("LOCK", "l", sid, "WAIT"), ("LOCK", "l", sid, "BOGUS", 1), ("LOCK", "l", sid, "extra"),
        ("LOCK", "l", sid, "REQ", sid),
        ("UNLOCK", "held", sid, "extra"),
        ("SESSION.CLOSE", sid, "extra"),
        ("PUT", "k", "v", "LEASE"), ("PUT", "k", "v", "FENCE", "held"), ("PUT", "k", "v", "IFREV"),
        ("PUT", "k", "v", "REQ", sid), ("PUT", "k", "v", "extra"),
        ("DEL", "k", "FENCE", "held"), ("DEL", "k", "IFREV"), ("DEL", "k", "extra"),
        ("KEYS", "", "LIMIT"), ("KEYS", "", "BOGUS", 1),
    ], key_absent="k")
    expect_int(c.call("SESSION.KEEPALIVE", sid))
    eq(c.call("FENCE.CHECK", "held", expect_int(c.call("LOCK", "held", sid))), "OK",
       "lock untouched")


def test_non_numbers_and_negative_numbers_are_errors(ctx):
    c = ctx.conn()
    sid = open_session(c)
    tok = expect_int(c.call("LOCK", "held", sid))
    bad_numbers = ["abc", "-1", "+5", "1.5", "", "1e3", "0x10", " 5", "5 ",
                   "9223372036854775808", "99999999999999999999999", "-0"]
    templates = [
        ("SESSION.OPEN", None), ("SESSION.OPEN", 1000, "LOCKDELAY", None),
        ("SESSION.KEEPALIVE", None), ("SESSION.CLOSE", None), ("SESSION.INFO", None),
        ("LOCK", "l", None), ("LOCK", "l", sid, "WAIT", None), ("UNLOCK", "held", None),
        ("FENCE.CHECK", "held", None), ("FENCE.SIGN", "held", None),
        ("FENCE.VERIFY", "held", None, "0" * 64),
        ("PUT", "k", "v", "LEASE", None), ("PUT", "k", "v", "FENCE", "held", None),
        ("PUT", "k", "v", "IFREV", None), ("DEL", "k", "IFREV", None),
        ("KEYS", "", "LIMIT", None),
        ("PUT", "k", "v", "REQ", None, 1), ("PUT", "k", "v", "REQ", sid, None),
    ]
    cmds = [tuple(n if a is None else a for a in t) for t in templates for n in bad_numbers]
    _rejected(c, cmds, key_absent="k")
    eq(c.call("FENCE.CHECK", "held", tok), "OK", "lock untouched")
    expect_int(c.call("SESSION.KEEPALIVE", sid))


def test_zero_ttl_is_an_error(ctx):
    _rejected(ctx.conn(), [("SESSION.OPEN", 0), ("SESSION.OPEN", 0, "LOCKDELAY", 10)])


def test_ttl_over_default_max_is_an_error(ctx):
    c = ctx.conn()
    week = 7 * 24 * 3600 * 1000
    _rejected(c, [("SESSION.OPEN", week + 1), ("SESSION.OPEN", 9223372036854775807),
                  ("SESSION.OPEN", 1000, "LOCKDELAY", 60001)])
    expect_int(c.call("SESSION.OPEN", week), "SESSION.OPEN at the default --max-ttl")
    expect_int(c.call("SESSION.OPEN", 1000, "LOCKDELAY", 60000), "LOCKDELAY at the default max")


def test_ttl_and_lockdelay_over_configured_max_are_errors(ctx):
    ctx.server("--max-ttl", 60000, "--max-lockdelay", 5000)
    c = ctx.conn()
    _rejected(c, [("SESSION.OPEN", 60001), ("SESSION.OPEN", 1000, "LOCKDELAY", 5001)])
    expect_int(c.call("SESSION.OPEN", 60000), "SESSION.OPEN at --max-ttl")
    expect_int(c.call("SESSION.OPEN", 1000, "LOCKDELAY", 5000), "LOCKDELAY at --max-lockdelay")


def test_unknown_session_is_nosession(ctx):
    c = ctx.conn()
    sid = open_session(c)
    expect_int(c.call("LOCK", "held", sid))
    _rejected(c, [
        ("LOCK", "l", BIG_SID), ("LOCK", "l", BIG_SID, "WAIT", 100), ("LOCK", "held", BIG_SID),
        ("UNLOCK", "held", BIG_SID), ("SESSION.KEEPALIVE", BIG_SID), ("SESSION.CLOSE", BIG_SID),
        ("SESSION.INFO", BIG_SID), ("PUT", "k", "v", "LEASE", BIG_SID),
        ("PUT", "k", "v", "REQ", BIG_SID, 1), ("LOCK", "l", sid, "REQ", BIG_SID, 1),
    ], code="NOSESSION", key_absent="k")
    eq(c.call("LOCK.INFO", "l"), None, "lock l after NOSESSION replies")


def test_closed_session_is_nosession(ctx):
    c = ctx.conn()
    sid = open_session(c)
    eq(c.call("SESSION.CLOSE", sid), "OK")
    _rejected(c, [("LOCK", "l", sid), ("SESSION.KEEPALIVE", sid), ("SESSION.CLOSE", sid),
                  ("SESSION.INFO", sid), ("PUT", "k", "v", "LEASE", sid), ("UNLOCK", "l", sid)],
              code="NOSESSION", key_absent="k")


def test_oversize_key_value_and_name_are_toolarge(ctx):
    ctx.server("--max-key", 16, "--max-value", 64)
    c = ctx.conn()
    sid = open_session(c)
    _rejected(c, [("PUT", "k" * 17, "v"), ("PUT", "k", "v" * 65), ("LOCK", "n" * 2000, sid),
                  ("SESSION.OPEN", 1000, "NAME", "x" * 2000),
                  ("PUT", "k" * 17, "v", "REQ", sid, 1)], code="TOOLARGE", key_absent="k")
    expect_int(c.call("PUT", "k" * 16, "v" * 64), "PUT at exactly --max-key/--max-value")
    eq(ok(c.call("GET", "k" * 16)), b"v" * 64)


def test_put_unknown_option_is_an_error(ctx):
    c = ctx.conn()
    _rejected(c, [("PUT", "k", "v", "BOGUS", 1), ("PUT", "k", "v", "NX"),
                  ("PUT", "k", "v", "EX", 10), ("DEL", "k", "BOGUS", 1)], key_absent="k")


def test_duplicated_options_are_errors(ctx):
    c = ctx.conn()
    sid = open_session(c)
    tok = expect_int(c.call("LOCK", "held", sid))
    _rejected(c, [
        ("PUT", "k", "v", "IFREV", 0, "IFREV", 0),
        ("PUT", "k", "v", "FENCE", "held", tok, "FENCE", "held", tok),
        ("PUT", "k", "v", "LEASE", sid, "LEASE", sid),
        ("LOCK", "l", sid, "WAIT", 10, "WAIT", 10),
        ("SESSION.OPEN", 1000, "NAME", "a", "NAME", "b"),
        ("SESSION.OPEN", 1000, "LOCKDELAY", 1, "LOCKDELAY", 1),
        ("KEYS", "", "LIMIT", 1, "LIMIT", 1),
        ("PUT", "k", "v", "REQ", sid, 1, "REQ", sid, 2),
    ], key_absent="k")


def _protocol_error(srv, payload, what):
    c = Conn(srv.port, timeout=5)
    try:
        eq(c.call("PING"), "PONG", "PING before %s" % what)
        c.send_raw(payload)
        data, closed = c.read_until_eof(timeout=3.0)
        assert data.startswith(b"-ERR Protocol error"), \
            "%s: expected -ERR Protocol error..., got %r" % (what, data[:200])
        assert closed, "%s: connection not closed after the protocol error" % what
    finally:
        c.close()


def test_malformed_resp_is_protocol_error_and_closes(ctx):
    srv = ctx.server("--max-bulk", 1024, "--max-args", 16)
    c = ctx.conn()
    rev = revision(c)
    cases = [
        (b"*abc\r\n", "*abc"),
        (b"*1\r\n$-5\r\n", "$-5"),
        (b"*1\r\n$abc\r\n", "$abc"),
        (b"*1\r\n+PING\r\n", "'+' instead of '$' in a multibulk"),
        # Headers only: the limits must be enforced before the data is buffered.
        (b"*3\r\n$3\r\nPUT\r\n$1\r\nk\r\n$2000\r\n", "bulk header over --max-bulk"),
        (b"*100\r\n", "multibulk header with more than --max-args arguments"),
        (b"A" * 70000, "inline line over 64 KiB"),
    ]
    for payload, what in cases:
        _protocol_error(srv, payload, what)
    eq(c.call("PING"), "PONG", "an older connection still works")
    with Conn(srv.port) as fresh:
        eq(fresh.call("PING"), "PONG", "a fresh connection works")
        eq(revision(fresh), rev, "revision after protocol errors")
        eq(fresh.call("GET", "k"), None)
    # Just below the limits everything works.
    expect_int(c.call("PUT", "k", "x" * 1000), "PUT with a bulk under --max-bulk")
    r = c.call("SESSION.OPEN", 1000, "NAME", "n", "LOCKDELAY", 1)
    expect_int(r, "6 arguments under --max-args 16")


def _garbage(rng):
    tokens = [b"*", b"$", b"\r\n", b"\r", b"\n", b" ", b"\x00", b"-", b"+", b":", b"%", b"~",
              b"PING", b"LOCK", b"PUT", b"SESSION.OPEN", b"HELLO", b"GET", b"\"", b"'", b"\\",
              b"\xff"]
    parts = []
    for _ in range(rng.randrange(1, 40)):
        k = rng.random()
        if k < 0.35:
            parts.append(rng.choice(tokens))
        elif k < 0.6:
            parts.append(str(rng.choice([0, 1, 2, 3, -1, -5, 10, 1024, 2 ** 31, 2 ** 63,
                                         2 ** 64 + 5, rng.randrange(-99, 9999)])).encode())
        else:
            parts.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60))))
    return b"".join(parts)


def _blast(srv, payloads, per_batch=25):
    for i in range(0, len(payloads), per_batch):
        socks = []
        for p in payloads[i:i + per_batch]:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            try:
                s.sendall(p)
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            socks.append(s)
        deadline = time.monotonic() + 1.0
        for s in socks:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                while s.recv(65536):
                    pass
            except OSError:
                pass
            s.close()
        assert srv.running(), "fencelockd died during the garbage batch starting at #%d" % i


def test_random_garbage_bytes_never_crash(ctx):
    srv = ctx.srv
    rng = random.Random(20240531)
    _blast(srv, [_garbage(rng) for _ in range(300)])
    with Conn(srv.port) as c:
        eq(c.call("PING"), "PONG", "PING after garbage")
        expect_int(c.call("SESSION.OPEN", 1000), "SESSION.OPEN after garbage")


def test_random_commands_never_crash(ctx):
    srv = ctx.srv
    rng = random.Random(7)
    c = ctx.conn()
    sids = [open_session(c, 30000) for _ in range(3)]
    names = ["SESSION.OPEN", "SESSION.KEEPALIVE", "SESSION.CLOSE", "SESSION.INFO", "LOCK",
             "UNLOCK", "LOCK.INFO", "FENCE.CHECK", "GET", "KV.GET", "PUT", "DEL", "KEYS",
             "PING", "HELLO", "INFO", "CLUSTER.INFO", "CLUSTER.MEMBERS", "SEM.ACQUIRE",
             "SEM.RELEASE", "SEM.INFO", "ELECT.CAMPAIGN", "ELECT.PROCLAIM", "ELECT.RESIGN",
             "ELECT.LEADER", "ELECT.OBSERVE", "SNAPSHOT.SAVE"]
    words = ["WAIT", "LEASE", "FENCE", "IFREV", "REQ", "LIMIT", "NAME", "LOCKDELAY", "AFTER",
             "0", "1",
             "-1", "", "\x00", "k", "l", "9223372036854775807", "18446744073709551616", "3",
             "2", "abc", "x" * 300] + [str(s) for s in sids]
    payloads = []
    for _ in range(120):
        cmds = []
        for _ in range(rng.randrange(1, 12)):
            args = [rng.choice(names)] + [rng.choice(words) for _ in range(rng.randrange(0, 7))]
            cmds.append(encode_command(*args))
        payloads.append(b"".join(cmds))
    _blast(srv, payloads, per_batch=20)
    with Conn(srv.port) as c2:
        eq(c2.call("PING"), "PONG", "PING after random commands")
        expect_int(c2.call("PUT", "after", "1"), "PUT after random commands")


def test_hello_with_unsupported_version_is_noproto(ctx):
    c = ctx.conn()
    for v in (4, 1, 0):
        expect_err(c.call("HELLO", v), "NOPROTO", "HELLO %d" % v)
    eq(c.call("PING"), "PONG", "still RESP2 after the NOPROTO")
    c.send("GET", "missing")
    raw, _ = c.read_until_eof(timeout=0.3)
    eq(raw, b"$-1\r\n", "RESP2 nil after a refused HELLO")


def test_commands_pipelined_before_a_protocol_error_are_answered_then_close(ctx):
    srv = ctx.srv
    c = ctx.conn()
    holder = open_session(c)
    waiter = open_session(c)
    expect_int(c.call("LOCK", "pe-lock", holder))
    p = Conn(srv.port, timeout=5)
    try:
        # A write (answered after its commit), a read (after a barrier), a blocked LOCK WAIT
        # (answered nil after 300 ms), then a malformed header and a command behind it.
        p.send_raw(encode_command("PING") + encode_command("PUT", "pe-k", "v") +
                   encode_command("GET", "pe-k") +
                   encode_command("LOCK", "pe-lock", waiter, "WAIT", 300) +
                   encode_command("PING", "last") +
                   b"*abc\r\n" + encode_command("PUT", "pe-after", "x"))
        data, closed = p.read_until_eof(timeout=3.0)
    finally:
        p.close()
    # Redis answers everything before the bad header, then the error, then closes. Here the
    # replies of a write still committing and of a parked LOCK WAIT must not be dropped.
    assert data.startswith(b"+PONG\r\n:"), "replies before the protocol error: %r (closed: " \
        "%s)" % (data[:200], closed)
    head, _, rest = data[len(b"+PONG\r\n:"):].partition(b"\r\n")
    assert head.isdigit(), "PUT reply: %r" % data[:200]
    expected = b"$1\r\nv\r\n$-1\r\n$4\r\nlast\r\n"
    assert rest.startswith(expected), "after the PUT expected GET -> v, LOCK WAIT -> nil, " \
        "PING -> last, then -ERR Protocol error; got %r (connection closed: %s)" \
        % (rest[:200], closed)
    tail = rest[len(expected):]
    assert tail.startswith(b"-ERR Protocol error"), "expected -ERR Protocol error after the " \
        "pipelined replies, got %r" % tail[:200]
    assert tail.count(b"\r\n") == 1, "replies after the protocol error: %r" % tail
    assert closed, "connection not closed after the protocol error"
    eq(c.call("GET", "pe-k"), b"v", "the PUT before the protocol error applied")
    eq(c.call("GET", "pe-after"), None, "the PUT behind the protocol error must not apply")
    info = as_map_or_none(c.call("LOCK.INFO", "pe-lock"))
    eq(list(info["waiters"] or []), [], "waiters of pe-lock after the WAIT 300 elapsed")


def as_map_or_none(r):
    return None if r is None else as_map(r)


def _hang_up(srv, payload, half_close=False):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    try:
        s.sendall(payload)
        if half_close:
            s.shutdown(socket.SHUT_WR)
            s.settimeout(3.0)
            data = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        return data, True
                    data += chunk
            except socket.timeout:
                return data, False
            except (ConnectionResetError, BrokenPipeError):
                return data, True
        return None, None
    finally:
        s.close()


def test_hang_up_in_the_middle_of_a_bulk(ctx):
    srv = ctx.srv
    c = ctx.conn()
    holder = open_session(c)
    waiter = open_session(c, 60000)
    expect_int(c.call("LOCK", "hu-lock", holder))
    rev = revision(c)
    partial = b"*3\r\n$3\r\nPUT\r\n$4\r\nhu-k\r\n$100\r\nabc"
    # Bulk header then gone; also right after the header and inside the CRLF.
    _hang_up(srv, partial)
    _hang_up(srv, b"*3\r\n$3\r\nPUT\r\n$4\r\nhu-k\r\n$100\r\n")
    _hang_up(srv, b"*3\r\n$3\r\nPUT\r\n$4\r\nhu-k\r\n$1\r\nx\r")
    _hang_up(srv, b"*2\r\n$3\r\nGET\r\n$1000000\r\n" + b"z" * 300000)
    eq(c.call("PING"), "PONG", "server answers after clients hung up mid-bulk")
    eq(c.call("GET", "hu-k"), None, "a PUT cut off mid-bulk must not apply")
    eq(revision(c), rev, "revision after incomplete commands")
    # Hang up with a write and a blocked LOCK WAIT still pending in front of the cut bulk:
    # their replies find the connection gone.
    _hang_up(srv, encode_command("PUT", "hu-done", "1") +
             encode_command("LOCK", "hu-lock", waiter, "WAIT", 400) + partial)
    # Half-close mid-bulk: the complete command before it is answered, then the server
    # closes its side.
    data, closed = _hang_up(srv, encode_command("PING", "before") + partial, half_close=True)
    assert data.startswith(b"$6\r\nbefore\r\n"), "PING before a half-close: %r" % data[:100]
    assert closed, "server kept a half-closed connection open 3 s after EOF mid-bulk"
    time.sleep(0.6)  # the WAIT 400 of the vanished connection elapses
    assert srv.running(), "fencelockd died after clients hung up mid-bulk"
    eq(c.call("PING"), "PONG", "PING after the hang-ups")
    info = as_map_or_none(c.call("LOCK.INFO", "hu-lock"))
    eq(list(info["waiters"] or []), [], "waiters after the vanished connection's WAIT elapsed")
    eq(info["holder"], holder, "holder of hu-lock")
    expect_int(c.call("PUT", "hu-k", "ok"), "PUT after the hang-ups")
    eq(c.call("GET", "hu-k"), b"ok")


def test_error_text_shows_every_byte_of_a_bad_command_name(ctx):
    """A NUL (or CR, LF) in a command name or option is shown escaped, not cut at the NUL."""
    c = ctx.conn()
    r = c.call(b"PI\x00NG")
    expect_err(r, "ERR")
    eq(r.text, "ERR unknown command 'PI\\x00NG'", "unknown command text")
    r = c.call(b"FOO\r\nBAR", "x")
    eq(r.text, "ERR unknown command 'FOO\\x0d\\x0aBAR'", "CR LF shown escaped")
    r = c.call(b"GE\x00T")
    eq(r.text, "ERR unknown command 'GE\\x00T'", "unknown command text")
    r = c.call("PUT", "k", "v", b"LE\x00ASE", 1)
    eq(r.text, "ERR unknown option 'LE\\x00ASE'", "unknown option text")
    eq(c.call("PING"), "PONG", "the connection stays usable")


def test_member_addresses_with_control_bytes_or_no_port_are_refused(ctx):
    """CLUSTER.ANNOUNCE and CLUSTER.ADD parse addresses with the one host:port grammar
    (src/common/addr.c): a client address with CRLF or a space, or without a valid port, never
    reaches the member table (followers would redirect clients to it)."""
    c = ctx.conn()
    raft = "127.0.0.1:%d" % ctx.srv.raft_port
    me = str(ctx.srv.node_id)
    _rejected(c, [("CLUSTER.ANNOUNCE", me, "1.2.3.4:1\r\nPUT x y", raft),
                  ("CLUSTER.ANNOUNCE", me, "bad host:6379", raft),
                  ("CLUSTER.ANNOUNCE", me, "host:0", raft),
                  ("CLUSTER.ANNOUNCE", me, "host", raft),
                  ("CLUSTER.ANNOUNCE", me, "h" * 130 + ":1", raft),
                  ("CLUSTER.ADD", "7", "10.0.0.1:70000"),
                  ("CLUSTER.ADD", "7", "ho st:7000"),
                  ("CLUSTER.ADD", "7", "::1:7000"),
                  ("CLUSTER.ADD", "7", "h" * 130 + ":7000")])
    members = c.call("CLUSTER.MEMBERS")
    assert b"PUT" not in repr(members).encode() and b"bad host" not in repr(members).encode(), \
        members
