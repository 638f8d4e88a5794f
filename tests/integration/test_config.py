# SPDX-License-Identifier: Apache-2.0
"""fencelockd's settings from --config FILE and FENCELOCK_* variables, --print-config,
--log-format json, and the log lines an operator needs (why an election started, a --join that
reaches nobody)."""

import json
import os
import subprocess

from cluster import TIMING, info, new_server, ready_leader, start_cluster
from helpers import eq, expect_int, wait_until
from resp import Conn, RespError
from server import Server, free_port


def write(ctx, name, text):
    path = ctx.tmp(name)
    with open(path, "wb") as f:
        f.write(os.fsencode(text))
    return path


def run(ctx, *args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("FENCELOCK_")}
    e.update(env or {})
    return subprocess.run([ctx.binary] + [str(a) for a in args], capture_output=True, text=True,
                          env=e, timeout=30, cwd=ctx.workdir)


def json_lines(srv):
    """Every line the node wrote, each valid UTF-8 and one JSON object (the harness's own
    '=== incarnation' lines aside)."""
    out = []
    with open(srv.log_path, "rb") as f:
        raw = f.read()
    for line in raw.splitlines():
        if line.startswith(b"=== "):  # the harness's own line
            continue
        try:
            obj = json.loads(line.decode("utf-8"))
        except ValueError:
            raise AssertionError("log line is not UTF-8 JSON: %r" % line[:300])
        assert set(obj) == {"time", "level", "node", "msg"}, "fields of %r" % (obj,)
        assert obj["level"] in ("debug", "info", "warn", "error"), obj
        assert obj["time"].endswith("Z") and obj["node"] == srv.node_id, obj
        out.append(obj)
    return out


def test_config_file_starts_a_node_env_and_flags_override_it(ctx):
    srv = Server(ctx.binary, ctx.tmp("node"), env={"FENCELOCK_MAX_KEY": "16"})
    # A data dir whose name holds a quote, a backslash, a tab and a byte that is not UTF-8: the
    # log lines naming it must stay valid JSON, the odd byte written as \u00ff.
    odd = b'/da"ta\\\tdir\xff'
    srv.data_dir = os.fsdecode(os.fsencode(srv.data_dir) + odd)
    conf = write(ctx, "node.conf", "\n".join([
        "# a node configured by its file alone",
        "id = 1",
        "data-dir = %s" % srv.data_dir,
        "listen = 127.0.0.1:%d" % srv.port,
        "raft-listen = 127.0.0.1:%d" % srv.raft_port,
        "http-listen = 127.0.0.1:%d  # metrics" % srv.http_port,
        "max-key = 8",
        "max-value = 4",
        "log-format = json",
        ""]))
    srv.argv = lambda: [srv.binary, "--config", conf, "--max-value", "6"]
    ctx.servers.append(srv)
    srv.start()
    c = ctx.conn(srv)
    expect_int(c.call("PUT", "k" * 16, "v"), "a 16-byte key: FENCELOCK_MAX_KEY over the file's 8")
    r = c.call("PUT", "k" * 17, "v")
    assert isinstance(r, RespError) and r.code == "TOOLARGE", "17-byte key: %r" % (r,)
    expect_int(c.call("PUT", "v", "x" * 6), "a 6-byte value: --max-value over the file's 4")
    r = c.call("PUT", "v", "x" * 7)
    assert isinstance(r, RespError) and r.code == "TOOLARGE", "7-byte value: %r" % (r,)
    srv.stop()
    lines = json_lines(srv)
    assert len(lines) >= 3, "too few log lines: %r" % lines
    assert any(o["msg"].startswith("leader ready in term") for o in lines), \
        "no 'leader ready' line: %r" % [o["msg"] for o in lines]
    assert any(o["msg"] == "settings from config file %s and environment FENCELOCK_MAX_KEY "
               "(flags override them; --print-config shows each)" % conf for o in lines), \
        "no line naming the sources: %r" % [o["msg"] for o in lines]
    named = os.fsencode(srv.data_dir)[:-1].decode() + "\u00ff"
    assert any(o["msg"].endswith("data in " + named) for o in lines), \
        "no line naming %r: %r" % (named, [o["msg"] for o in lines])


