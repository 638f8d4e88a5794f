# SPDX-License-Identifier: Apache-2.0
"""What a client without a password can make a node spend ("before AUTH";
docs/security.md "before AUTH", docs/server.md "Limits").

Every test creates its situation and judges a property (counts, replies, what was closed),
never a duration: waits are generous bounds. Flood sizes are fixed (at most 200 connections x 3
AUTHs). Source addresses other than 127.0.0.1 are bound explicitly: Linux routes all of
127.0.0.0/8 to lo, so 127.x.y.z names a different client (and a different /24)."""

import os
import re
import select
import socket
import subprocess
import threading
import time

from helpers import eq, expect_err, expect_int, expect_ok, wait_until
from resp import Conn, RespError, encode_command
from test_auth import _hash
from test_http import metric
from test_tls import tls_server

MiB = 1 << 20


class SrcConn(Conn):
    """A Conn whose socket is bound to source address `src` (127.x.y.z)."""

    def __init__(self, port, src, timeout=10.0):  # noqa: D107 - a Conn, bound
        self.host, self.port = "127.0.0.1", port
        self.timeout = timeout
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                             source_address=(src, 0))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.closed = False
        self.eof = False


def _acl(ctx, *flags, extra=""):
    """A node with --acl-file: admin/adminpw (all), default/defaultpw (lock), ro/ropw (read)."""
    path = ctx.tmp("acl")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write("user admin %s perm=all\n" % _hash(ctx, "adminpw"))
            f.write("user default %s perm=lock\n" % _hash(ctx, "defaultpw"))
            f.write("user ro %s perm=read\n" % _hash(ctx, "ropw"))
            f.write(extra)
        os.chmod(path, 0o600)  # a secret file: group- or world-readable is refused
    s = ctx.server("--acl-file", path, *flags, start=False)
    s.auth = ("admin", "adminpw")
    s.start()
    return s


def _authed(ctx, s):
    c = ctx.conn(s)
    expect_ok(c.call("AUTH", "admin", "adminpw"), "AUTH admin")
    return c


def _metric_or_none(s, name):
    try:
        return metric(s, name)
    except AssertionError:
        return None


def _closed(c, timeout=30.0):
    """The server closed c (within a generous bound); returns what it sent first."""
    data, closed = c.read_until_eof(timeout=timeout)
    assert closed, "connection still open (received %r)" % data[:200]
    return data


# ---- 1. the AUTH flood: a pool of its own, a queue cap, back-off before the hash ----

def _flood(port, n_conns, attempts, results):
    """n_conns connections, each from its own /24 (127.1.i.1), each pipelining `attempts`
    wrong AUTHs for the existing user `default`, each password different (identical AUTHs would
    share one check); every reply's first word into results."""
    conns = []
    try:
        for i in range(n_conns):
            c = SrcConn(port, "127.1.%d.1" % i, timeout=60.0)
            conns.append(c)
        for i, c in enumerate(conns):
            c.send_raw(b"".join(encode_command("AUTH", "default", "wrong-%d-%d" % (i, k))
                                for k in range(attempts)))
        for c in conns:
            for _ in range(attempts):
                try:
                    r = c.read_reply(timeout=180.0)
                except Exception as e:  # noqa: BLE001 - recorded, judged by the test
                    results.append("closed: %s" % e)
                    break
                results.append(r.code if isinstance(r, RespError) else repr(r))
    finally:
        for c in conns:
            c.close()


