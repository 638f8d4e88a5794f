# SPDX-License-Identifier: Apache-2.0
"""The event stream (XREAD on fencelock:events[:prefix], docs/protocol.md "Watch"): every event
type with its fields in log order, prefix streams, BLOCK, -COMPACTED, RESP2 and RESP3 shapes,
redis-py's own xread, the history rebuilt after a restart, resuming by id across a leader
killed with -9 (no gap, no duplicate), and a slow reader dropped at --event-buffer."""

import json
import subprocess
import time

from helpers import eq, expect_err, expect_int, expect_ok, wait_until
from resp import Conn, RespError, encode_command, text
from cluster import ready_leader, start_cluster

ALL = "fencelock:events"


def entries(reply, stream=ALL):
    """[(id, {field: value})] of one stream in an XREAD reply (RESP2 list or RESP3 map)."""
    if reply is None:
        return []
    assert not isinstance(reply, RespError), reply
    pairs = reply.items() if isinstance(reply, dict) else [(s, e) for s, e in reply]
    for name, ents in pairs:
        if text(name) == stream:
            return [(text(i), {text(f[k]): text(f[k + 1]) for k in range(0, len(f), 2)})
                    for i, f in ents]
    return []


def read_all(c, after="0", stream=ALL):
    return entries(c.call("XREAD", "COUNT", 100000, "STREAMS", stream, after), stream)


def idkey(i):
    rev, n = i.split("-")
    return (int(rev), int(n))


def test_watch_every_event_type_with_its_fields_in_order(ctx):
    c = ctx.conn()
    r1 = expect_int(c.call("PUT", "k", "v1"))
    expect_int(c.call("DEL", "k"))
    a = expect_int(c.call("SESSION.OPEN", 10000, "LOCKDELAY", 50))
    b = expect_int(c.call("SESSION.OPEN", 10000))
    expect_int(c.call("PUT", "leased", "x", "LEASE", a))
    t = expect_int(c.call("LOCK", "L", a))
    c.send("LOCK", "L", b, "WAIT", 10000)
    wait_until(lambda: any(f["type"] == "wait" for _, f in read_all(ctx.conn())), timeout=5,
               what="the wait event")
    # expire a: its lock goes with reason expire (lock-delay 50 ms), then b is granted
    c2 = ctx.conn()
    expect_ok(c2.call("SESSION.CLOSE", b))
    ev = read_all(c2)
    types = [f["type"] for _, f in ev]
    eq(types[:9], ["put", "del", "session-open", "session-open", "put", "grant", "wait",
                   "wait-end", "session-end"], ev)
    ids = [idkey(i) for i, _ in ev]
    eq(ids, sorted(set(ids)), "ids strictly increase")
    put = ev[0]
    eq((put[0], put[1]), ("%d-0" % r1, {"type": "put", "name": "k", "value": "v1",
                                        "mod_rev": str(r1)}))
    eq(ev[5][1], {"type": "grant", "name": "L", "token": str(t), "sid": str(a)})
    eq(ev[4][1]["sid"], str(a), "a leased put names its session")
    eq(ev[8][1], {"type": "session-end", "sid": str(b), "reason": "close"})
    c.read_reply()  # b's LOCK ... WAIT answered (nil: its session closed)
    expect_ok(c2.call("SESSION.CLOSE", a))
    tail = [f for _, f in read_all(c2, ev[-1][0])]
    eq([f["type"] for f in tail], ["release", "expire-key", "session-end"], tail)
    eq(tail[1], {"type": "expire-key", "name": "leased", "sid": str(a), "reason": "close",
                 "mod_rev": tail[1]["mod_rev"]})


def test_watch_expiry_is_expire_and_lockdelay(ctx):
    c = ctx.conn()
    a = expect_int(c.call("SESSION.OPEN", 300, "LOCKDELAY", 100))
    expect_int(c.call("LOCK", "L", a))
    wait_until(lambda: any(f["type"] == "lockdelay-end" for _, f in read_all(c)), timeout=10,
               what="expiry and lock-delay end")
    types = [f["type"] for _, f in read_all(c)]
    eq(types, ["session-open", "grant", "expire", "lockdelay", "session-end", "lockdelay-end"])
    ld = [f for _, f in read_all(c) if f["type"] == "lockdelay"][0]
    eq(ld, {"type": "lockdelay", "name": "L", "delay_ms": "100"})


