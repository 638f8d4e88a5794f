# SPDX-License-Identifier: Apache-2.0
"""Clients of the event stream and of read-write locks (docs/client.md, docs/protocol.md "Watch"):
libfencelock's fl_watch (through tests/client/fl_probe.c) and `fencelock watch` deliver every
event of a burst of PUTs once, in order, across a kill -9 of the leader of a 3-node cluster,
equal to the log's own history and covering every acknowledged write; -COMPACTED reaches the
callback and the CLI; redis-py, ioredis and redis-cli read the streams with their own XREAD;
fl_lock_shared and `fencelock lock --shared` let two readers hold a lock at once while a
writer waits for both."""

import base64
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time

from cluster import ready_leader, start_cluster
from helpers import eq, expect_int, lock_info, revision, wait_until, waiters
from resp import Conn, text
from resp import _Incomplete as RespIncomplete
from resp import _parse as resp_parse
from test_cli import cli_path
from test_client import Probe
from test_examples import NODE_DIR, _node_cmd

ALL = "fencelock:events"


def idkey(i):
    rev, n = i.split("-")
    return (int(rev), int(n))


def endpoints(servers):
    return ",".join("127.0.0.1:%d" % s.port for s in servers)


def history(port, stream, after):
    """[(id, name)] of the stream after `after`: the log's own record, read in pages."""
    out = []
    with Conn(port, timeout=10) as c:
        while True:
            r = c.call("XREAD", "COUNT", 1000, "STREAMS", stream, after)
            if r is None:
                return out
            ents = r[0][1]
            for i, f in ents:
                fields = {text(f[k]): text(f[k + 1]) for k in range(0, len(f), 2)}
                out.append((text(i), fields.get("name", "")))
            after = text(ents[-1][0])