def test_auth_flood_is_bounded_and_an_authenticated_client_keeps_writing(ctx):
    """200 connections x 3 wrong AUTHs against one Argon2id thread with 4 places: the queue
    never holds more than 4, the excess is answered -TRYAGAIN at once (no hash), every flood
    AUTH is answered, and meanwhile an authenticated client's PUTs (and the snapshots they
    cause, written on libuv's pool) all succeed."""
    s = _acl(ctx, "--auth-threads", "1", "--auth-queue", "4", "--auth-fail-rate", "1000000",
             "--max-unauth-clients", "1000", "--max-unauth-per-addr", "1000",
             "--snapshot-threshold", "64", "--snapshot-trailing", "16")
    w = _authed(ctx, s)
    hashed0 = metric(s, "fencelock_auth_verifications_total")  # the admin's AUTH
    results = []
    t = threading.Thread(target=_flood, args=(s.port, 200, 3, results), daemon=True)
    t.start()
    puts, queued_seen = 0, 0
    while t.is_alive() and puts < 3000:
        expect_int(w.call("PUT", "k%d" % (puts % 50), "v%d" % puts, timeout=60.0),
                   "PUT %d during the flood" % puts)
        puts += 1
        if puts % 20 == 0:
            queued_seen = max(queued_seen, metric(s, "fencelock_auth_verify_queued"))
    t.join(240)
    assert not t.is_alive(), "the flood did not finish"
    assert puts > 0, "no PUT ran during the flood"
    eq(len(results), 600, "flood replies (%r)" % sorted(set(results)))
    bad = sorted(set(r for r in results if r not in ("WRONGPASS", "TRYAGAIN")))
    assert not bad, "flood replies other than WRONGPASS / TRYAGAIN: %r" % bad
    rejected = metric(s, "fencelock_auth_verify_rejected_total")
    failures = metric(s, "fencelock_auth_failures_total")
    eq(rejected, results.count("TRYAGAIN"), "-TRYAGAIN counted")
    eq(failures, results.count("WRONGPASS"), "-WRONGPASS counted")
    assert rejected > 0, "the queue cap never refused an AUTH"
    assert queued_seen <= 4, "queue seen at %d, over --auth-queue 4" % queued_seen
    assert metric(s, "fencelock_auth_verify_queued_max") <= 4, "queue went over --auth-queue"
    assert metric(s, "fencelock_auth_verifications_total") - hashed0 <= failures
    expect_int(w.call("PUT", "after", "flood"), "PUT after the flood")


def test_failures_from_one_network_share_a_backoff_and_skip_the_hash(ctx):
    """127.0.0.2 fails 6 times in a row (its 6th answer waits 3.2 s); meanwhile one wrong AUTH
    from 127.0.0.3, the same /24, counts as the 7th failure of that network and is answered
    without an Argon2id check."""
    s = _acl(ctx)
    hashed0 = _metric_or_none(s, "fencelock_auth_verifications_total")  # the readiness AUTH
    a = SrcConn(s.port, "127.0.0.2", timeout=60.0)
    a.send_raw(b"".join(encode_command("AUTH", "default", "bad%d" % k) for k in range(6)))
    wait_until(lambda: metric(s, "fencelock_auth_failures_total") >= 6, timeout=60.0,
               interval=0.02, what="6 failures from 127.0.0.2")
    b = SrcConn(s.port, "127.0.0.3", timeout=60.0)
    expect_err(b.call("AUTH", "default", "other", timeout=60.0), "WRONGPASS", "127.0.0.3")
    line = [ln for ln in s.log_text().splitlines() if "from 127.0.0.3" in ln]
    assert line, "no failure line for 127.0.0.3"
    assert re.search(r"\(7 in a row", line[-1]), "not counted with its /24: %r" % line[-1]
    assert hashed0 is not None, "no fencelock_auth_verifications_total"
    eq(metric(s, "fencelock_auth_verifications_total") - hashed0, 6, "Argon2id checks")
    eq(metric(s, "fencelock_auth_backoff_total"), 1, "AUTHs failed without a hash")
    for k in range(6):
        expect_err(a.read_reply(timeout=60.0), "WRONGPASS", "127.0.0.2 #%d" % k)
    # a client that waits for its answer is never in back-off: the right password works
    expect_ok(b.call("AUTH", "default", "defaultpw", timeout=60.0), "AUTH after the answer")


