# SPDX-License-Identifier: Apache-2.0
"""The PostgreSQL guard (contrib/postgresql/fencelock.sql) against a real PostgreSQL server and a
real fencelockd: a stale holder's write is refused, concurrent sellers never oversell, signed
tokens are checked with the fixed encoding (Python's hmac here, FENCE.SIGN in the server).

Each test starts its own PostgreSQL (pg.py: initdb in a temp dir, Unix socket only, stopped by
PID in the test's cleanup).
"""

import hashlib
import hmac
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pg as pgmod
from helpers import eq, expect_int, ok, open_session
from resp import Conn, RespError

HERE = os.path.dirname(os.path.abspath(__file__))

SHOP = """
CREATE TABLE stock (item text PRIMARY KEY, qty int NOT NULL);
CREATE TABLE sales (id serial PRIMARY KEY, item text NOT NULL, buyer text NOT NULL,
                    token bigint NOT NULL);
INSERT INTO stock VALUES ('widget', %d);
"""

# The same read and sale as one statement each (for PsqlSession): fence() first, inside the
# function's transaction.
SHOP_FUNCS = """
CREATE FUNCTION fenced_read(lock text, tok bigint) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    PERFORM fencelock.fence(lock, tok);
    RETURN (SELECT qty FROM stock WHERE item = 'widget');
END $$;
CREATE FUNCTION fenced_sell(lock text, tok bigint, qty_read int, who text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM fencelock.fence(lock, tok);
    UPDATE stock SET qty = qty_read - 1 WHERE item = 'widget';
    INSERT INTO sales (item, buyer, token) VALUES ('widget', who, tok);
END $$;
"""


def sign(key, name, token):
    """The fixed encoding of signed tokens (see contrib/postgresql/README.md)."""
    nb = name.encode()
    msg = b"fencelock-token-v1:%d:%s:%d" % (len(nb), nb, token)
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


def fenced_read(pg, name, token):
    return int(pg.value("BEGIN; SELECT fencelock.fence('%s', %d) \\g /dev/null\n"
                        "SELECT qty FROM stock WHERE item = 'widget'; COMMIT;" % (name, token)))


def fenced_sell(pg, name, token, qty_read, buyer):
    """Sell one item based on an earlier read; None if sold, else the SqlError."""
    r = pg.sql("BEGIN;\nSELECT fencelock.fence('%s', %d) \\g /dev/null\n"
               "UPDATE stock SET qty = %d WHERE item = 'widget';\n"
               "INSERT INTO sales (item, buyer, token) VALUES ('widget', '%s', %d);\nCOMMIT;\n"
               % (name, token, qty_read - 1, buyer, token), check=False)
    return r if isinstance(r, pgmod.SqlError) else None


class Lines:
    """A subprocess's stdout lines, read by a thread, taken with a timeout."""

    def __init__(self, stream):
        self.q = queue.Queue()
        threading.Thread(target=self._run, args=(stream,), daemon=True).start()

    def _run(self, stream):
        for line in stream:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def next(self, timeout=20.0):
        line = self.q.get(timeout=timeout)
        if line is None:
            raise AssertionError("client A exited early")
        return line