class CliWatch:
    """`fencelock watch ... --json` in the background; its stdout lines parsed as they come."""

    def __init__(self, ctx, ep, *args):
        self.proc = subprocess.Popen([cli_path(ctx), "--endpoints", ep, "--json", "watch"] +
                                     [str(a) for a in args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.events = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        ctx.defer(self.kill)

    def _read(self):
        for line in self.proc.stdout:
            ev = json.loads(line)  # every line must be one JSON object
            with self.lock:
                self.events.append(ev)

    def ids(self):
        with self.lock:
            return [e["id"] for e in self.events]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=10)
        return rc, self.proc.stderr.read()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def put_burst_across_kill(servers, prefix, total=60, kill_at=20):
    """PUT prefix0..prefix{total-1}, kill -9 the leader after kill_at acknowledged writes.
    Returns [(name, rev)] of the acknowledged writes (a write whose answer was lost may have
    applied too: it is then in the history, and no check below assumes otherwise)."""
    leader = ready_leader(servers)
    writes, n, killed = [], 0, False
    stop_at = time.monotonic() + 40
    while time.monotonic() < stop_at and n < total:
        try:
            with Conn(leader.port, timeout=5) as c:
                r = c.call("PUT", "%s%d" % (prefix, n), str(n))
            if not isinstance(r, int):
                raise ConnectionError(str(r))
            writes.append(("%s%d" % (prefix, n), r))
            n += 1
        except Exception:  # noqa: BLE001 - the leader is gone or moved: find the new one
            leader = ready_leader([s for s in servers if s.running()], timeout=20)
            continue
        if n == kill_at and not killed:
            leader.kill9()
            killed = True
    assert killed and n == total, (killed, n)
    return writes


def check_delivered(what, ids, names, writes, hist):
    eq(len(ids), len(set(ids)), "%s: no duplicate" % what)
    eq(ids, sorted(ids, key=idkey), "%s: in id order" % what)
    eq(list(zip(ids, names)), hist, "%s: exactly the log's events after the start" % what)
    got = set(zip(ids, names))
    for name, rev in writes:
        assert ("%d-0" % rev, name) in got, "%s: acknowledged %s at %d missing" % (what, name, rev)


def test_fl_watch_and_cli_watch_deliver_a_burst_once_in_order_across_a_leader_kill9(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    ep = endpoints(servers)
    with Conn(leader.port) as c:
        start = "%d-0" % revision(c)
    probe = Probe(ctx, "watch", ep, "b/", start, "stop")
    probe.expect("watching")
    cli = CliWatch(ctx, ep, "b/", "--from", start)
    # both read from the leader before the burst starts (the CLI takes a while to start)
    with Conn(leader.port) as c:
        warm = "%d-0" % expect_int(c.call("PUT", "b/warm", "warm"))
    eq(probe.expect("event ").split(" ")[0], warm)
    wait_until(lambda: warm in cli.ids(), timeout=20, what="the CLI printed the first write")
    writes = put_burst_across_kill(servers, "b/")
    last = "%d-0" % writes[-1][1]
    got = [(warm, "b/warm")]
    while got[-1][0] != last:
        i, typ, name = probe.expect("event ", timeout=30).split(" ")
        eq(typ, "put")
        got.append((i, name))
    wait_until(lambda: last in cli.ids(), timeout=30, what="the CLI printed the last write")
    probe.say()
    end = probe.expect("end ")
    assert end.startswith("ok %s" % last), end
    assert any(s.startswith("resumed ") for s in probe.seen), \
        "the leader change was reported (RESUMED): %r" % probe.seen
    rc, err = cli.stop()
    eq(rc, 0, "fencelock watch exit status on SIGTERM (%s)" % err)
    assert "resumed after" in err, err
    leader = ready_leader([s for s in servers if s.running()], timeout=20)
    hist = [(i, n) for i, n in history(leader.port, ALL + ":b/", start) if idkey(i) <= idkey(last)]
    check_delivered("fl_watch", [i for i, _ in got], [n for _, n in got], writes, hist)
    with cli.lock:
        evs = [e for e in cli.events if idkey(e["id"]) <= idkey(last)]
    check_delivered("fencelock watch", [e["id"] for e in evs], [e["name"] for e in evs], writes,
                    hist)
    for e in evs[1:]:  # every field of the JSON line as the server sent it
        eq((e["type"], e["value"], e["mod_rev"]), ("put", e["name"][2:], idkey(e["id"])[0]), e)


test_fl_watch_and_cli_watch_deliver_a_burst_once_in_order_across_a_leader_kill9.timeout = 120


def test_fl_watch_and_cli_report_compacted(ctx):
    ctx.server("--event-history", "5")
    c = ctx.conn()
    revs = [expect_int(c.call("PUT", "k%d" % i, "v")) for i in range(20)]
    ep = "127.0.0.1:%d" % ctx.srv.port
    stop = Probe(ctx, "watch", ep, "", "1", "stop")
    oldest = stop.expect("compacted ")
    assert idkey(oldest) > (1, 0), oldest
    stop.say()
    end = stop.expect("end ")
    assert end.startswith("events no longer retained - COMPACTED oldest=%s" % oldest), end
    # told, the callback may go on from the oldest retained event: nothing after it is lost
    go = Probe(ctx, "watch", ep, "", "1", "continue")
    eq(go.expect("compacted "), oldest)
    first = go.expect("event ").split(" ")[0]
    eq(first, oldest, "on from the oldest retained")
    ids = [first]
    while ids[-1] != "%d-0" % revs[-1]:
        ids.append(go.expect("event ").split(" ")[0])
    eq(len(ids), 5, "the whole retained window, once")
    go.say()
    go.expect("end ok")
    p = subprocess.run([cli_path(ctx), "--endpoints", ep, "watch", "--from", "1"],
                       capture_output=True, text=True, timeout=20)
    eq(p.returncode, 1, "fencelock watch --from a compacted id: %s" % p.stderr)
    assert "COMPACTED oldest=%s" % oldest in p.stderr, p.stderr
    eq(p.stdout, "", "nothing printed")


def test_fl_lock_shared_two_readers_hold_at_once_and_a_writer_waits_for_both(ctx):
    ctx.server()
    ep = "127.0.0.1:%d" % ctx.srv.port
    a = Probe(ctx, "shared", ep, "rw", 5000, 10000)
    b = Probe(ctx, "shared", ep, "rw", 5000, 10000)
    ta, tb = int(a.expect("granted")), int(b.expect("granted"))
    w = Probe(ctx, "lock", ep, "rw", 20000, 10000)
    sw = int(w.expect("session"))
    c = ctx.conn()
    wait_until(lambda: waiters(c, "rw") == [sw], timeout=5, what="the writer queued")
    info = lock_info(c, "rw")
    eq((text(info["mode"]), len(info["holders"])), ("shared", 2), info)
    eq(c.call("FENCE.CHECK", "rw", ta), "OK", "a shared token is current")
    p = subprocess.run([cli_path(ctx), "--endpoints", ep, "--json", "lock-info", "rw"],
                       capture_output=True, text=True, timeout=20)
    j = json.loads(p.stdout)
    eq((j["mode"], j["holder"], j["waiters"], sorted(h["token"] for h in j["holders"])),
       ("shared", 0, [sw], sorted([ta, tb])), str(j))
    out = subprocess.run([cli_path(ctx), "--endpoints", ep, "lock-info", "rw"],
                         capture_output=True, text=True, timeout=20).stdout
    assert "mode:       shared" in out and "holders:    2" in out and "token %d" % tb in out, out
    a.say()
    eq(a.expect("unlock"), "ok")
    time.sleep(0.3)  # one reader left: the writer still waits (no "granted" line may come)
    eq(waiters(c, "rw"), [sw], "the writer waits for the last reader")
    b.say()
    eq(b.expect("unlock"), "ok")
    tw = int(w.expect("granted"))
    assert tw > max(ta, tb), (ta, tb, tw)
    w.say()
    eq(w.expect("unlock"), "ok")
    for p in (a, b, w):
        eq(p.wait(), 0)


READER = ("touch r$ME; n=0; while [ ! -e r$OTHER ] || [ ! -e go ]; do n=$((n+1)); "
          "[ $n -lt 300 ] || exit 7; sleep 0.1; done; echo $FENCELOCK_MODE > done$ME")


def test_cli_lock_shared_readers_run_together_and_a_writer_runs_after_them(ctx):
    ctx.server()
    ep = "127.0.0.1:%d" % ctx.srv.port
    d = ctx.tmp("rw")
    os.makedirs(d, exist_ok=True)
    # each reader waits (bounded) until the other reader runs too: both exit 0 only if the
    # two held the lock at the same time
    readers = [subprocess.Popen([cli_path(ctx), "--endpoints", ep, "lock", "--shared", "rw",
                                 "--", "sh", "-c", READER], cwd=d,
                                env=dict(os.environ, ME=str(i), OTHER=str(1 - i)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for i in (0, 1)]
    for p in readers:
        ctx.defer(p.kill)
    wait_until(lambda: all(os.path.exists(os.path.join(d, "r%d" % i)) for i in (0, 1)),
               timeout=20, what="both readers running")
    writer = subprocess.Popen([cli_path(ctx), "--endpoints", ep, "lock", "rw", "--", "sh", "-c",
                               "cat done0 done1; echo $FENCELOCK_MODE"], cwd=d,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ctx.defer(writer.kill)
    c = ctx.conn()
    wait_until(lambda: len(waiters(c, "rw")) == 1, timeout=10, what="the writer queued")
    eq(text(lock_info(c, "rw")["mode"]), "shared")
    open(os.path.join(d, "go"), "w").close()
    for p in readers:
        out, err = p.communicate(timeout=30)
        eq(p.returncode, 0, "reader: %s" % err)
    out, err = writer.communicate(timeout=30)
    eq((writer.returncode, out.split()), (0, ["shared", "shared", "exclusive"]),
       "the writer ran after both readers ended: %s" % err)
    eq(lock_info(c, "rw"), None, "released")


REDIS_PY = r"""
import json, sys, threading, time
import redis
port, stream = int(sys.argv[1]), sys.argv[2]
r = redis.Redis(port=port, decode_responses=True)
out = {"all": r.xread({stream: "0"}, count=100)}
last = out["all"][0][1][-1][0]
def later():
    time.sleep(0.3)
    redis.Redis(port=port).execute_command("PUT", "rp/late", "z")
threading.Thread(target=later).start()
out["blocked"] = r.xread({stream: last}, block=5000)
out["len"] = r.xlen(stream)
print(json.dumps(out))
"""

IOREDIS = r"""
const Redis = require(process.argv[2] + "/node_modules/ioredis");
(async () => {
  const port = +process.argv[3], stream = process.argv[4];
  const r = new Redis({ port, maxRetriesPerRequest: 1 });
  const out = {};
  out.all = await r.xread("COUNT", 100, "STREAMS", stream, "0");
  const last = out.all[0][1][out.all[0][1].length - 1][0];
  setTimeout(async () => {
    const w = new Redis({ port, maxRetriesPerRequest: 1 });
    await w.call("PUT", "io/late", "z");
    w.disconnect();
  }, 300);
  out.blocked = await r.xread("BLOCK", 5000, "STREAMS", stream, last);
  r.disconnect();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
"""


def entries_of(reply):
    """[(id, {field: value})] of the one stream of an XREAD reply decoded by a library."""
    return [(i, f if isinstance(f, dict) else {f[k]: f[k + 1] for k in range(0, len(f), 2)})
            for i, f in reply[0][1]]  # redis-py decodes the fields into a dict, ioredis not


def expected(c, stream):
    return [(text(i), {text(f[k]): text(f[k + 1]) for k in range(0, len(f), 2)})
            for i, f in c.call("XREAD", "COUNT", 100, "STREAMS", stream, "0")[0][1]]


def test_redis_py_reads_the_streams_with_its_own_xread(ctx):
    c = ctx.conn()
    for k in ("rp/a", "rp/b", "other"):
        expect_int(c.call("PUT", k, "v-" + k))
    script = ctx.tmp("xread.py")
    with open(script, "w") as f:
        f.write(REDIS_PY)
    p = subprocess.run(["/usr/bin/python3", script, str(ctx.srv.port), ALL + ":rp/"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, "redis-py failed:\n%s" % p.stderr
    out = json.loads(p.stdout)
    want = expected(c, ALL + ":rp/")
    eq(want[-1][1]["name"], "rp/late")
    eq(out["all"][0][0], ALL + ":rp/")
    eq(entries_of(out["all"]), want[:2], "xread from 0")
    eq(entries_of(out["blocked"]), want[2:], "xread block woken by the next PUT")
    eq(out["len"], 3)


def test_ioredis_reads_the_streams_with_its_own_xread(ctx):
    node = _node_cmd()[0]
    c = ctx.conn()
    for k in ("io/a", "io/b", "other"):
        expect_int(c.call("PUT", k, "v-" + k))
    script = ctx.tmp("xread.js")
    with open(script, "w") as f:
        f.write(IOREDIS)
    p = subprocess.run([node, script, NODE_DIR, str(ctx.srv.port), ALL + ":io/"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, "ioredis failed:\n%s%s" % (p.stdout, p.stderr)
    out = json.loads(p.stdout)
    want = expected(c, ALL + ":io/")
    eq(want[-1][1]["name"], "io/late")
    eq(entries_of(out["all"]), want[:2], "xread from 0")
    eq(entries_of(out["blocked"]), want[2:], "xread block woken by the next PUT")


def test_redis_cli_reads_the_streams_with_xread(ctx):
    exe = shutil.which("redis-cli")
    assert exe, "redis-cli not installed (apt-get install redis-tools)"
    c = ctx.conn()
    r1 = expect_int(c.call("PUT", "rc/a", "hello world"))
    expect_int(c.call("PUT", "zz", "x"))
    base = [exe, "-p", str(ctx.srv.port)]
    p = subprocess.run(base + ["XREAD", "COUNT", "10", "STREAMS", ALL + ":rc/", "0"],
                       capture_output=True, text=True, timeout=20)
    eq(p.stdout.split("\n")[:8], [ALL + ":rc/", "%d-0" % r1, "type", "put", "name", "rc/a",
                                  "value", "hello world"], p.stdout)
    blocked = subprocess.Popen(base + ["XREAD", "BLOCK", "10000", "STREAMS", ALL + ":rc/", "$"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ctx.defer(blocked.kill)
    # PUT until the blocked redis-cli answers (it may not have sent its XREAD yet): the first
    # PUT after its XREAD is what it prints
    puts = []
    for n in range(50):
        puts.append(expect_int(c.call("PUT", "rc/b%d" % n, "2")))
        try:
            out, err = blocked.communicate(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        raise AssertionError("redis-cli XREAD BLOCK was never woken")
    lines = out.split("\n")
    assert lines[1] in ["%d-0" % r for r in puts], (lines, puts)
    eq([lines[0]] + lines[2:6], [ALL + ":rc/", "type", "put", "name",
                                 "rc/b%d" % puts.index(idkey(lines[1])[0])], out + err)


def bulk(s):
    s = s.encode() if isinstance(s, str) else s
    return b"$%d\r\n%s\r\n" % (len(s), s)


def entry(i, name):
    return b"*2\r\n" + bulk(i) + b"*4\r\n" + bulk("type") + bulk("put") + bulk("name") + \
        bulk(name)


class FakeServer:
    """A RESP server that answers the watcher's XREADs from a script, one reply (bytes, and
    whether to close the connection after it) per XREAD, and records the ids asked for."""

    def __init__(self, ctx, script, members_delay=0.0):
        self.script = list(script)
        self.asked = []
        self.members_delay = members_delay  # the first non-XREAD (AUTH or CLUSTER.MEMBERS) is
        #                                     answered this late
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(8)
        self.port = self.lsock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        ctx.defer(self.lsock.close)

    def _accept(self):
        while True:
            try:
                s, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s):
        buf = bytearray()
        with s:
            while True:
                try:
                    req, p = resp_parse(buf, 0)
                except RespIncomplete:
                    chunk = s.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                    continue
                del buf[:p]
                cmd = [text(a) for a in req]
                if cmd[0].upper() != "XREAD":
                    delay, self.members_delay = self.members_delay, 0.0
                    time.sleep(delay)  # a frozen node: the kernel accepted, nobody answers
                    # AUTH: any non-error reply will do; CLUSTER.MEMBERS: nobody else to learn
                    s.sendall(b"*0\r\n")
                    continue
                self.asked.append(cmd[-1])
                reply, close = self.script.pop(0) if self.script else (b"*-1\r\n", False)
                if reply is None:  # never answer: hold the connection until the client drops it
                    while s.recv(65536):
                        pass
                    return
                s.sendall(reply)
                if close:
                    return


def test_fl_watch_resumes_after_slowreader_from_its_last_id_and_ends_on_a_bad_reply(ctx):
    stream = ALL.encode()
    fake = FakeServer(ctx, [
        (b"*1\r\n*2\r\n" + bulk(stream) + b"*2\r\n" + entry("1-0", "a") + entry("2-0", "b"),
         False),
        (b"-SLOWREADER over --event-buffer 65536 unread reply bytes; last id sent 9-0: "
         b"reconnect and XREAD from it\r\n", True),
        (b"*1\r\n*2\r\n" + bulk(stream) + b"*1\r\n" + entry("3-0", "c"), False),
        (b":5\r\n", False),  # not an XREAD reply: the watcher ends, nothing is delivered
    ])
    probe = Probe(ctx, "watch", "127.0.0.1:%d" % fake.port, "", "0", "stop")
    eq([probe.expect("event ") for _ in range(2)], ["1-0 put a", "2-0 put b"])
    resumed = probe.expect("resumed ")
    assert resumed.startswith("2-0 SLOWREADER"), resumed
    eq(probe.expect("event "), "3-0 put c")
    wait_until(lambda: len(fake.asked) >= 4, timeout=10, what="the fourth XREAD")
    probe.say("ends")  # the probe waits for the watcher to end by itself, before any stop
    eq(probe.expect("done-by-itself "), "1")
    end = probe.expect("end ")
    eq(end, "protocol error 3-0 XREAD: a reply of an unexpected shape")
    # after the disconnect it asked from the last id it delivered, not from the server's
    eq(fake.asked, ["0-0", "2-0", "2-0", "3-0"])


def test_fl_watch_drops_a_connection_whose_first_answer_came_too_late(ctx):
    """A node frozen right after accepting (SIGSTOP) answers CLUSTER.MEMBERS after the probe
    gave up. That late answer must not be read as the XREAD's reply (torture seed 484069675
    got "*0" for an XREAD that way): the client drops the connection and asks on a new one."""
    stream = ALL.encode()
    fake = FakeServer(ctx, [(b"*1\r\n*2\r\n" + bulk(stream) + b"*1\r\n" + entry("1-0", "a"),
                             False)], members_delay=2.5)
    probe = Probe(ctx, "watch", "127.0.0.1:%d" % fake.port, "", "0", "stop")
    eq(probe.expect("event ", timeout=20), "1-0 put a")
    probe.say()
    eq(probe.expect("end "), "ok 1-0")
    eq(fake.asked[:1], ["0-0"], "the XREAD went out once, on the new connection")


def test_fl_watch_an_auth_answered_too_late_is_unavailable_not_a_wrong_password(ctx):
    """The same freeze at AUTH (the first command of a connection under --acl-file): the call
    is retried on a new connection, not failed with FL_EAUTH. AUTH is bounded by the read's
    whole deadline (BLOCK 500 ms + 2 s), so the freeze outlasts it by far: an AUTH answered
    just in time would let that connection's XREAD take the script's event and lose it with
    the deadline."""
    stream = ALL.encode()
    fake = FakeServer(ctx, [(b"*1\r\n*2\r\n" + bulk(stream) + b"*1\r\n" + entry("1-0", "a"),
                             False)], members_delay=4.5)
    probe = Probe(ctx, "watch", "127.0.0.1:%d" % fake.port, "", "0", "stop",
                  env={"FL_PROBE_PASSWORD": "pw"})
    eq(probe.expect("event ", timeout=20), "1-0 put a")
    probe.say()
    eq(probe.expect("end "), "ok 1-0")


def test_fl_watch_reports_an_interruption_resumes_and_stops_while_nobody_answers(ctx):
    stream = ALL.encode()
    # three reads nobody answers (each is given up after the connect timeout plus BLOCK), more
    # than a read's 2 s: the callback hears of the interruption once, then of the resume
    fake = FakeServer(ctx, [(None, False)] * 3 + [
        (b"*1\r\n*2\r\n" + bulk(stream) + b"*1\r\n" + entry("1-0", "a"), False)])
    probe = Probe(ctx, "watch", "127.0.0.1:%d" % fake.port, "", "0", "stop")
    assert probe.expect("interrupted ", timeout=20).startswith("- "), probe.seen
    assert probe.expect("resumed ", timeout=20).startswith("- "), probe.seen
    eq(probe.expect("event ", timeout=20), "1-0 put a")
    eq(len([s for s in probe.seen if s.startswith("interrupted")]), 1, "told once")
    probe.say()
    eq(probe.expect("end "), "ok 1-0")
    eq(fake.asked[:4], ["0-0"] * 4, "every retry asks from the same place")
    # nothing listens at all: fl_watch_stop still ends the retrying watcher
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    port = lsock.getsockname()[1]
    lsock.close()
    dead = Probe(ctx, "watch", "127.0.0.1:%d" % port, "", "0", "stop")
    assert "refused" in dead.expect("interrupted ", timeout=20), dead.seen
    dead.say()
    eq(dead.expect("end "), "ok -")
    eq(dead.wait(), 0)


def test_cli_watch_lines_and_json_escape_every_value(ctx):
    c = ctx.conn()
    values = [b"plain", b'he said "hi"\nnext\tcol\\', "caf\u00e9 \u2713".encode(), b"\xff\x00z",
              b"", b"a=b"]
    revs = [expect_int(c.call("PUT", "e/%d" % i, v)) for i, v in enumerate(values)]
    ep = "127.0.0.1:%d" % ctx.srv.port
    base = [cli_path(ctx), "--endpoints", ep]
    p = subprocess.run(base + ["--json", "watch", "e/", "--from", "0", "--count", str(len(values))],
                       capture_output=True, timeout=30)
    eq(p.returncode, 0, p.stderr)
    lines = p.stdout.decode().splitlines()
    eq(len(lines), len(values))
    for line, v, rev in zip(lines, values, revs):
        j = json.loads(line)
        try:
            got = j["value"].encode()
            assert "value_base64" not in j, j
            v.decode("utf-8")
        except KeyError:
            got = base64.b64decode(j["value_base64"])
        eq((j["id"], j["type"], j["mod_rev"], got), ("%d-0" % rev, "put", rev, v), line)
    p = subprocess.run(base + ["watch", "e/", "--from", "0", "--count", str(len(values))],
                       capture_output=True, timeout=30)
    eq(p.returncode, 0, p.stderr)
    eq(p.stdout.decode().splitlines(), [
        "%d-0 put e/0 value=plain mod_rev=%d" % (revs[0], revs[0]),
        '%d-0 put e/1 value="he said \\"hi\\"\\nnext\\tcol\\\\" mod_rev=%d' % (revs[1], revs[1]),
        '%d-0 put e/2 value="caf\\xc3\\xa9 \\xe2\\x9c\\x93" mod_rev=%d' % (revs[2], revs[2]),
        '%d-0 put e/3 value="\\xff\\x00z" mod_rev=%d' % (revs[3], revs[3]),
        '%d-0 put e/4 value="" mod_rev=%d' % (revs[4], revs[4]),
        '%d-0 put e/5 value="a=b" mod_rev=%d' % (revs[5], revs[5])])
