# SPDX-License-Identifier: Apache-2.0
"""The adapters of the fencing conformance suite (run.py): one class per resource that checks
fencelock's tokens; a new resource is one more class in ADAPTERS.

An adapter (the test side) says what kind of check its resource makes:
  online   asks fencelockd on every request: only a current holder's token passes
  signed   checks FENCE.SIGN's signature with its own keys (set_keys)
  atomic   checks the token and applies the write in one step (a transaction): concurrent
           sellers cannot interleave a stale write after a newer one
  isolations  (transactional resources) the isolation levels to run the snapshot scenario in,
           the default first, each with whether its snapshot lasts the whole transaction
and provides: setup(ctx, env) / teardown() (start and stop its resource; ctx.defer works too),
client() and client_spec() (the same client in another process: client_from_spec), value(lock)
(what the last accepted write() stored), recorded(lock) (monotonic resources: the highest token
kept), shop_init/shop_state (the inventory of the paused-holder and sellers scenarios),
set_keys(keys) (signed ones), flag_held(flag) (transactional ones: a client's
sell_when_waited holds `flag` from its fence on) and log_tail() (shown when a scenario fails).

A client writes with a token: write(lock, token, sig, value), read_stock(lock, token, sig, shop),
sell(lock, token, sig, shop, qty_read, buyer); True / a number when the resource accepted, False
/ None when it refused on fencing grounds; anything else raises. Transactional clients add
read_stock_tx(lock, token, sig, shop, level, read_first) -> ("ok", stock) / ("refused", None) /
("retry", None) (40001), one transaction at that isolation level, reading the stock before the
fence too when read_first; and sell_when_waited(lock, token, sig, shop, qty_read, buyer, flag)
-> (accepted, waited): a sale whose transaction fences, takes `flag`, waits (at most 10 s) until
another transaction waits for a lock, then writes and commits.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "integration")]

import json  # noqa: E402

from resp import Conn, RespError, text  # noqa: E402


class Adapter:
    name = "?"
    online = signed = atomic = False
    isolations = ()

    def setup(self, ctx, env):
        pass

    def teardown(self):
        pass

    def client(self):
        return client_from_spec(self.client_spec())

    def set_keys(self, keys):
        raise NotImplementedError

    def recorded(self, lock):
        raise NotImplementedError

    def log_tail(self):
        return ""


# ---- fencelock's own keys: PUT ... FENCE name token ----

class KvClient:
    """PUT res/LOCK value FENCE LOCK token; the shop is one key holding JSON, written with one
    fenced PUT (the check and the write are one log entry)."""

    def __init__(self, spec):
        self.c = Conn(spec["port"], timeout=30.0)
        self.read = {}

    def _put(self, key, value, lock, token):
        r = self.c.call("PUT", key, value, "FENCE", lock, token)
        if isinstance(r, RespError):
            if r.code == "STALE":
                return False
            raise AssertionError("PUT %s: -%s" % (key, r.text))
        return True

    def write(self, lock, token, sig, value):
        return self._put("res/" + lock, value, lock, token)

    def read_stock(self, lock, token, sig, shop):
        if isinstance(self.c.call("FENCE.CHECK", lock, token), RespError):
            return None
        state = json.loads(text(self.c.call("GET", "shop/" + shop)))
        self.read[shop] = state
        return state["stock"]

    def sell(self, lock, token, sig, shop, qty_read, buyer):
        sales = self.read[shop]["sales"] + [buyer]
        return self._put("shop/" + shop, json.dumps({"stock": qty_read - 1, "sales": sales}),
                         lock, token)

    def close(self):
        self.c.close()


class KvAdapter(Adapter):
    name = "kv"
    online = atomic = True

    def setup(self, ctx, env):
        self.srv = env.srv
        self.c = Conn(env.srv.port, timeout=30.0)
        ctx.defer(self.c.close)

    def client_spec(self):
        return {"adapter": self.name, "port": self.srv.port}

    def value(self, lock):
        return text(self.c.call("GET", "res/" + lock))

    def shop_init(self, shop, qty):
        self.c.call("PUT", "shop/" + shop, json.dumps({"stock": qty, "sales": []}))

    def shop_state(self, shop):
        s = json.loads(text(self.c.call("GET", "shop/" + shop)))
        return s["stock"], s["sales"]

    def log_tail(self):
        return self.srv.log_tail()


# ---- PostgreSQL: contrib/postgresql/fencelock.sql ----

def sql_str(v):
    return "NULL" if v is None else "'%s'" % str(v).replace("'", "''")


PG_SHOP = """
CREATE TABLE res (lock text PRIMARY KEY, value text NOT NULL);
CREATE TABLE shop (name text PRIMARY KEY, stock int NOT NULL);
CREATE TABLE sales (id serial PRIMARY KEY, shop text NOT NULL, buyer text NOT NULL,
                    token bigint NOT NULL);