def test_pg_inventory_stale_holder_is_refused(ctx):
    """The article's scenario: A holds the lock and reads stock 1, freezes past its TTL; B gets
    the lock and sells the last item; A wakes up and sells too: the guard refuses A's
    transaction, so the item is sold once."""
    pg = pgmod.start(ctx)
    pg.sql(SHOP % 1)
    port = ctx.srv.port
    a_err = open(ctx.tmp("client-a.err"), "w")
    ctx.defer(a_err.close)
    a = subprocess.Popen([sys.executable, os.path.join(HERE, "pg_seller.py"), str(port), "1000",
                          "inventory", "widget", "A", "--"] + pg.psql_argv(),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         stderr=a_err)

    def reap():
        if a.poll() is None:
            a.send_signal(signal.SIGCONT)
            a.kill()
        a.wait(10)
    ctx.defer(reap)
    out = Lines(a.stdout)
    tok_a = int(out.next().split()[1])
    eq(out.next(), "read 1", "A's read")

    os.kill(a.pid, signal.SIGSTOP)  # A's keepalives stop: its session expires after 1 s
    c = ctx.conn()
    sid_b = open_session(c, 30000)
    tok_b = expect_int(c.call("LOCK", "inventory", sid_b, "WAIT", 20000), "B's LOCK")
    assert tok_b > tok_a, (tok_a, tok_b)
    eq(fenced_read(pg, "inventory", tok_b), 1, "B's read")
    eq(fenced_sell(pg, "inventory", tok_b, 1, "B"), None, "B's sale")

    os.kill(a.pid, signal.SIGCONT)
    a.stdin.write("go\n")
    a.stdin.flush()
    eq(out.next(), "refused FL001", "A's sale after its pause")
    eq(a.wait(20), 0, "A's exit status")

    eq(pg.sql("SELECT qty FROM stock; SELECT count(*), min(buyer) FROM sales;"), ["0", "1|B"],
       "stock and sales")
    eq(pg.value("SELECT token FROM fencelock.tokens WHERE resource = 'inventory'"), str(tok_b))


class _Keepalive:
    """Keeps one session alive from its own connection, except while frozen (a GC pause)."""

    def __init__(self, port):
        self.c = Conn(port)
        self.sid = None
        self.frozen = threading.Event()
        self.stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop.wait(0.2):
            sid = self.sid
            if sid is not None and not self.frozen.is_set():
                self.c.call("SESSION.KEEPALIVE", sid)  # -NOSESSION once expired: fine

    def close(self):
        self.stop.set()
        self.t.join(5)
        self.c.close()


def _worker(port, pg, name, wid, deadline, stats, errors):
    """Sell until the stock is 0. Now and then freeze (no keepalives) between the read and the
    sale until the lock has passed on: the stale holder the guard must stop."""
    sales_tried = 0
    c = Conn(port)
    ka = _Keepalive(port)
    db = pg.session()
    try:
        while time.monotonic() < deadline:
            sid = expect_int(c.call("SESSION.OPEN", 1500), "SESSION.OPEN")
            ka.frozen.clear()
            ka.sid = sid
            tok = c.call("LOCK", name, sid, "WAIT", 5000)
            if not isinstance(tok, int):  # timed out, or (busy machine) the session ended
                c.call("SESSION.CLOSE", sid)
                continue
            rows, state = db.query("SELECT fenced_read('%s', %d)" % (name, tok))
            if state == "FL001":  # a newer holder fenced already: we are stale
                stats["refused"] += 1
                c.call("SESSION.CLOSE", sid)
                continue
            if state != "00000":
                raise AssertionError("read failed: SQLSTATE %s" % state)
            qty = int(rows[0])
            if qty == 0:
                c.call("SESSION.CLOSE", sid)
                return
            sales_tried += 1
            if (sales_tried + wid) % 4 == 0:
                stats["pauses"] += 1
                ka.frozen.set()
                until = time.monotonic() + 5.0
                while time.monotonic() < until:
                    info = c.call("LOCK.INFO", name)
                    if isinstance(info, list) and dict(zip(info[::2], info[1::2])).get(
                            b"token", 0) > tok:
                        break
                    time.sleep(0.05)
            _, state = db.query("SELECT fenced_sell('%s', %d, %d, 'w%d')" % (name, tok, qty, wid))
            if state == "00000":
                stats["sold"] += 1
            elif state == "FL001":
                stats["refused"] += 1
            else:
                raise AssertionError("sale failed: SQLSTATE %s" % state)
            c.call("SESSION.CLOSE", sid)  # -NOSESSION after an expiry: fine
    except Exception as e:  # noqa: BLE001
        errors.append("worker %d: %r" % (wid, e))
    finally:
        db.close()
        ka.close()
        c.close()


