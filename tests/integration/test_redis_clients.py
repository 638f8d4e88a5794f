# SPDX-License-Identifier: Apache-2.0
"""Redis client libraries beyond raw commands: the connection-management commands they send on
connect or take from a pool (CLIENT SETNAME/GETNAME/ID/INFO/LIST/SETINFO, SELECT, ECHO, DBSIZE,
COMMAND ...) are answered as Redis answers them (docs/protocol.md), and data commands fencelock
does not have are still refused with Redis' "unknown command" error.

Driven raw over RESP, through redis-py (python3-redis, for /usr/bin/python3) with client_name,
a pool and db=1, through ioredis (examples/node, `npm ci` as test_examples.py does) with
connectionName, and through redis-cli's own probe (COMMAND DOCS).
"""

import json
import os
import shutil
import subprocess

from helpers import eq, expect_err, expect_int, expect_ok
from resp import Conn, RespError, text
from test_examples import NODE_DIR, _node_cmd


def test_connection_commands_raw(ctx):
    c = ctx.conn()
    eq(c.call("ECHO", "hi there"), b"hi there")
    expect_ok(c.call("SELECT", 0), "SELECT 0")
    expect_err(c.call("SELECT", 1), "ERR", "SELECT 1: one database")
    assert "out of range" in str(c.call("SELECT", 1)), c.call("SELECT", 1)
    expect_err(c.call("SELECT", "x"), "ERR", "SELECT x")
    eq(c.call("DBSIZE"), 0, "no keys yet")
    for i in range(3):
        expect_int(c.call("PUT", "k%d" % i, "v"))
    eq(c.call("DBSIZE"), 3, "DBSIZE counts keys")

    cid = expect_int(c.call("CLIENT", "ID"))
    eq(c.call("CLIENT", "GETNAME"), None, "no name before SETNAME")
    expect_ok(c.call("CLIENT", "SETNAME", "worker-1"))
    eq(c.call("CLIENT", "GETNAME"), b"worker-1")
    expect_err(c.call("CLIENT", "SETNAME", "has space"), "ERR", "names cannot hold spaces")
    eq(c.call("CLIENT", "GETNAME"), b"worker-1", "a refused name changes nothing")
    expect_ok(c.call("CLIENT", "SETINFO", "LIB-NAME", "mylib"))
    expect_ok(c.call("CLIENT", "SETINFO", "LIB-VER", "1.2"))
    info = text(c.call("CLIENT", "INFO"))
    assert info.endswith("\n") and info.count("\n") == 1, repr(info)
    fields = dict(kv.split("=", 1) for kv in info.split())
    eq((fields["id"], fields["name"], fields["db"], fields["resp"], fields["lib-name"],
        fields["lib-ver"]), (str(cid), "worker-1", "0", "2", "mylib", "1.2"), info)
    assert fields["laddr"].endswith(":%d" % ctx.srv.port), info
    other = ctx.conn()
    oid = expect_int(other.call("CLIENT", "ID"))
    assert oid != cid, "connection ids differ"
    lines = text(c.call("CLIENT", "LIST")).splitlines()
    ids = [dict(kv.split("=", 1) for kv in ln.split())["id"] for ln in lines]
    assert str(cid) in ids and str(oid) in ids, lines
    expect_err(c.call("CLIENT", "KILL", "ID", oid), "ERR", "CLIENT KILL is not offered")
    assert "unknown subcommand" in str(c.call("CLIENT", "NOPE")), c.call("CLIENT", "NOPE")
    expect_err(c.call("CLIENT"), "ERR", "CLIENT needs a subcommand")

    # HELLO's options, as RESP3 clients send them on connect.
    h = Conn(ctx.srv.port)
    reply = h.call("HELLO", 3, "AUTH", "default", "anything", "SETNAME", "r3-app")
    assert not isinstance(reply, RespError), reply
    eq(h.call("CLIENT", "GETNAME"), b"r3-app", "HELLO SETNAME")
    expect_err(h.call("HELLO", 3, "AUTH", "alice", "pw"), "WRONGPASS", "only the default user")
    expect_err(h.call("HELLO", 3, "BOGUS"), "ERR", "an unknown HELLO option")
    h.close()

    n = expect_int(c.call("COMMAND", "COUNT"))
    table = c.call("COMMAND")
    eq(len(table), n, "COMMAND lists COUNT entries")
    names = sorted(text(e[0]) for e in table)
    for name in ("lock", "session.open", "client", "select", "echo", "dbsize", "command"):
        assert name in names, (name, names)
    lock = c.call("COMMAND", "INFO", "LOCK", "nosuch")
    eq((text(lock[0][0]), lock[0][1], lock[1]), ("lock", -3, None), "COMMAND INFO")
    docs = c.call("COMMAND", "DOCS", "ping")
    eq(text(docs[0]), "ping")
    assert b"summary" in docs[1], docs
    for data_cmd in (("SET", "a", "b"), ("HSET", "h", "f", "v"), ("FLUSHALL",)):
        r = c.call(*data_cmd)
        assert isinstance(r, RespError) and "unknown command" in str(r), (data_cmd, r)