def test_past_the_global_fail_rate_an_auth_gets_no_hash(ctx):
    """--auth-fail-rate 5: once 10 AUTHs failed this second (unknown users, each from its own
    /24, so no address is in back-off), a wrong AUTH of an existing user from yet another /24
    fails without an Argon2id check. The rate is per second: should this machine stall across
    the second's end between the two steps, the round is tried again (at most 5 rounds)."""
    s = _acl(ctx, "--auth-fail-rate", "5")
    for rnd in range(5):
        hashed0 = metric(s, "fencelock_auth_verifications_total")
        backoff0 = metric(s, "fencelock_auth_backoff_total")
        fails0 = metric(s, "fencelock_auth_failures_total")
        burst = [SrcConn(s.port, "127.3.%d.1" % (rnd * 20 + i)) for i in range(10)]
        for c in burst:
            c.send("AUTH", "nosuchuser", "x")
        wait_until(lambda: metric(s, "fencelock_auth_failures_total") >= fails0 + 10,
                   timeout=30.0, what="10 failures")
        late = SrcConn(s.port, "127.4.%d.1" % rnd)
        expect_err(late.call("AUTH", "default", "wrong", timeout=60.0), "WRONGPASS")
        for c in burst + [late]:
            c.close()
        if metric(s, "fencelock_auth_backoff_total") == backoff0 + 1:
            eq(metric(s, "fencelock_auth_verifications_total"), hashed0, "no hash")
            return
    raise AssertionError("the AUTH after 10 failures in a second was hashed in every round")


def test_a_pool_connecting_at_once_costs_one_hash(ctx):
    """40 connections AUTH as the same user with a password not yet cached, at once, against
    --auth-queue 4: all succeed (none -TRYAGAIN), with one Argon2id check; the others wait for
    its result or find it cached."""
    s = _acl(ctx, "--auth-threads", "1", "--auth-queue", "4")
    hashed0 = metric(s, "fencelock_auth_verifications_total")
    hits0 = metric(s, "fencelock_auth_cache_hits_total")
    pool = [ctx.conn(s) for _ in range(40)]
    for c in pool:
        c.send("AUTH", "ro", "ropw")
    for c in pool:
        expect_ok(c.read_reply(timeout=60.0), "AUTH ro of a pool")
    eq(metric(s, "fencelock_auth_verifications_total") - hashed0, 1, "Argon2id checks")
    eq(metric(s, "fencelock_auth_verify_shared_total")
       + metric(s, "fencelock_auth_cache_hits_total") - hits0, 39, "shared or cached")


def test_unauthenticated_connections_are_capped_per_address_and_in_total(ctx):
    s = _acl(ctx, "--max-unauth-per-addr", "3", "--max-unauth-clients", "5")
    five = [SrcConn(s.port, "127.0.0.5") for _ in range(3)]
    for c in five:
        eq(c.call("PING"), "PONG", "unauthenticated PING")
    over = SrcConn(s.port, "127.0.0.5")
    assert b"max number of unauthenticated clients" in _closed(over), "4th from 127.0.0.5"
    six = [SrcConn(s.port, "127.0.0.6") for _ in range(2)]
    for c in six:
        eq(c.call("PING"), "PONG", "from 127.0.0.6")
    over = SrcConn(s.port, "127.0.0.7")
    assert b"max number of unauthenticated clients" in _closed(over), "6th in all"
    eq(metric(s, "fencelock_unauth_rejected_total"), 2, "refused")
    eq(metric(s, "fencelock_unauth_connections"), 5, "unauthenticated connections")
    # one of them authenticates: it no longer counts, a new client gets its place
    expect_ok(five[0].call("AUTH", "admin", "adminpw"), "AUTH")
    wait_until(lambda: metric(s, "fencelock_unauth_connections") == 4, timeout=10.0,
               what="the authenticated connection released")
    late = SrcConn(s.port, "127.0.0.7")
    eq(late.call("PING"), "PONG", "a place was freed")
    for c in five + six + [late]:
        c.close()


def test_auth_deadline_closes_an_unauthenticated_connection(ctx):
    s = _acl(ctx, "--auth-timeout", "300")
    idle = ctx.conn(s)
    eq(idle.call("PING"), "PONG")
    good = _authed(ctx, s)
    _closed(idle)
    assert metric(s, "fencelock_auth_timeout_closes_total") >= 1
    eq(good.call("PING"), "PONG", "the authenticated connection stays")


# ---- 2. no echo before AUTH, output caps ----

def test_ping_with_a_payload_before_auth_is_refused(ctx):
    s = _acl(ctx)
    c = ctx.conn(s)
    eq(c.call("PING"), "PONG", "plain PING before AUTH")
    r = c.call("PING", "x" * 100000)
    assert isinstance(r, RespError) and r.code == "NOAUTH", \
        "PING payload before AUTH answered %r" % (r[:40] if isinstance(r, bytes) else r)
    expect_ok(c.call("AUTH", "ro", "ropw"))
    eq(c.call("PING", "hello"), b"hello", "PING payload after AUTH")