CREATE FUNCTION fl_write(l text, t bigint, s text, v text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM fencelock.fence(l, t, s);
    INSERT INTO res VALUES (l, v) ON CONFLICT (lock) DO UPDATE SET value = EXCLUDED.value;
END $$;
CREATE FUNCTION fl_read(l text, t bigint, s text, sh text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    PERFORM fencelock.fence(l, t, s);
    RETURN (SELECT stock FROM shop WHERE name = sh);
END $$;
CREATE FUNCTION fl_sell(l text, t bigint, s text, sh text, q int, b text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM fencelock.fence(l, t, s);
    UPDATE shop SET stock = q - 1 WHERE name = sh;
    INSERT INTO sales (shop, buyer, token) VALUES (sh, b, t);
END $$;
"""


class PgClient:
    """One psql process; each call one statement (one transaction): fence() first."""

    def __init__(self, spec):
        import pg as pgmod
        self.argv = spec["psql"]
        self.db = pgmod.PsqlSession(spec["psql"])

    def _q(self, stmt):
        rows, state = self.db.query(stmt)
        if state in ("FL001", "FL002"):
            return False, None
        if state != "00000":
            raise AssertionError("%s: SQLSTATE %s" % (stmt, state))
        return True, rows

    def write(self, lock, token, sig, value):
        return self._q("SELECT fl_write(%s, %d, %s, %s)" % (sql_str(lock), token, sql_str(sig),
                                                           sql_str(value)))[0]

    def read_stock(self, lock, token, sig, shop):
        ok, rows = self._q("SELECT fl_read(%s, %d, %s, %s)" % (sql_str(lock), token, sql_str(sig),
                                                              sql_str(shop)))
        return int(rows[0]) if ok else None

    def sell(self, lock, token, sig, shop, qty_read, buyer):
        return self._q("SELECT fl_sell(%s, %d, %s, %s, %d, %s)"
                       % (sql_str(lock), token, sql_str(sig), sql_str(shop), qty_read,
                          sql_str(buyer)))[0]

    def _script(self, script):
        """One psql process runs script (its own transaction); (state, lines): state "ok",
        "refused" (FL001/FL002) or "retry" (40001)."""
        import subprocess
        import pg as pgmod
        r = subprocess.run(self.argv + ["-f", "-"], input=script, capture_output=True, text=True,
                           timeout=60)
        if r.returncode == 0:
            return "ok", [line for line in r.stdout.splitlines() if line]
        state = pgmod.sqlstate_of(r.stderr)
        if state in ("FL001", "FL002"):
            return "refused", None
        if state == "40001":
            return "retry", None
        raise AssertionError("psql: %s" % r.stderr.strip())

    def read_stock_tx(self, lock, token, sig, shop, level, read_first):
        read = "SELECT 'stock=' || stock FROM shop WHERE name = %s;\n" % sql_str(shop)
        state, lines = self._script(
            "BEGIN ISOLATION LEVEL %s;\n%sSELECT 'fenced=' || fencelock.fence(%s, %d, %s);\n%s"
            "COMMIT;\n" % (level, read.replace("stock=", "early=") if read_first else "",
                           sql_str(lock), token, sql_str(sig), read))
        if state != "ok":
            return state, None
        return "ok", int([x for x in lines if x.startswith("stock=")][0][6:])

    def sell_when_waited(self, lock, token, sig, shop, qty_read, buyer, flag):
        waiting = "EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted)"
        state, lines = self._script(
            "BEGIN;\nSELECT 'fenced=' || fencelock.fence(%s, %d, %s);\n"
            "SELECT pg_advisory_xact_lock(hashtext(%s));\n"
            "DO $$ BEGIN FOR i IN 1..200 LOOP EXIT WHEN %s; PERFORM pg_sleep(0.05); END LOOP;"
            " END $$;\nSELECT 'waited=' || %s;\n"
            "UPDATE shop SET stock = %d WHERE name = %s;\n"
            "INSERT INTO sales (shop, buyer, token) VALUES (%s, %s, %d);\nCOMMIT;\n"
            % (sql_str(lock), token, sql_str(sig), sql_str(flag), waiting, waiting,
               qty_read - 1, sql_str(shop), sql_str(shop), sql_str(buyer), token))
        if state == "retry":
            raise AssertionError("A's sale got 40001: it fenced first and waited for nobody")
        return state == "ok", state == "ok" and "waited=true" in lines

    def close(self):
        self.db.close()


class PostgresAdapter(Adapter):
    name = "postgresql"
    signed = atomic = True
    isolations = (("READ COMMITTED", False), ("REPEATABLE READ", True), ("SERIALIZABLE", True))

    def setup(self, ctx, env):
        import pg as pgmod
        self.pg = pgmod.start(ctx)
        self.pg.sql(PG_SHOP)
        self.set_keys([env_key()])

    def client_spec(self):
        return {"adapter": self.name, "signed": True, "psql": self.pg.psql_argv()}

    def set_keys(self, keys):
        self.pg.sql("BEGIN; DELETE FROM fencelock.keys;\n" + "".join(
            "INSERT INTO fencelock.keys (key_id, secret) VALUES ('k%d', '\\x%s');\n"
            % (i, k.hex()) for i, k in enumerate(keys)) + "COMMIT;")

    def value(self, lock):
        return self.pg.value("SELECT value FROM res WHERE lock = %s" % sql_str(lock))

    def recorded(self, lock):
        return int(self.pg.value("SELECT token FROM fencelock.tokens WHERE resource = %s"
                                 % sql_str(lock)))

    def shop_init(self, shop, qty):
        self.pg.sql("INSERT INTO shop VALUES (%s, %d)" % (sql_str(shop), qty))

    def flag_held(self, flag):
        return self.pg.value("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
                             "AND granted)") == "t"

    def shop_state(self, shop):
        stock = int(self.pg.value("SELECT stock FROM shop WHERE name = %s" % sql_str(shop)))
        sales = self.pg.sql("SELECT buyer FROM sales WHERE shop = %s ORDER BY id"
                            % sql_str(shop))
        return stock, sales

    def log_tail(self):
        return self.pg.log_tail()


# ---- nginx in front of an HTTP backend: contrib/nginx ----

CONTRIB_NGINX = os.path.abspath(os.path.join(HERE, "..", "..", "contrib", "nginx"))


class HttpClient:
    """Requests to nginx carrying the token in Fencing-* headers; 2xx: accepted, 403: refused
    by the fencing check."""

    def __init__(self, spec):
        self.port = spec["port"]

    def _req(self, method, path, lock, token, sig, body=None):
        import http.client
        h = {"Fencing-Lock": lock, "Fencing-Token": str(token)}
        if sig is not None:
            h["Fencing-Signature"] = sig
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read().decode()
        finally:
            c.close()
        if 200 <= r.status < 300:
            return True, data
        if r.status == 403:
            return False, None
        raise AssertionError("%s %s: HTTP %d %s" % (method, path, r.status, data))

    def write(self, lock, token, sig, value):
        return self._req("PUT", "/res/" + quote(lock), lock, token, sig, value)[0]

    def read_stock(self, lock, token, sig, shop):
        ok, data = self._req("GET", "/shop/" + quote(shop), lock, token, sig)
        return int(data) if ok else None

    def sell(self, lock, token, sig, shop, qty_read, buyer):
        return self._req("POST", "/shop/%s/sell" % quote(shop), lock, token, sig,
                         "%d %s" % (qty_read, buyer))[0]

    def close(self):
        pass


def quote(s):
    import urllib.parse
    return urllib.parse.quote(s, safe="")


NGINX_LOCATIONS = """
        location /res/ { auth_request %(auth)s; proxy_pass http://backend; }
        location /shop/ { auth_request %(auth)s; proxy_pass http://backend; }
"""


class NginxAdapter(Adapter):
    """nginx with Debian's package, a Python backend behind it (tests/fencing/nginx.py)."""

    js = False

    def setup(self, ctx, env):
        import nginx
        why = nginx.available(js=self.js)
        if why:
            raise AssertionError(why)
        self.backend = nginx.Backend()
        ctx.defer(self.backend.stop)
        self.ng = nginx.Nginx(ctx.workdir, self.http_block(env), self.server_block(), js=self.js)
        ctx.defer(self.ng.stop)
        self.prepare()
        self.ng.start()

    def prepare(self):
        pass

    def client_spec(self):
        return {"adapter": self.name, "signed": self.signed, "port": self.ng.port}

    def value(self, lock):
        with self.backend.mu:
            return self.backend.values.get(lock)

    def shop_init(self, shop, qty):
        with self.backend.mu:
            self.backend.shops[shop] = [qty, []]

    def shop_state(self, shop):
        with self.backend.mu:
            stock, sales = self.backend.shops[shop]
            return stock, list(sales)

    def log_tail(self):
        return self.ng.log_tail()


class NginxOnlineAdapter(NginxAdapter):
    """contrib/nginx/fencelock-online.conf: auth_request to fencelockd's GET /v1/fence."""

    name = "nginx-online"
    online = True

    def http_block(self, env):
        return ("    upstream fencelock { server 127.0.0.1:%d; }\n"
                "    upstream backend { server 127.0.0.1:%d; }\n"
                % (env.srv.http_port, self.backend.port))

    def server_block(self):
        return ("        include %s/fencelock-online.conf;\n" % CONTRIB_NGINX
                + NGINX_LOCATIONS % {"auth": "/_fencelock"})


class NginxOfflineAdapter(NginxAdapter):
    """contrib/nginx/fencelock-offline.conf and fencelock.js: njs checks the signature with its
    key files and keeps the highest token per lock; no call to fencelockd."""

    name = "nginx-offline"
    signed = True
    js = True

    def http_block(self, env):
        return ("    js_path %s;\n    js_import fencelock from fencelock.js;\n"
                "    upstream backend { server 127.0.0.1:%d; }\n"
                % (CONTRIB_NGINX, self.backend.port))

    def server_block(self):
        return ("        set $fencelock_keys %(dir)s/keys;\n"
                "        set $fencelock_state %(dir)s/state;\n"
                "        include " + CONTRIB_NGINX + "/fencelock-offline.conf;\n"
                + NGINX_LOCATIONS % {"auth": "/_fencelock_offline"})

    def prepare(self):
        for d in ("keys", "state"):
            os.mkdir(self.ng.path(d), 0o700)
            self.ng.own(self.ng.path(d))
        self.set_keys([env_key()])

    def set_keys(self, keys):
        """A rotation is files added to and removed from the key dir (read on every request):
        the new ones first, then the old ones go."""
        d = self.ng.path("keys")
        want = {"k%d.key" % i: k for i, k in enumerate(keys)}
        for fn, k in want.items():
            tmp = os.path.join(d, fn + ".new")
            with open(tmp, "wb") as f:
                f.write(k + b"\n")
            os.chmod(tmp, 0o600)
            self.ng.own(tmp)
            os.rename(tmp, os.path.join(d, fn))
        for fn in os.listdir(d):
            if fn not in want:
                os.unlink(os.path.join(d, fn))

    def recorded(self, lock):
        import hashlib
        with open(self.ng.path("state/" + hashlib.sha256(lock.encode()).hexdigest())) as f:
            return int(f.read().strip())


# ---- MariaDB: contrib/mariadb/fencelock.sql ----

MARIADB_SHOP = """
CREATE TABLE res (l VARCHAR(255) PRIMARY KEY, v TEXT NOT NULL) ENGINE = InnoDB;
CREATE TABLE shop (name VARCHAR(255) PRIMARY KEY, stock INT NOT NULL) ENGINE = InnoDB;
CREATE TABLE sales (id INT AUTO_INCREMENT PRIMARY KEY, shop VARCHAR(255) NOT NULL,
                    buyer VARCHAR(64) NOT NULL, token BIGINT NOT NULL) ENGINE = InnoDB;
"""


class MariaDBClient:
    """One mariadb client process per call: START TRANSACTION, fencelock_fence() first, the
    write, COMMIT. A refused fence makes the client exit (batch mode stops at the first error)
    and the connection's end rolls the transaction back."""

    def __init__(self, spec):
        self.argv = spec["argv"]

    def _script(self, script):
        """One client process runs script; (state, lines): state "ok", "refused" (FL001/FL002)
        or "retry" (40001)."""
        import subprocess
        r = subprocess.run(self.argv, input=script, capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            return "ok", [line for line in r.stdout.splitlines() if line]
        import mariadb
        state = mariadb.MariaDBError(r.stderr).sqlstate
        if state in ("FL001", "FL002"):
            return "refused", None
        if state == "40001":
            return "retry", None
        raise AssertionError("mariadb: %s" % r.stderr.strip())

    def _fence(self, lock, token, sig):
        return "SELECT fencelock_fence(%s, %d, %s) INTO @fl_token;\n" % (sql_str(lock), token,
                                                                         sql_str(sig))

    def _tx(self, lock, token, sig, body):
        state, lines = self._script("START TRANSACTION;\n%s%s\nCOMMIT;\n"
                                    % (self._fence(lock, token, sig), body))
        if state == "retry":
            raise AssertionError("mariadb: 40001 from a transaction that fenced first")
        return state == "ok", lines

    def read_stock_tx(self, lock, token, sig, shop, level, read_first):
        read = "SELECT CONCAT('stock=', stock) FROM shop WHERE name = %s;\n" % sql_str(shop)
        state, lines = self._script(
            "SET TRANSACTION ISOLATION LEVEL %s;\nSTART TRANSACTION;\n%s%s%sCOMMIT;\n"
            % (level, read.replace("stock=", "early=") if read_first else "",
               self._fence(lock, token, sig), read))
        if state != "ok":
            return state, None
        return "ok", int([x for x in lines if x.startswith("stock=")][0][6:])

    def sell_when_waited(self, lock, token, sig, shop, qty_read, buyer, flag):
        # Another connection inside the guard's INSERT of the row this transaction holds is
        # waiting for it. (INNODB_TRX's LOCK WAIT would say so too, but it is a cache InnoDB
        # refreshes only when unread for 100 ms: polled it showed nothing, or the last test's
        # waiter.) Polled by top-level statements.
        waiting = ("EXISTS (SELECT 1 FROM information_schema.PROCESSLIST WHERE ID <> "
                   "CONNECTION_ID() AND INFO LIKE 'INSERT INTO fencelock_tokens%')")
        poll = "SET @fl_waited = @fl_waited OR %s;\nDO IF(@fl_waited, 0, SLEEP(0.05));\n" % waiting
        state, lines = self._script(
            "START TRANSACTION;\n%sDO GET_LOCK(%s, 0);\nSET @fl_waited = FALSE;\n%s"
            "SELECT CONCAT('waited=', %s);\n"
            "UPDATE shop SET stock = %d WHERE name = %s;\n"
            "INSERT INTO sales (shop, buyer, token) VALUES (%s, %s, %d);\nCOMMIT;\n"
            "DO RELEASE_LOCK(%s);\n"
            % (self._fence(lock, token, sig), sql_str(flag), poll * 200, waiting, qty_read - 1,
               sql_str(shop), sql_str(shop), sql_str(buyer), token, sql_str(flag)))
        if state == "retry":
            raise AssertionError("A's sale got 40001: it fenced first and waited for nobody")
        return state == "ok", state == "ok" and "waited=1" in lines

    def write(self, lock, token, sig, value):
        return self._tx(lock, token, sig, "INSERT INTO res VALUES (%s, %s) ON DUPLICATE KEY "
                        "UPDATE v = VALUES(v);" % (sql_str(lock), sql_str(value)))[0]

    def read_stock(self, lock, token, sig, shop):
        ok, rows = self._tx(lock, token, sig, "SELECT stock FROM shop WHERE name = %s;"
                            % sql_str(shop))
        return int(rows[0]) if ok else None

    def sell(self, lock, token, sig, shop, qty_read, buyer):
        return self._tx(lock, token, sig,
                        "UPDATE shop SET stock = %d WHERE name = %s;\n"
                        "INSERT INTO sales (shop, buyer, token) VALUES (%s, %s, %d);"
                        % (qty_read - 1, sql_str(shop), sql_str(shop), sql_str(buyer), token))[0]

    def close(self):
        pass


class MariaDBAdapter(Adapter):
    name = "mariadb"
    signed = atomic = True
    isolations = (("REPEATABLE READ", True), ("READ COMMITTED", False))

    def setup(self, ctx, env):
        import mariadb
        why = mariadb.available()
        if why:
            raise AssertionError(why)
        self.db = mariadb.MariaDB(ctx.workdir)
        ctx.defer(self.db.stop)
        self.db.start()
        self.db.sql(MARIADB_SHOP)
        self.check_hmac()
        self.set_keys([env_key()])

    def check_hmac(self):
        """fencelock_hmac_sha256 (HMAC built from SHA2 in SQL) against RFC 4231's test case 2
        and Python's hmac for keys shorter than, as long as and longer than the 64-byte block
        (a longer key is hashed first) and bytes >= 0x80 (the XOR runs byte by byte)."""
        import hashlib
        import hmac
        cases = [(b"Jefe", b"what do ya want for nothing?")]
        cases += [(bytes((i * 37 + n) % 256 for i in range(n)), b"fencelock-token-v1:3:inv:%d" % n)
                  for n in (16, 63, 64, 65, 131)]
        for key, msg in cases:
            got = self.db.value("SELECT HEX(fencelock_hmac_sha256(X'%s', X'%s'))"
                                % (key.hex(), msg.hex())).lower()
            want = hmac.new(key, msg, hashlib.sha256).hexdigest()
            if got != want:
                raise AssertionError("fencelock_hmac_sha256 with a %d-byte key: %s, want %s"
                                     % (len(key), got, want))
        rfc = self.db.value("SELECT HEX(fencelock_hmac_sha256('Jefe', "
                            "'what do ya want for nothing?'))").lower()
        if rfc != "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843":
            raise AssertionError("RFC 4231 test case 2: %s" % rfc)

    def client_spec(self):
        return {"adapter": self.name, "signed": True, "argv": self.db.argv()}

    def set_keys(self, keys):
        self.db.sql("START TRANSACTION; DELETE FROM fencelock_keys;\n" + "".join(
            "INSERT INTO fencelock_keys (key_id, secret) VALUES ('k%d', X'%s');\n"
            % (i, k.hex()) for i, k in enumerate(keys)) + "COMMIT;")

    def value(self, lock):
        return self.db.value("SELECT v FROM res WHERE l = %s" % sql_str(lock))

    def recorded(self, lock):
        return int(self.db.value("SELECT token FROM fencelock_tokens WHERE resource = "
                                 "CAST(%s AS BINARY)" % sql_str(lock)))

    def shop_init(self, shop, qty):
        self.db.sql("INSERT INTO shop VALUES (%s, %d)" % (sql_str(shop), qty))

    def flag_held(self, flag):
        return self.db.value("SELECT IS_USED_LOCK(%s) IS NOT NULL" % sql_str(flag)) == "1"

    def shop_state(self, shop):
        stock = int(self.db.value("SELECT stock FROM shop WHERE name = %s" % sql_str(shop)))
        return stock, self.db.sql("SELECT buyer FROM sales WHERE shop = %s ORDER BY id"
                                  % sql_str(shop))

    def log_tail(self):
        return self.db.log_tail()


def env_key():
    import scenarios
    return scenarios.KEY1


ADAPTERS = [KvAdapter, PostgresAdapter, MariaDBAdapter, NginxOnlineAdapter, NginxOfflineAdapter]


def client_from_spec(spec):
    """The client of spec["adapter"] (in this process or in seller.py's)."""
    kinds = {"kv": KvClient, "postgresql": PgClient, "nginx-online": HttpClient,
             "nginx-offline": HttpClient, "mariadb": MariaDBClient}
    return kinds[spec["adapter"]](spec)