def test_config_bad_line_refuses_to_start_naming_file_and_line(ctx):
    conf = write(ctx, "bad.conf", "# ok\nmax-clients = 10\nmax-clinets = 11\n")
    r = run(ctx, "--config", conf)
    eq(r.returncode, 2, "exit status; stderr %r" % r.stderr)
    assert "%s:3: unknown key 'max-clinets'" % conf in r.stderr, r.stderr
    conf = write(ctx, "bad2.conf", "\n\nelection-ms = soon\n")
    r = run(ctx, "--config", conf)
    eq(r.returncode, 2)
    assert "%s:3: --election-ms wants a number" % conf in r.stderr, r.stderr
    r = run(ctx, env={"FENCELOCK_HEARTBEAT_MS": "often"})
    eq(r.returncode, 2)
    assert "environment FENCELOCK_HEARTBEAT_MS: --heartbeat-ms wants a number" in r.stderr, \
        r.stderr


def test_print_config_names_each_source_and_hides_secrets(ctx):
    pw = write(ctx, "peer.pw", "file-secret\n")
    conf = write(ctx, "p.conf", "max-args = 33\npeer-user = node\npeer-password-file = %s\n"
                 "insecure-no-auth = yes\n" % pw)
    r = run(ctx, "--config", conf, "--id", "4", "--print-config",
            env={"FENCELOCK_MAX_CLIENTS": "99", "FENCELOCK_PEER_PASSWORD": "env-secret"})
    eq(r.returncode, 0, "stderr %r" % r.stderr)
    lines = r.stdout.splitlines()
    for want in ("max-args = 33  # file:1", "peer-password-file = %s  # file:3" % pw,
                 "insecure-no-auth = true  # file:4", "max-clients = 99  # env "
                 "FENCELOCK_MAX_CLIENTS", "id = 4  # flag", "heartbeat-ms = 40  # default",
                 "# acl-file =  # default (unset)"):
        assert want in lines, "%r not in --print-config output:\n%s" % (want, r.stdout)
    assert "file-secret" not in r.stdout and "env-secret" not in r.stdout, r.stdout
    assert "# FENCELOCK_PEER_PASSWORD is set (not shown)" in lines, r.stdout
    # The output is a config file that gives the same settings.
    again = write(ctx, "again.conf", r.stdout)
    r2 = run(ctx, "--config", again, "--print-config")
    eq(r2.returncode, 0, "re-read: %r" % r2.stderr)
    eq([l.split("#")[0] for l in r2.stdout.splitlines()[1:]],
       [l.split("#")[0] for l in lines[1:-1]], "settings read back (the password line aside)")


def test_config_flag_equals_value_and_units(ctx):
    """`--flag=value` as well as `--flag value`, and sizes and durations with a unit, from every
    source: a node started so serves the limits they give, and --print-config shows them with
    the largest unit that divides them (in the plain unit when none does)."""
    srv = Server(ctx.binary, ctx.tmp("node"), env={"FENCELOCK_MAX_OUTPUT": "64MiB"},
                 args=["--max-value=4KiB", "--max-key", "1KiB", "--idle-timeout=2m",
                       "--tcp-keepalive", "1h", "--election-ms=500ms"])
    ctx.servers.append(srv)
    srv.start()
    c = ctx.conn(srv)
    expect_int(c.call("PUT", "k", "x" * 4096), "a 4096-byte value under --max-value=4KiB")
    r = c.call("PUT", "k", "x" * 4097)
    assert isinstance(r, RespError) and r.code == "TOOLARGE", "4097-byte value: %r" % (r,)
    expect_int(c.call("PUT", "k" * 1024, "v"), "a 1024-byte key under --max-key 1KiB")
    srv.stop()
    conf = write(ctx, "units.conf", "max-query-buffer = 16MiB\nauth-timeout = 30s\n")
    r = run(ctx, "--config=%s" % conf, "--print-config", "--max-value=4KiB", "--idle-timeout",
            "2m", "--tcp-keepalive=1h", "--insecure-raft=false", "--listen=127.0.0.1:7999",
            env={"FENCELOCK_MAX_OUTPUT": "64MiB"})
    eq(r.returncode, 0, "stderr %r" % r.stderr)
    lines = r.stdout.splitlines()
    for want in ("max-value = 4KiB  # flag", "idle-timeout = 2m  # flag",
                 "tcp-keepalive = 1h  # flag", "insecure-raft = false  # flag",
                 "max-output = 64MiB  # env FENCELOCK_MAX_OUTPUT",
                 "max-query-buffer = 16MiB  # file:1", "auth-timeout = 30s  # file:2",
                 "heartbeat-ms = 40  # default", "listen = 127.0.0.1:7999  # flag"):
        assert want in lines, "%r not in --print-config output:\n%s" % (want, r.stdout)
    # A unit the setting does not take is refused, naming what it does take.
    r = run(ctx, "--max-output=64MB")
    eq(r.returncode, 2, "exit status; stderr %r" % r.stderr)
    assert "--max-output wants a number in 1024..1099511627776 bytes (or with a unit: " \
        "512KiB, 64MiB, 1GiB, 1TiB), got '64MB'" in r.stderr, r.stderr
    r = run(ctx, "--tcp-keepalive", "1500ms")
    eq(r.returncode, 2, "exit status; stderr %r" % r.stderr)
    assert "--tcp-keepalive wants a number in 0..86400 seconds" in r.stderr, r.stderr