def test_an_unauthenticated_client_holds_at_most_its_output_allowance(ctx):
    """Before AUTH, a client that sends 300,000 commands and reads nothing gets 300,000
    -NOAUTH replies (10 MB) it does not read: the server stops reading it once it holds
    half of --max-output-preauth (4096) in unsent bytes, instead of --max-output-soft (8 MiB),
    and keeps it open."""
    s = _acl(ctx, "--max-output-preauth", "4096")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # little room in the kernel
    sock.connect(("127.0.0.1", s.port))
    sock.setblocking(False)
    data = b"GET x\r\n" * 300000
    sent, deadline = 0, time.monotonic() + 60.0
    while sent < len(data) and time.monotonic() < deadline:
        try:
            sent += sock.send(data[sent:sent + 65536])
        except BlockingIOError:
            if metric(s, "fencelock_output_buffer_bytes") >= 2048:
                break  # the server holds its allowance and stopped reading: sends block
            time.sleep(0.05)
    held = wait_until(lambda: (lambda v: v if v >= 2048 else None)(
        metric(s, "fencelock_output_buffer_bytes")), timeout=60.0, interval=0.1,
        what="the pause point (half the allowance) reached")
    assert held <= 2048 + 40, "%d unsent bytes held before AUTH" % held
    time.sleep(0.2)  # not a wait for anything: a second look, it must not have grown
    assert metric(s, "fencelock_output_buffer_bytes") <= 2048 + 40
    eq(metric(s, "fencelock_output_limit_closes_total"), 0, "closed instead of paused")
    sock.close()


def test_output_total_cap_closes_the_largest_holder(ctx):
    """A holds >= 4 MiB of unread 100 KB replies (paused at --max-output-soft); B asks for one
    1 MB reply, taking all connections past --max-output-total: A, the largest, is closed and
    B gets its reply."""
    s = ctx.server("--max-output-soft", 4 * MiB, "--max-output-total", 4 * MiB + 512 * 1024)
    w = ctx.conn()
    expect_int(w.call("PUT", "small", "s" * 100000))
    expect_int(w.call("PUT", "big", "b" * 1000000))
    a = ctx.conn()
    expect_ok(a.call("READONLY"))
    a.send_raw(b"".join(encode_command("GET", "small") for _ in range(200)))
    wait_until(lambda: metric(s, "fencelock_output_buffer_bytes") >= 4 * MiB, timeout=60.0,
               what="A's unread replies at --max-output-soft")
    b = ctx.conn()
    expect_ok(b.call("READONLY"))
    eq(b.call("GET", "big", timeout=60.0), b"b" * 1000000, "B's reply")
    _closed(a)
    eq(metric(s, "fencelock_output_memory_closes_total"), 1, "closed over the total")
    assert "--max-output-total" in s.log_text()
    eq(b.call("PING"), "PONG", "B stays")


# ---- 3. TLS handshakes in progress ----

def _closed_at_once(sock, bound=30.0):
    r, _, _ = select.select([sock], [], [], bound)
    if not r:
        return False
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def test_tls_handshakes_in_progress_are_capped(ctx):
    s, _ = tls_server(ctx, "--tls-max-handshakes", "4", "--tls-max-handshakes-per-addr", "3",
                      "--tls-handshake-timeout", "120000")
    silent = [socket.create_connection(("127.0.0.1", s.port), source_address=("127.0.0.8", 0))
              for _ in range(3)]
    wait_until(lambda: metric(s, "fencelock_tls_handshakes_in_progress") == 3, timeout=30.0,
               what="3 handshakes begun")
    extra = socket.create_connection(("127.0.0.1", s.port), source_address=("127.0.0.8", 0))
    assert _closed_at_once(extra), "a 4th handshake from 127.0.0.8 was not refused"
    silent.append(socket.create_connection(("127.0.0.1", s.port),
                                           source_address=("127.0.0.9", 0)))
    wait_until(lambda: metric(s, "fencelock_tls_handshakes_in_progress") == 4, timeout=30.0,
               what="4 handshakes begun")
    extra2 = socket.create_connection(("127.0.0.1", s.port), source_address=("127.0.0.10", 0))
    assert _closed_at_once(extra2), "a 5th handshake in all was not refused"
    for x in [extra, extra2]:
        x.close()
    eq(metric(s, "fencelock_tls_handshake_rejected_total"), 2, "refused handshakes")
    for x in silent:
        x.close()
    wait_until(lambda: metric(s, "fencelock_tls_handshakes_in_progress") == 0, timeout=30.0,
               what="the silent clients gone")
    c = ctx.conn(s)
    eq(c.call("PING"), "PONG", "a TLS client after the flood")