def test_pg_concurrent_sellers_never_oversell(ctx):
    """4 sellers, 40 items, lock hand-offs by unlock and by expiry (every 4th sale a seller
    freezes between read and sale until someone else holds the lock): every item is sold at
    most once. Bounded at 30 s of selling; the check holds for whatever was sold by then."""
    items, nworkers = 40, 4
    pg = pgmod.start(ctx)
    pg.sql(SHOP % items + SHOP_FUNCS)
    port = ctx.srv.port
    t0 = time.monotonic()
    deadline = t0 + 30.0
    stats = {"sold": 0, "refused": 0, "pauses": 0}
    errors = []
    ts = [threading.Thread(target=_worker, args=(port, pg, "shop", i, deadline, stats, errors))
          for i in range(nworkers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(45)
    assert not errors, errors
    assert not any(t.is_alive() for t in ts), "a worker is still running"
    print("# sold %d, refused %d, pauses %d in %.1f s" % (stats["sold"], stats["refused"],
                                                        stats["pauses"], time.monotonic() - t0))
    qty, nsales = (int(v) for v in pg.sql("SELECT qty FROM stock; SELECT count(*) FROM sales;"))
    eq(qty + nsales, items, "stock left + sales (more sales than items sold: oversold)")
    assert qty >= 0, qty
    eq(nsales, stats["sold"], "sales in the table vs. sales the workers saw commit")
    assert nsales > 0 and stats["pauses"] > 0, stats
    # Every sale was made by the newest holder at that time: tokens grow with the sales.
    eq(pg.value("SELECT count(*) FROM (SELECT token < lag(token) OVER (ORDER BY id) AS back "
                "FROM sales) s WHERE back"), "0", "sales with a token older than the previous")


test_pg_concurrent_sellers_never_oversell.timeout = 90


def test_pg_lower_token_is_refused_with_sqlstate(ctx):
    pg = pgmod.start(ctx)
    eq(pg.value("SELECT fencelock.fence('r', 10)"), "10")
    eq(pg.value("SELECT fencelock.fence('r', 10)"), "10", "the same token again")
    e = pg.sql("SELECT fencelock.fence('r', 9)", check=False)
    assert isinstance(e, pgmod.SqlError), e
    eq(e.sqlstate, "FL001", "SQLSTATE of a stale token")
    assert "stale token 9 for 'r': token 10 was already seen" in e.stderr, e.stderr
    # Another resource is independent; a rolled-back transaction records nothing.
    eq(pg.value("SELECT fencelock.fence('other', 3)"), "3")
    pg.sql("BEGIN; SELECT fencelock.fence('r', 50); ROLLBACK;")
    eq(pg.value("SELECT fencelock.fence('r', 11)"), "11", "after a rolled-back higher token")
    eq(pg.sql("SELECT resource || '=' || token FROM fencelock.tokens ORDER BY 1"),
       ["other=3", "r=11"])
    for bad in ("NULL, 5", "'r', NULL", "'', 5", "'r', 0", "'r', -4"):
        e = pg.sql("SELECT fencelock.fence(%s)" % bad, check=False)
        eq(getattr(e, "sqlstate", e), "FL003", "fence(%s)" % bad)
    # A refused write rolls back the whole transaction, the protected write included.
    pg.sql("CREATE TABLE t (v int); INSERT INTO t VALUES (1);")
    e = pg.sql("BEGIN; SELECT fencelock.fence('r', 5); UPDATE t SET v = 2; COMMIT;", check=False)
    eq(getattr(e, "sqlstate", e), "FL001")
    eq(pg.value("SELECT v FROM t"), "1")



def test_pg_guard_upgrades_an_older_install_in_place(ctx):
    """Loading the guard over an install made before `fences` (every fence's write, which
    makes REPEATABLE READ callers with an older snapshot fail with 40001) adds the column and
    keeps the tokens; each fence then counts one."""
    pg = pgmod.start(ctx)
    pg.sql("ALTER TABLE fencelock.tokens DROP COLUMN fences;"
           "INSERT INTO fencelock.tokens (resource, token) VALUES ('r', 7);")
    pg.load_guard()
    eq(pg.value("SELECT token || '/' || fences FROM fencelock.tokens WHERE resource = 'r'"),
       "7/0", "the kept token and the new column")
    eq(getattr(pg.sql("SELECT fencelock.fence('r', 6)", check=False), "sqlstate", None),
       "FL001", "a token below the kept one")
    eq(pg.value("SELECT fencelock.fence('r', 7)"), "7")
    eq(pg.value("SELECT fencelock.fence('r', 8)"), "8")
    eq(pg.value("SELECT token || '/' || fences FROM fencelock.tokens WHERE resource = 'r'"),
       "8/2", "two fences counted (the refused one rolled back)")
    # a REPEATABLE READ transaction whose snapshot predates a fenced commit gets 40001
    slow = subprocess.Popen(pg.psql_argv() + ["-f", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    slow.stdin.write("BEGIN ISOLATION LEVEL REPEATABLE READ;\nSELECT count(*) FROM pg_class;\n")
    slow.stdin.flush()  # the snapshot is taken; now another fenced transaction commits
    eq(slow.stdout.readline().strip() != "", True, "the snapshot's first statement ran")
    eq(pg.value("SELECT fencelock.fence('r', 8)"), "8")
    out, err = slow.communicate("SELECT fencelock.fence('r', 8);\nCOMMIT;\n", timeout=30)
    eq(pgmod.sqlstate_of(err), "40001", "the older snapshot's fence: %s" % err.strip())

def _add_key(pg, key_id, key):
    pg.sql("INSERT INTO fencelock.keys (key_id, secret) VALUES ('%s', '\\x%s')"
           % (key_id, key.hex()))


def test_pg_signed_tokens(ctx):
    """With a key configured fence() needs the signature of exactly (name, token)."""
    pg = pgmod.start(ctx)
    key = b"a 32-byte key for fencelock ok!!"
    c = ctx.conn()
    sid = open_session(c)
    tok = expect_int(c.call("LOCK", "orders", sid), "LOCK")
    eq(pg.value("SELECT fencelock.fence('orders', %d)" % tok), str(tok), "no key: no signature")
    _add_key(pg, "k1", key)
    ok(c.call("UNLOCK", "orders", sid))
    tok = expect_int(c.call("LOCK", "orders", sid), "LOCK again")

    def fence(name, token, sig):
        arg = "NULL" if sig is None else "'%s'" % sig
        r = pg.sql("SELECT fencelock.fence('%s', %d, %s)" % (name, token, arg), check=False)
        return r.sqlstate if isinstance(r, pgmod.SqlError) else r

    eq(fence("orders", tok, None), "FL002", "no signature")
    eq(fence("orders", tok, "zz" * 32), "FL002", "not hex")
    eq(fence("orders", tok, "0" * 64), "FL002", "forged")
    eq(fence("orders", tok, sign(key, "orders", tok)[:-1]), "FL002", "truncated")
    eq(fence("orders", tok, sign(key, "payments", tok)), "FL002", "signed for another lock")
    eq(fence("orders", tok, sign(key, "orders", tok + 1)), "FL002", "signed for another token")
    eq(fence("orders", tok + 1000, sign(key, "orders", tok)), "FL002", "a bigger forged token")
    eq(fence("orders", tok, sign(b"another key of 32 bytes length!!", "orders", tok)), "FL002",
       "signed with another key")
    before = pg.value("SELECT token FROM fencelock.tokens WHERE resource = 'orders'")
    assert int(before) < tok, "a refused signature must not record its token"
    eq(fence("orders", tok, sign(key, "orders", tok)), [str(tok)], "the real signature")
    eq(fence("orders", tok, sign(key, "orders", tok).upper()), [str(tok)], "upper-case hex")
    # The length prefix: a name with a colon and multi-byte characters.
    name = "inv:é"
    eq(fence(name, tok, sign(key, name, tok)), [str(tok)], "a UTF-8 name with ':'")


def test_pg_key_rotation(ctx):
    """Two keys during a rotation: either signs; after the old key is removed, its signatures
    are refused."""
    pg = pgmod.start(ctx)
    old, new = b"old key: 0123456789abcdef", b"new key: fedcba9876543210"
    _add_key(pg, "old", old)

    def fence(token, key):
        r = pg.sql("SELECT fencelock.fence('r', %d, '%s')" % (token, sign(key, "r", token)),
                   check=False)
        return r.sqlstate if isinstance(r, pgmod.SqlError) else r

    eq(fence(1, old), ["1"])
    eq(fence(2, new), "FL002", "new key not configured yet")
    _add_key(pg, "new", new)
    eq(fence(3, old), ["3"], "old key during the rotation")
    eq(fence(4, new), ["4"], "new key during the rotation")
    pg.sql("DELETE FROM fencelock.keys WHERE key_id = 'old'")
    eq(fence(5, old), "FL002", "old key after the rotation")
    eq(fence(6, new), ["6"])
    e = pg.sql("INSERT INTO fencelock.keys VALUES ('short', '\\x00ff')", check=False)
    eq(getattr(e, "sqlstate", e), "23514", "a key shorter than 16 bytes")


def test_pg_keys_are_private_and_fence_needs_a_grant(ctx):
    """An application role cannot read the keys or the token table, and needs EXECUTE on
    fence(); with it, it fences through the SECURITY DEFINER function."""
    pg = pgmod.start(ctx)
    key = b"0123456789abcdef-private"
    _add_key(pg, "k", key)
    pg.sql("CREATE ROLE app LOGIN;")

    def as_app(q):
        r = pg.sql(q, check=False, user="app")
        return r.sqlstate if isinstance(r, pgmod.SqlError) else r

    eq(as_app("SELECT fencelock.fence('r', 7, '%s')" % sign(key, "r", 7)), "42501",
       "fence() without a grant")
    pg.sql("GRANT USAGE ON SCHEMA fencelock TO app; "
           "GRANT EXECUTE ON FUNCTION fencelock.fence(text, bigint, text) TO app;")
    eq(as_app("SELECT fencelock.fence('r', 7, '%s')" % sign(key, "r", 7)), ["7"])
    eq(as_app("SELECT fencelock.fence('r', 6, '%s')" % sign(key, "r", 6)), "FL001")
    eq(as_app("SELECT * FROM fencelock.keys"), "42501", "reading the keys")
    eq(as_app("SELECT * FROM fencelock.tokens"), "42501", "reading the tokens")
    eq(as_app("UPDATE fencelock.tokens SET token = 1"), "42501", "rewinding a token")
    eq(as_app("SELECT fencelock.signature_ok('r', 7, '%s')" % sign(key, "r", 7)), "42501",
       "the key oracle")


# The provisioning snippet of contrib/postgresql/README.md (keep them the same): the key file's
# bytes minus ONE trailing newline, read by psql itself (not on any command line).
LOAD_KEY = r"""
\set key_hex `perl -0777 -ne 's/\n\z//; print unpack("H*", $_)' KEYFILE`
INSERT INTO fencelock.keys (key_id, secret) VALUES ('2026-12', decode(:'key_hex', 'hex'));
"""


def test_pg_key_loaded_from_a_file_as_documented(ctx):
    """The README's way to load fencelockd's key file: exactly one trailing newline goes (a key
    file may end in a newline that is part of the key), binary bytes survive."""
    pg = pgmod.start(ctx)
    key = bytes(range(1, 40)) + b"\xff\x00 key\n"
    path = ctx.tmp("token.key")
    with open(path, "wb") as f:
        f.write(key + b"\n")
    pg.sql(LOAD_KEY.replace("KEYFILE", path))
    eq(pg.value("SELECT encode(secret, 'hex') FROM fencelock.keys"), key.hex())
    eq(pg.value("SELECT fencelock.fence('r', 9, '%s')" % sign(key, "r", 9)), "9")
    e = pg.sql("SELECT fencelock.fence('r', 10, '%s')" % sign(key[:-1], "r", 10), check=False)
    eq(getattr(e, "sqlstate", e), "FL002", "a key with both newlines stripped")


def _server_signs(binary):
    r = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=20)
    return "--token-key" in r.stdout + r.stderr


def test_pg_verifies_fencelockd_signatures(ctx):
    """End to end with fencelockd's own signatures: one key file for `fencelockd --token-key`
    and (through the README's snippet) for PostgreSQL. FENCE.SIGN's signature passes fence();
    the old holder's signed token is refused as stale, its signature does not fit the new
    token; `fencelock lock` hands the signature to its command (FENCELOCK_TOKEN_SIG)."""
    assert _server_signs(ctx.binary), "%s has no --token-key" % ctx.binary
    pg = pgmod.start(ctx)
    path = ctx.tmp("token.key")
    with open(path, "w") as f:
        f.write(os.urandom(32).hex() + "\n")  # as `openssl rand -hex 32 > token.key` makes it
    # a secret (fencelockd refuses group/world-readable key files) that PostgreSQL reads too:
    # its server's user owns it, mode 0600 (root's fencelockd reads it anyway)
    if pg.user is not None:
        os.chown(path, pg.user.pw_uid, pg.user.pw_gid)
    os.chmod(path, 0o600)
    with open(path, "rb") as f:
        key = f.read()[:-1]
    pg.sql(LOAD_KEY.replace("KEYFILE", path))
    srv = ctx.server("--token-key", path)
    c = ctx.conn(srv)
    sid = open_session(c)

    def fence(token, sig):
        r = pg.sql("SELECT fencelock.fence('inv', %d, '%s')" % (token, sig), check=False)
        return r.sqlstate if isinstance(r, pgmod.SqlError) else r

    tok1 = expect_int(c.call("LOCK", "inv", sid), "LOCK")
    sig1 = ok(c.call("FENCE.SIGN", "inv", tok1), "FENCE.SIGN").decode()
    eq(sig1, sign(key, "inv", tok1), "the server's signature vs. the encoding")
    eq(fence(tok1, sig1), [str(tok1)], "the holder's signed token")
    ok(c.call("UNLOCK", "inv", sid))
    tok2 = expect_int(c.call("LOCK", "inv", sid), "LOCK again")
    sig2 = ok(c.call("FENCE.SIGN", "inv", tok2), "FENCE.SIGN").decode()
    assert isinstance(c.call("FENCE.SIGN", "inv", tok1), RespError), "FENCE.SIGN of a past token"
    eq(fence(tok2, sig2), [str(tok2)], "the new holder")
    eq(fence(tok1, sig1), "FL001", "the old holder's signed token")
    eq(fence(tok2 + 1, sig2), "FL002", "the new signature on a bigger token")
    ok(c.call("UNLOCK", "inv", sid))

    cli = os.path.join(os.path.dirname(ctx.binary), "fencelock")
    query = ("SELECT fencelock.fence('inv', $FENCELOCK_TOKEN, '$FENCELOCK_TOKEN_SIG'); "
             "SELECT 'token=$FENCELOCK_TOKEN';")
    script = "%s -c \"%s\"" % (" ".join(pg.psql_argv()), query)
    r = subprocess.run([cli, "--endpoints", "127.0.0.1:%d" % srv.port, "lock", "inv", "--",
                        "sh", "-c", script], capture_output=True, text=True, timeout=30)
    eq(r.returncode, 0, "fencelock lock -- psql: %s" % r.stderr)
    tok3 = int(r.stdout.split("token=")[1].split()[0])
    assert tok3 > tok2, (tok2, tok3)
    eq(pg.value("SELECT token FROM fencelock.tokens WHERE resource = 'inv'"), str(tok3))