REDIS_PY = r"""
import json, sys, redis
port = int(sys.argv[1])
out = {}
r = redis.Redis(port=port, client_name="app-1", decode_responses=True)
out["ping"] = r.ping()
out["name"] = r.client_getname()
out["info_name"] = r.client_info()["name"]
out["id"] = r.client_id()
out["echo"] = r.echo("hello")
out["dbsize"] = r.dbsize()
pool = redis.ConnectionPool(port=port, db=0, client_name="pooled")
p = redis.Redis(connection_pool=pool, decode_responses=True)
out["pool"] = [p.ping() for _ in range(3)]
out["sid"] = int(p.execute_command("SESSION.OPEN", 10000))
try:
    redis.Redis(port=port, db=1).ping()
    out["db1"] = "accepted"
except redis.ResponseError as e:
    out["db1"] = str(e)
try:
    r.set("a", "b")
    out["set"] = "accepted"
except redis.ResponseError as e:
    out["set"] = str(e)
print(json.dumps(out))
"""


def test_redis_py_with_client_name_and_pool(ctx):
    ok_ = subprocess.run(["/usr/bin/python3", "-c", "import redis"], capture_output=True)
    assert ok_.returncode == 0, "python3-redis not installed (apt-get install python3-redis)"
    c = ctx.conn()
    expect_int(c.call("PUT", "x", "1"))
    script = ctx.tmp("client.py")
    with open(script, "w") as f:
        f.write(REDIS_PY)
    p = subprocess.run(["/usr/bin/python3", script, str(ctx.srv.port)], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, "redis-py failed:\n%s" % p.stderr
    out = json.loads(p.stdout)
    eq((out["ping"], out["name"], out["info_name"], out["echo"], out["dbsize"], out["pool"]),
       (True, "app-1", "app-1", "hello", 1, [True] * 3), out)
    assert out["sid"] > 0, out
    assert "out of range" in out["db1"], out
    assert "unknown command" in out["set"], out


IOREDIS = r"""
const Redis = require(process.argv[2] + "/node_modules/ioredis");
(async () => {
  const out = {};
  const r = new Redis({ port: +process.argv[3], connectionName: "io-app", db: 0,
                        maxRetriesPerRequest: 1 });
  out.ping = await r.ping();
  out.name = await r.client("GETNAME");
  out.echo = await r.echo("e");
  out.sid = await r.call("SESSION.OPEN", 10000);
  try { await r.set("a", "b"); out.set = "accepted"; } catch (e) { out.set = e.message; }
  r.disconnect();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
"""


def test_ioredis_with_connection_name(ctx):
    node = _node_cmd()[0]
    script = ctx.tmp("client.js")
    with open(script, "w") as f:
        f.write(IOREDIS)
    p = subprocess.run([node, script, NODE_DIR, str(ctx.srv.port)], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, "ioredis failed:\n%s%s" % (p.stdout, p.stderr)
    out = json.loads(p.stdout)
    eq((out["ping"], out["name"], out["echo"]), ("PONG", "io-app", "e"), out)
    assert int(out["sid"]) > 0 and "unknown command" in out["set"], out


def test_redis_cli_probes(ctx):
    exe = shutil.which("redis-cli")
    assert exe, "redis-cli not installed (apt-get install redis-tools)"

    def cli(*args):
        p = subprocess.run([exe, "-p", str(ctx.srv.port)] + list(args), capture_output=True,
                           text=True, timeout=20)
        return p.stdout.strip()
    assert "summary" in cli("COMMAND", "DOCS", "lock"), "the probe redis-cli makes for hints"
    eq(cli("-n", "0", "PING"), "PONG")
    eq(cli("CLIENT", "SETNAME", "cli"), "OK")
    eq(cli("ECHO", "x"), "x")
    assert "DB index is out of range" in cli("SELECT", "2")
    with Conn(ctx.srv.port) as c:
        eq(c.call("PING"), "PONG", "the server is fine after all of it")
    assert os.path.isdir(NODE_DIR)