def test_watch_prefix_stream_sees_exactly_its_subset(ctx):
    c = ctx.conn()
    for k in ("app/a", "ap", "other", "app/b"):
        expect_int(c.call("PUT", k, "v"))
    s = expect_int(c.call("SESSION.OPEN", 10000))
    expect_int(c.call("LOCK", "app/lock", s))
    names = [f.get("name") for _, f in read_all(c, "0", ALL + ":app/")]
    eq(names, ["app/a", "app/b", "app/lock"])
    eq(c.call("XLEN", ALL + ":app/"), 3)
    eq(c.call("XLEN", ALL), 6)
    first = entries(c.call("XREAD", "COUNT", 1, "STREAMS", ALL + ":app/", ALL, "0", "0"),
                    ALL + ":app/")
    eq(len(first), 1, "COUNT applies per stream")


def test_watch_block_wakes_on_the_next_matching_event_and_times_out(ctx):
    c = ctx.conn()
    w = ctx.conn()
    t0 = time.monotonic()
    eq(w.call("XREAD", "BLOCK", 300, "STREAMS", ALL, "$"), None)
    assert time.monotonic() - t0 >= 0.25, "BLOCK waited its timeout"
    w.send("XREAD", "BLOCK", 0, "STREAMS", ALL + ":x/", "$")
    time.sleep(0.2)
    expect_int(c.call("PUT", "y/1", "no"))
    assert not w.has_data(0.3), "a non-matching event does not wake the reader"
    rev = expect_int(c.call("PUT", "x/1", "yes"))
    ev = entries(w.read_reply(timeout=5), ALL + ":x/")
    eq(ev, [("%d-0" % rev, {"type": "put", "name": "x/1", "value": "yes",
                            "mod_rev": str(rev)})])
    eq(c.call("PING"), "PONG", "the loop was never blocked")


def test_watch_compacted_after_the_history_window_never_a_gap(ctx):
    ctx.server("--event-history", "5")
    c = ctx.conn()
    revs = [expect_int(c.call("PUT", "k", str(i))) for i in range(8)]
    ev = read_all(c)
    eq([i for i, _ in ev], ["%d-0" % r for r in revs[3:]], "the newest 5 are kept")
    r = c.call("XREAD", "STREAMS", ALL, "%d-0" % revs[1])
    expect_err(r, "COMPACTED", "an id before the window")
    assert ("oldest=%d-0" % revs[3]) in str(r), r
    eq(len(read_all(c, "%d-0" % revs[2])), 5, "the id just before the window is gap-free")
    expect_err(c.call("XREAD", "STREAMS", ALL, "nope"), "ERR", "bad id")
    expect_err(c.call("XREAD", "STREAMS", "mystream", "0"), "ERR", "not our stream")
    expect_err(c.call("XREAD", "STREAMS", ALL), "ERR", "unbalanced")
    expect_err(c.call("XADD", ALL, "*", "a", "b"), "ERR", "XADD refused")
    eq(read_all(c)[-1][0], "%d-0" % revs[-1], "XADD changed nothing")


def test_watch_resp3_reply_is_a_map(ctx):
    c = ctx.conn()
    rev = expect_int(c.call("PUT", "k", "v"))
    c.call("HELLO", 3)
    r = c.call("XREAD", "STREAMS", ALL, "0")
    assert isinstance(r, dict), r
    eq(entries(r)[0][0], "%d-0" % rev)
    eq(c.call("XREAD", "BLOCK", 50, "STREAMS", ALL, "$"), None)
    info = c.call("XINFO", "STREAM", ALL)
    eq((info[b"length"] if b"length" in info else info["length"]), 1, info)


REDIS_PY = r"""
import json, sys, redis
r = redis.Redis(port=int(sys.argv[1]), decode_responses=True)
out = {"all": r.xread({"fencelock:events": 0}),
       "block": r.xread({"fencelock:events": "$"}, block=100),
       "count": r.xread({"fencelock:events:a/": "0-0"}, count=1),
       "len": r.xlen("fencelock:events")}
info = r.xinfo_stream("fencelock:events")
out["info"] = [info["length"], info["last-entry"][0], info["first-entry"][1]["type"]]
print(json.dumps(out))
"""


