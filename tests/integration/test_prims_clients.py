# SPDX-License-Identifier: Apache-2.0
"""Clients of semaphores and elections (docs/client.md): libfencelock's fl_sem_*,
fl_campaign, fl_proclaim, fl_resign, fl_leader and fl_observe (through tests/client/fl_probe.c)
and `fencelock sem`, `elect` and `leader [--observe]`: a limit-1 semaphore runs one command at
a time, an election runs one leader's command at a time and hands over when it exits, an
observer prints the change when a leader's session closes, and a campaign waiting on a 3-node
cluster is granted exactly once across a kill -9 of the server leader."""

import json
import os
import queue
import subprocess
import threading
import time

from cluster import ready_leader, start_cluster
from helpers import eq, wait_until
from resp import Conn, text
from test_cli import cli_path
from test_client import Probe, endpoints
from test_election import candidates
from test_semaphore import sem_info


def ep1(ctx):
    return "127.0.0.1:%d" % ctx.srv.port


def cli(ctx, ep, *args):
    p = subprocess.Popen([cli_path(ctx), "--endpoints", ep] + [str(a) for a in args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ctx.defer(lambda: p.poll() is None and (p.kill(), p.wait()))
    return p


def test_fl_probe_prims_api(ctx):
    p = Probe(ctx, "prims", ep1(ctx))
    summary = p.expect("tests:", timeout=50)
    eq(p.wait(), 0, "fl_probe prims exit status (%s)" % summary)
    assert summary.endswith(" 0 failed") and not summary.startswith("0 passed"), summary


def test_cli_sem_limit_1_second_run_waits_for_the_first(ctx):
    ep = ep1(ctx)
    d = ctx.tmp("sem")
    os.makedirs(d, exist_ok=True)
    first = cli(ctx, ep, "sem", "s1", 1, "--", "sh", "-c",
                "touch %s/a; while [ ! -e %s/go ]; do sleep 0.05; done; echo $FENCELOCK_MODE"
                % (d, d))
    wait_until(lambda: os.path.exists(os.path.join(d, "a")), timeout=20, what="first runs")
    second = cli(ctx, ep, "sem", "s1", 1, "--", "sh", "-c", "touch %s/b" % d)
    c = ctx.conn()
    wait_until(lambda: len((sem_info(c, "s1") or {}).get("waiters") or []) == 1, timeout=10,
               what="the second waits")
    time.sleep(0.3)
    assert not os.path.exists(os.path.join(d, "b")), "the second ran beside the first"
    open(os.path.join(d, "go"), "w").close()
    out, err = first.communicate(timeout=20)
    eq((first.returncode, out.strip()), (0, "semaphore"), err)
    _, err = second.communicate(timeout=20)
    eq(second.returncode, 0, err)
    assert os.path.exists(os.path.join(d, "b"))


def test_cli_elect_one_leader_at_a_time_hands_over_and_observe_prints_it(ctx):
    ep = ep1(ctx)
    d = ctx.tmp("el")
    os.makedirs(d, exist_ok=True)
    obs = cli(ctx, ep, "leader", "e1", "--observe")
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x.strip()) for x in obs.stdout],
                     daemon=True).start()
    eq(lines.get(timeout=20).split()[0], "none", "nobody leads at first")
    script = ("[ -e %s/running ] && exit 9; touch %s/running; touch %s/$ME; "
              "while [ ! -e %s/go$ME ]; do sleep 0.05; done; rm %s/running" % ((d,) * 5))
    a = subprocess.Popen([cli_path(ctx), "--endpoints", ep, "elect", "e1", "va", "--", "sh",
                          "-c", script], env=dict(os.environ, ME="a"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ctx.defer(a.kill)
    wait_until(lambda: os.path.exists(os.path.join(d, "a")), timeout=20, what="a leads")
    la = lines.get(timeout=20).split()
    eq(la[2], "va", la)
    b = subprocess.Popen([cli_path(ctx), "--endpoints", ep, "elect", "e1", "vb", "--", "sh",
                          "-c", script], env=dict(os.environ, ME="b"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ctx.defer(b.kill)
    time.sleep(0.5)
    assert not os.path.exists(os.path.join(d, "b")), "b ran while a led"
    open(os.path.join(d, "goa"), "w").close()
    eq(a.wait(timeout=20), 0, a.stderr.read())
    wait_until(lambda: os.path.exists(os.path.join(d, "b")), timeout=20, what="b leads")
    lb = lines.get(timeout=20).split()
    eq(lb[2], "vb", lb)
    assert int(lb[1]) > int(la[1]), (la, lb)
    open(os.path.join(d, "gob"), "w").close()
    eq(b.wait(timeout=20), 0, b.stderr.read())
    r = subprocess.run([cli_path(ctx), "--endpoints", ep, "leader", "e1"], capture_output=True,
                       text=True, timeout=20)
    eq(r.returncode, 1, "nobody leads after both exited: " + r.stdout + r.stderr)
    obs.send_signal(2)
    eq(obs.wait(timeout=10), 0)


def test_fl_campaign_waiting_through_a_leader_kill9_is_granted_exactly_once(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    ep = endpoints(servers)
    first = Probe(ctx, "campaign", ep, "job", "one", 10000, 5000)
    first.expect("session")
    t1 = int(first.expect("granted"))
    second = Probe(ctx, "campaign", ep, "job", "two", 30000, 5000)
    sid2 = int(second.expect("session"))
    with Conn(leader.port) as c:
        wait_until(lambda: candidates(c, "job") == 1, timeout=10,
                   what="the second candidate (session %d) queued" % sid2)
    leader.kill9()
    first.say()  # resign while the cluster elects: the resign itself must fail over
    eq(first.expect("unlock"), "ok")
    t2 = int(second.expect("granted", timeout=30))
    assert t2 > t1, (t1, t2)
    survivors = [s for s in servers if s is not leader]
    new = ready_leader(survivors)
    with Conn(new.port) as c:
        m = c.call("ELECT.LEADER", "job")
        got = {text(m[i]): m[i + 1] for i in range(0, len(m), 2)}
        eq((got["sid"], got["token"], text(got["value"])), (sid2, t2, "two"))
    second.say()
    eq(second.expect("unlock"), "ok")
    for p in (first, second):
        eq(p.wait(), 0)



def test_cli_leader_observe_prints_the_change_when_the_leaders_session_closes(ctx):
    ep = ep1(ctx)
    lead = Probe(ctx, "campaign", ep, "e2", "first", 5000, 10000)
    sid = int(lead.expect("session"))
    tok = int(lead.expect("granted"))
    obs = cli(ctx, ep, "--json", "leader", "e2", "--observe")
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(x)) for x in obs.stdout],
                     daemon=True).start()
    now = lines.get(timeout=20)
    eq((now["sid"], now["token"], now["value"]), (sid, tok, "first"))
    eq(ctx.conn().call("SESSION.CLOSE", sid), "OK")
    gone = lines.get(timeout=20)
    eq((gone["sid"], gone["token"]), (0, 0), "leaderless once the session closed")
    assert gone["rev"] > now["rev"], (now, gone)
    obs.send_signal(2)
    eq(obs.wait(timeout=10), 0)
    lead.say()
    lead.wait()


def test_cli_elect_kills_the_command_when_leadership_is_lost(ctx):
    ep = ep1(ctx)
    d = ctx.tmp("lost")
    os.makedirs(d, exist_ok=True)
    p = cli(ctx, ep, "elect", "e3", "v", "--ttl", "2s", "--", "sh", "-c",
            "echo $FENCELOCK_SESSION > %s/sid; echo $$ > %s/pid; "
            "i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done" % (d, d))
    wait_until(lambda: os.path.exists(os.path.join(d, "pid")) and
               os.path.getsize(os.path.join(d, "pid")) > 0, timeout=20, what="the leader runs")
    sid = int(open(os.path.join(d, "sid")).read())
    pid = int(open(os.path.join(d, "pid")).read())
    eq(ctx.conn().call("SESSION.REVOKE", sid), "OK")
    _, err = p.communicate(timeout=20)
    eq(p.returncode, 5, "exit 5 once the leadership was lost: " + err)
    try:
        os.kill(pid, 0)
        raise AssertionError("the command outlived its leadership")
    except ProcessLookupError:
        pass


def test_cli_leader_observe_resumes_across_a_leader_kill9(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    ep = endpoints(servers)
    lead = Probe(ctx, "campaign", ep, "e4", "one", 5000, 10000)
    sid = int(lead.expect("session"))
    tok = int(lead.expect("granted"))
    obs = cli(ctx, ep, "--json", "leader", "e4", "--observe")
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(x)) for x in obs.stdout],
                     daemon=True).start()
    first = lines.get(timeout=20)
    eq((first["sid"], first["token"], first["value"]), (sid, tok, "one"))
    leader.kill9()
    lead.say()  # resign on the new leader: the observer must see it there
    eq(lead.expect("unlock"), "ok")
    gone = lines.get(timeout=30)
    eq(gone["sid"], 0, "the resign seen after the fail-over: %r" % gone)
    assert gone["rev"] > first["rev"], (first, gone)
    obs.send_signal(2)
    eq(obs.wait(timeout=10), 0)
    assert lines.empty(), "nothing printed twice"
    lead.wait()