def test_join_to_nobody_is_logged_once_then_its_answer(ctx):
    dead = free_port()  # nothing listens here until the member starts on it
    joiner = new_server(ctx, 2, ["--join", "127.0.0.1:%d" % dead] + TIMING)
    joiner.start(wait=False)
    quiet = "join: no answer from 127.0.0.1:%d for " % dead
    wait_until(lambda: quiet in joiner.log_text(), timeout=30, interval=0.2,
               what="the join silence logged")
    assert "; still trying" in joiner.log_text().split(quiet, 1)[1].splitlines()[0]
    member = new_server(ctx, 1, TIMING)
    member.port = dead
    member.start()
    wait_until(lambda: "join: this node is a voter" in joiner.log_text(), timeout=40,
               interval=0.2, what="the joiner a voter")
    log = joiner.log_text()
    assert "join: 127.0.0.1:%d answered after " % dead in log, log[-2000:]
    eq(log.count(quiet), 1, "the silence logged once")


test_join_to_nobody_is_logged_once_then_its_answer.timeout = 90


def test_election_line_names_the_silent_leader(ctx):
    servers = start_cluster(ctx, 3)
    leader = ready_leader(servers)
    term = (info(leader) or {}).get("term")
    # A transfer is an election too, but at the leader's request: said so, not "no message".
    target = next(s for s in servers if s is not leader)
    with Conn(leader.port, timeout=15) as c:
        r = c.call("CLUSTER.TRANSFER", target.node_id, timeout=15)
    assert r == "OK", "CLUSTER.TRANSFER: %r" % (r,)
    want = "raft: starting an election at the leader's request (leadership transfer from " \
        "node %d, term %s)" % (leader.node_id, term)
    wait_until(lambda: want in target.log_text(), timeout=5, interval=0.1,
               what="the transfer's election line on node %d" % target.node_id)
    assert "no message from the leader" not in target.log_text(), target.log_tail(15)
    leader = ready_leader(servers)
    term = (info(leader) or {}).get("term")
    leader.kill9()
    rest = [s for s in servers if s is not leader]
    ready_leader(rest, timeout=20)
    # its process is gone: a survivor names it, by the fast path (its raft port refuses
    # connections) or, when a loaded machine let a follower's timer run out first, by the
    # timeout; either way the line names the silent leader and its term
    fast = "raft: starting an election: the leader (node %d, term %s) is gone, its raft port " \
        "refuses connections" % (leader.node_id, term)
    slow = "raft: starting an election: no message from the leader (node %d, term %s) for " % (
        leader.node_id, term)
    wait_until(lambda: any(fast in s.log_text() or slow in s.log_text() for s in rest),
               timeout=15, interval=0.1, what="a survivor's election line naming node %d"
               % leader.node_id)


test_election_line_names_the_silent_leader.timeout = 60