def test_watch_redis_py_xread_works_unchanged(ctx):
    ok_ = subprocess.run(["/usr/bin/python3", "-c", "import redis"], capture_output=True)
    assert ok_.returncode == 0, "python3-redis not installed (apt-get install python3-redis)"
    c = ctx.conn()
    r1 = expect_int(c.call("PUT", "a/1", "x"))
    r2 = expect_int(c.call("PUT", "a/2", "y"))
    script = ctx.tmp("xread.py")
    with open(script, "w") as f:
        f.write(REDIS_PY)
    p = subprocess.run(["/usr/bin/python3", script, str(ctx.srv.port)], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, "redis-py failed:\n%s" % p.stderr
    out = json.loads(p.stdout)
    eq(out["all"], [["fencelock:events", [
        ["%d-0" % r1, {"type": "put", "name": "a/1", "value": "x", "mod_rev": str(r1)}],
        ["%d-0" % r2, {"type": "put", "name": "a/2", "value": "y", "mod_rev": str(r2)}]]]])
    eq(out["block"], [])
    eq(len(out["count"][0][1]), 1)
    eq(out["len"], 2)
    eq(out["info"], [2, "%d-0" % r2, "put"])


def test_watch_history_is_rebuilt_after_a_restart(ctx):
    srv = ctx.srv
    c = ctx.conn()
    revs = [expect_int(c.call("PUT", "k%d" % i, "v")) for i in range(5)]
    before = read_all(c)
    c.close()
    srv.stop()
    srv.restart()
    c = ctx.conn()
    wait_until(lambda: not isinstance(c.call("XLEN", ALL), RespError), timeout=10,
               what="a ready leader")
    eq(read_all(c), before, "the same ids and entries from the log")
    eq([i for i, _ in read_all(c, "%d-0" % revs[2])], ["%d-0" % r for r in revs[3:]])


def test_watch_resumes_by_id_across_a_leader_kill_without_gap_or_duplicate(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    writes = []
    seen = []
    last = "0"
    w = Conn(leader.port, timeout=5)
    stop_at = time.monotonic() + 30
    killed = False
    n = 0
    while time.monotonic() < stop_at and n < 60:
        try:
            with Conn(leader.port, timeout=5) as c:
                r = c.call("PUT", "w/%d" % n, str(n))
            if isinstance(r, int):
                writes.append(("w/%d" % n, r))
                n += 1
            else:
                raise ConnectionError(str(r))
            for i, f in entries(w.call("XREAD", "COUNT", 7, "STREAMS", ALL + ":w/", last),
                                ALL + ":w/"):
                seen.append((i, f["name"]))
                last = i
        except Exception:
            leader = ready_leader([s for s in servers if s.running()], timeout=20)
            w = Conn(leader.port, timeout=5)
            continue
        if n == 20 and not killed:
            leader.kill9()
            killed = True
    assert killed and n >= 40, (killed, n)
    leader = ready_leader([s for s in servers if s.running()], timeout=20)
    w = Conn(leader.port, timeout=5)
    while True:
        got = entries(w.call("XREAD", "COUNT", 7, "STREAMS", ALL + ":w/", last), ALL + ":w/")
        if not got:
            break
        for i, f in got:
            seen.append((i, f["name"]))
            last = i
    ids = [i for i, _ in seen]
    eq(len(ids), len(set(ids)), "no duplicate")
    eq(ids, sorted(ids, key=idkey), "in id order")
    acked = {name: "%d-0" % rev for name, rev in writes}
    for name, i in acked.items():
        assert (i, name) in seen, "acknowledged write %s at %s was not delivered" % (name, i)
    # every delivered event is a PUT the log holds: an unacknowledged one may have applied too
    with Conn(leader.port) as c:
        for i, name in seen:
            kv = c.call("KV.GET", name)
            assert kv is not None, name


def test_watch_slow_reader_is_dropped_at_its_buffer_and_resumes(ctx):
    ctx.server("--event-buffer", "65536", "--event-value-max", "4096")
    c = ctx.conn()
    val = "v" * 4000
    revs = [expect_int(c.call("PUT", "k%d" % (i % 50), val)) for i in range(600)]
    slow = Conn(ctx.srv.port, timeout=10)
    # one write the server reads whole: what it has not parsed when it closes is in its own
    # buffer, not the kernel's (unread kernel data would turn the close into a reset)
    slow.send_raw(encode_command("XREAD", "COUNT", 100, "STREAMS", ALL, "0") * 200)
    time.sleep(2.0)
    last_err = None
    got = 0
    while True:
        try:
            r = slow.read_reply(timeout=5)
        except Exception:
            break
        if isinstance(r, RespError):
            last_err = r
        else:
            got += 1
    assert last_err is not None and last_err.text.startswith("SLOWREADER"), (got, last_err)
    assert "last id sent" in last_err.text, last_err
    resume = last_err.text.split("last id sent ")[1].split(":")[0]
    rest, after = [], resume
    while True:  # a reply stops at --event-buffer bytes: read on from its last id
        got = read_all(c, after)
        if not got:
            break
        rest += got
        after = got[-1][0]
    eq(rest[-1][0], "%d-0" % revs[-1], "resumes up to the newest")
    eq(len(rest), len([r for r in revs if idkey("%d-0" % r) > idkey(resume)]), "no gap")