def test_cli_sem_and_elect_messages_name_what_they_wait_for(ctx):
    """`fencelock sem` and `elect` speak of a semaphore and an election, not of a lock."""
    ep = ep1(ctx)
    d = ctx.tmp("words")
    os.makedirs(d, exist_ok=True)
    held = [cli(ctx, ep, "sem", "w1", 1, "--", "sh", "-c",
                "touch %s/s; while [ ! -e %s/go ]; do sleep 0.05; done" % (d, d)),
            cli(ctx, ep, "elect", "w2", "v", "--", "sh", "-c",
                "touch %s/e; while [ ! -e %s/go ]; do sleep 0.05; done" % (d, d))]
    wait_until(lambda: os.path.exists(os.path.join(d, "s")) and
               os.path.exists(os.path.join(d, "e")), timeout=20, what="both run")
    for args, word in ((["sem", "w1", "1"], "semaphore w1: "), (["elect", "w2", "v2"],
                                                                  "election w2: ")):
        r = subprocess.run([cli_path(ctx), "--endpoints", ep] + args + ["--wait", "200ms", "--",
                                                                         "true"],
                           capture_output=True, text=True, timeout=20)
        eq(r.returncode, 3, r)
        eq(r.stderr.strip(), "fencelock: %snot obtained within the wait" % word, r)
    open(os.path.join(d, "go"), "w").close()
    for p in held:
        eq(p.wait(timeout=20), 0, p.stderr.read())