# ---- 5. the AUTH-failure / NOPERM lines are rate-limited ----

def test_auth_failure_and_noperm_lines_are_rate_limited_and_counted(ctx):
    audit = ctx.tmp("audit.log")
    s = _acl(ctx, "--security-log-rate", "3", "--audit-log", audit)
    conns = [SrcConn(s.port, "127.2.%d.1" % i) for i in range(20)]
    for c in conns:  # an unknown user: a failure without a hash, all within a moment
        c.send("AUTH", "nosuchuser", "x")
    for c in conns:
        expect_err(c.read_reply(timeout=60.0), "WRONGPASS")
        c.close()
    eq(metric(s, "fencelock_auth_failures_total"), 20, "failures")
    logged = len([ln for ln in s.log_text().splitlines() if "AUTH failed" in ln])
    dropped = metric(s, "fencelock_security_log_dropped_total")
    with open(audit) as f:
        audited = sum(1 for ln in f if '"auth.failure"' in ln)
    eq(logged, audited, "log and audit lines go together")
    eq(logged + dropped, 20, "every failure logged or counted as dropped")
    assert logged <= 6, "%d lines for 20 failures at --security-log-rate 3" % logged
    wait_until(lambda: "log and audit lines dropped" in s.log_text(), timeout=30.0,
               what="the dropped-lines report")
    # NOPERM: the same limiter
    ro = ctx.conn(s)
    expect_ok(ro.call("AUTH", "ro", "ropw"))
    for r in ro.pipeline([("PUT", "k", "v")] * 20):
        expect_err(r, "NOPERM")
    dropped2 = metric(s, "fencelock_security_log_dropped_total")
    with open(audit) as f:
        denied = sum(1 for ln in f if '"permission.denied"' in ln)
    eq(denied + dropped2 - dropped, 20, "every NOPERM audited or counted as dropped")
    assert denied <= 6, "%d NOPERM lines at --security-log-rate 3" % denied


# ---- 6. TCP keepalive ----

def _timers(port):
    out = subprocess.run(["ss", "-tnoH", "state", "established", "( sport = :%d )" % port],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _keepalive_secs(port):
    out = wait_until(lambda: "keepalive" in _timers(port) and _timers(port), timeout=10.0,
                     what="a keepalive timer on the server's socket (ss -o)")
    m = re.search(r"timer:\(keepalive,(?:(\d+)min)?(?:([\d.]+)sec)?", out)
    assert m, out
    return int(m.group(1) or 0) * 60 + float(m.group(2) or 0)


def test_accepted_client_connections_have_tcp_keepalive(ctx):
    """The accepted socket has SO_KEEPALIVE (the kernel runs its keepalive timer: ss -o), by
    default after 300 s, as --tcp-keepalive says; 0 turns it off."""
    c = ctx.conn()
    eq(c.call("PING"), "PONG")
    secs = _keepalive_secs(ctx.srv.port)
    assert 120 < secs <= 300, "default keepalive timer %s s" % secs
    s = ctx.server("--tcp-keepalive", "120")
    c = ctx.conn(s)
    eq(c.call("PING"), "PONG")
    secs = _keepalive_secs(s.port)
    assert 0 < secs <= 120, "keepalive timer %s s, not --tcp-keepalive 120" % secs
    off = ctx.server("--tcp-keepalive", "0")
    c2 = ctx.conn(off)
    eq(c2.call("PING"), "PONG")
    assert "keepalive" not in _timers(off.port), "--tcp-keepalive 0 still set it"
