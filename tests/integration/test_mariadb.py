# SPDX-License-Identifier: Apache-2.0
"""The MariaDB guard (contrib/mariadb/fencelock.sql) beyond the fencing suite's scenarios
(tests/fencing, the `mariadb` row): SQLSTATEs and messages, bad arguments, a rolled-back
transaction records nothing, names compared as exact bytes, an application account that only
has EXECUTE on the guard. Each test starts its own MariaDB (tests/fencing/mariadb.py: Debian's
mariadb-server, data in a temp dir, Unix socket only, stopped by PID)."""

import hashlib
import hmac
import os
import subprocess
import sys

from helpers import eq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fencing"))

import mariadb as mdb  # noqa: E402


def start(ctx):
    why = mdb.available()
    if why:
        raise AssertionError(why)
    db = mdb.MariaDB(ctx.workdir)
    ctx.defer(db.stop)
    return db.start()


def state(r):
    return r.sqlstate if isinstance(r, mdb.MariaDBError) else r


def test_mariadb_lower_token_refused_with_sqlstate(ctx):
    db = start(ctx)
    eq(db.value("SELECT fencelock_fence('r', 10, NULL)"), "10")
    eq(db.value("SELECT fencelock_fence('r', 10, NULL)"), "10", "the same token again")
    e = db.sql("SELECT fencelock_fence('r', 9, NULL)", check=False)
    eq(state(e), "FL001", "a lower token")
    assert "fencelock: stale token 9 for 'r': token 10 was already seen" in e.stderr, e.stderr
    eq(db.value("SELECT fencelock_fence('other', 3, NULL)"), "3", "another resource")
    # a rolled-back transaction records nothing
    db.sql("START TRANSACTION; SELECT fencelock_fence('r', 50, NULL); ROLLBACK;")
    eq(db.value("SELECT fencelock_fence('r', 11, NULL)"), "11", "after a rolled-back 50")
    eq(db.sql("SELECT CONCAT(CAST(resource AS CHAR), '=', token) FROM fencelock_tokens "
              "ORDER BY 1"), ["other=3", "r=11"])
    # names are bytes: no collation folds case or trailing spaces together
    eq(db.value("SELECT fencelock_fence('R', 1, NULL)"), "1", "'R' is not 'r'")
    eq(db.value("SELECT fencelock_fence('r ', 1, NULL)"), "1", "'r ' is not 'r'")
    eq(db.value("SELECT fencelock_fence(' ', 1, NULL)"), "1", "a name of one space")
    for bad in ("NULL, 5, NULL", "'r', NULL, NULL", "'', 5, NULL", "'r', 0, NULL",
                "'r', -4, NULL", "REPEAT('x', 1025), 5, NULL"):
        eq(state(db.sql("SELECT fencelock_fence(%s)" % bad, check=False)), "FL003",
           "fencelock_fence(%s)" % bad[:40])
    # the batch client stops at the refusal and its disconnect rolls the transaction back
    db.sql("CREATE TABLE t (v INT); INSERT INTO t VALUES (1);")
    e = db.sql("START TRANSACTION; UPDATE t SET v = 2; SELECT fencelock_fence('r', 5, NULL);"
               " COMMIT;", check=False)
    eq(state(e), "FL001")
    eq(db.value("SELECT v FROM t"), "1", "the write before the refused fence")


def test_mariadb_application_account_needs_only_execute(ctx):
    """An account with EXECUTE on the guard alone fences (SQL SECURITY DEFINER) and cannot
    read the keys; without the grant it cannot call it."""
    db = start(ctx)
    db.sql("INSERT INTO fencelock_keys (key_id, secret) VALUES ('k', '0123456789abcdef-key');"
           "CREATE USER app@localhost;")
    app = db.argv(db=None)
    app[app.index("--user=root")] = "--user=app"

    def as_app(q):
        import subprocess
        r = subprocess.run(app, input=q, capture_output=True, text=True, timeout=60)
        return mdb.MariaDBError(r.stderr).sqlstate if r.returncode else r.stdout.split()

    eq(as_app("SELECT app.fencelock_fence('r', 7, NULL)"), "42000", "no grant")
    db.sql("GRANT EXECUTE ON FUNCTION app.fencelock_fence TO app@localhost;")
    eq(as_app("SELECT app.fencelock_fence('r', 7, NULL)"), "FL002", "keys set: no signature")
    eq(as_app("SELECT app.fencelock_fence('r', 7, '%s')" % ("0" * 64)), "FL002", "a bad one")
    good = hmac.new(b"0123456789abcdef-key", b"fencelock-token-v1:1:r:7", hashlib.sha256)
    eq(as_app("SELECT app.fencelock_fence('r', 7, '%s')" % good.hexdigest()), ["7"],
       "the signature of ('r', 7)")
    eq(as_app("SELECT secret FROM app.fencelock_keys"), "42000", "the keys")
    eq(as_app("UPDATE app.fencelock_tokens SET token = 1"), "42000", "the tokens")


def test_mariadb_guard_upgrades_and_refuses_older_snapshots(ctx):
    """Loading the guard over an install made before `fences` adds the column and keeps the
    tokens. A transaction that read (took its REPEATABLE READ snapshot) before another fenced
    transaction committed is refused with 40001 and must retry; one that fences first is not."""
    db = start(ctx)
    db.sql("ALTER TABLE fencelock_tokens DROP COLUMN fences;"
           "INSERT INTO fencelock_tokens (resource, token) VALUES ('r', 7);")
    with open(mdb.GUARD_SQL) as f:
        db.sql(f.read())
    eq(db.value("SELECT CONCAT(token, '/', fences) FROM fencelock_tokens WHERE resource = 'r'"),
       "7/0", "the kept token and the new column")
    eq(state(db.sql("SELECT fencelock_fence('r', 6, NULL)", check=False)), "FL001")
    eq(db.value("SELECT fencelock_fence('r', 8, NULL)"), "8")
    eq(db.value("SELECT CONCAT(token, '/', fences) FROM fencelock_tokens WHERE resource = 'r'"),
       "8/1", "one fence counted (the refused one rolled back)")
    db.sql("CREATE TABLE t (v INT) ENGINE = InnoDB; INSERT INTO t VALUES (1);")
    slow = subprocess.Popen(db.argv() + ["--unbuffered"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    slow.stdin.write("START TRANSACTION;\nSELECT v FROM t;\n")
    slow.stdin.flush()
    eq(slow.stdout.readline().strip(), "1", "the snapshot's first read")
    db.sql("START TRANSACTION; SELECT fencelock_fence('r', 8, NULL) INTO @t; UPDATE t SET v = 2;"
           " COMMIT;")
    out, err = slow.communicate("SELECT fencelock_fence('r', 8, NULL);\nCOMMIT;\n", timeout=30)
    eq(mdb.MariaDBError(err).sqlstate, "40001", "the older snapshot's fence: %s" % err.strip())
    assert "fencelock: snapshot older than a fenced write of 'r'" in err, err
    eq(db.sql("START TRANSACTION; SELECT fencelock_fence('r', 8, NULL) INTO @t; SELECT v FROM t;"
              " COMMIT;"), ["2"], "a transaction that fences first reads the last write")
