# SPDX-License-Identifier: Apache-2.0
"""What users of etcdctl, flock(1) and redis-cli reach for in their first hour (docs/fencelock.1,
docs/protocol.md), against real servers:
  - `members list` asks every member itself: healthy / unreachable, Raft state, applied index,
    lag; exit 1 when one is not healthy;
  - `session list` / `session info SID` (SESSION.LIST and SESSION.INFO): a user sees their own
    sessions, an admin every one;
  - `get --prefix P`: each key with its value;
  - `lock -E/--conflict-exit-code N` and `--error-exit-code N` move fencelock's own codes out
    of the command's way, and the command's own codes are never rewritten;
  - a bare `--ttl` over an hour (likely milliseconds) is warned about on stderr;
  - `fencelock completion bash|zsh` comes from the CLI's own table: bash with it loaded
    completes commands, operations, options, files and, after `--`, commands; `make
    install-files` installs both scripts where the Debian package lists them;
  - `KEYS *` is a prefix (a trailing '*'), other glob characters are refused with a hint, and
    SET / SETNX / EXPIRE answer with the fencelock command to use.
"""

import json
import os
import shutil
import subprocess

from cluster import ready_leader, start_cluster, wait_announced
from helpers import eq, expect_err, expect_int, expect_ok, lock_info, ok, session_info
from resp import RespError, text
from test_auth import _authed
from test_cli import cli_path, finish, run, run_json, run_ok, spawn, wait_pid_file
from test_ownership import _owner_server

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


# ---------------------------------------------------------------------------------------------
# members list: every member's health, asked of the member itself


def test_cli_members_list_health(ctx):
    servers = start_cluster(ctx)
    leader = ready_leader(servers)
    c = ctx.conn(leader)
    wait_announced(c, 3)
    expect_int(c.call("PUT", "k", "v"))
    ms = run_json(ctx, servers, "members", "list")
    eq(sorted(m["id"] for m in ms), [1, 2, 3], "every member: %r" % ms)
    for m in ms:
        s = servers[m["id"] - 1]
        eq((m["client_address"], m["raft_address"]),
           ("127.0.0.1:%d" % s.port, "127.0.0.1:%d" % s.raft_port))
        eq((m["health"], m["reachable"], m["error"]), ("healthy", True, None), repr(m))
        eq(m["state"], "leader" if s is leader else "follower", repr(m))
        eq(m["leader"], s is leader, repr(m))
        assert m["applied_index"] > 0 and m["lag"] >= 0 and m["term"] > 0, m
    lead = [m for m in ms if m["leader"]]
    eq(len(lead), 1, repr(ms))
    eq(lead[0]["lag"], lead[0]["commit_index"] - lead[0]["applied_index"],
       "lag is counted from the leader's own commit index")
    for m in ms:
        assert m["lag"] == max(0, lead[0]["commit_index"] - m["applied_index"]), (m, lead)
    table = run_ok(ctx, servers, "members", "list").out.splitlines()
    eq(table[0].split(), ["ID", "ROLE", "CLIENT", "HEALTH", "STATE", "APPLIED", "LAG", "TOOK"])
    eq(len(table), 4, "\n".join(table))

    gone = next(s for s in servers if s is not leader)
    gone.stop()
    r = run(ctx, servers, "--json", "members", "list", timeout=60)
    eq(r.rc, 1, "a member down: exit 1: %r" % r)
    by_id = {m["id"]: m for m in json.loads(r.out)}
    eq((by_id[gone.node_id]["health"], by_id[gone.node_id]["reachable"]),
       ("unreachable", False))
    assert by_id[gone.node_id]["error"], by_id[gone.node_id]
    eq(by_id[gone.node_id]["lag"], None)
    eq(sorted(m["health"] for i, m in by_id.items() if i != gone.node_id),
       ["healthy", "healthy"])
    r = run(ctx, servers, "members", "list", timeout=60)
    eq(r.rc, 1)
    row = [ln for ln in r.out.splitlines() if ln.split()[0] == str(gone.node_id)]
    assert row and "unreachable" in row[0], r.out


# ---------------------------------------------------------------------------------------------
# session list / session info


def test_cli_session_list_and_info_follow_ownership(ctx):
    s = _owner_server(ctx)
    cli = cli_path(ctx)

    def as_user(user, *args):
        e = dict(os.environ)
        e.update({"FENCELOCK_USER": user, "FENCELOCK_PASSWORD": user + "pw"})
        e.pop("FENCELOCK_ENDPOINTS", None)
        return subprocess.run([cli, "--endpoints", "127.0.0.1:%d" % s.port, "--timeout", "10s"]
                              + [str(a) for a in args], capture_output=True, text=True,
                              timeout=30, env=e)

    alice, bob, root = (_authed(ctx, s, u, u + "pw") for u in ("alice", "bob", "root"))
    a1 = expect_int(alice.call("SESSION.OPEN", 60000, "NAME", "first"))
    a2 = expect_int(alice.call("SESSION.OPEN", 30000, "LOCKDELAY", 2000))
    b1 = expect_int(bob.call("SESSION.OPEN", 60000))
    expect_int(alice.call("LOCK", "L", a1))
    expect_int(alice.call("PUT", "k", "v", "LEASE", a1))

    p = as_user("alice", "--json", "session", "list")
    eq(p.returncode, 0, p.stderr)
    got = json.loads(p.stdout)
    eq([x["sid"] for x in got], [a1, a2], "alice sees her own sessions, in id order")
    first = got[0]
    eq((first["ttl_ms"], first["name"], first["owner"], first["locks"], first["keys"],
        first["waits"]), (60000, "first", "alice", 1, 1, 0))
    assert 0 < first["remaining_ms"] <= 60000, first
    eq((got[1]["ttl_ms"], got[1]["lockdelay_ms"]), (30000, 2000))
    p = as_user("root", "--json", "session", "list")
    eq([x["sid"] for x in json.loads(p.stdout)], [a1, a2, b1], "an admin sees every session")
    p = as_user("bob", "--json", "session", "list")
    eq([x["sid"] for x in json.loads(p.stdout)], [b1])
    p = as_user("root", "--json", "session", "list", "--limit", 2)
    eq([x["sid"] for x in json.loads(p.stdout)], [a1, a2], "--limit 2")
    p = as_user("alice", "session", "list")
    lines = p.stdout.splitlines()
    eq(lines[0].split(), ["SID", "TTL", "LEFT", "LOCKS", "WAITS", "KEYS", "OWNER", "NAME"])
    eq([ln.split()[0] for ln in lines[1:]], [str(a1), str(a2)])

    p = as_user("alice", "--json", "session", "info", a1)
    eq(p.returncode, 0, p.stderr)
    si, raw = json.loads(p.stdout), session_info(root, a1)
    eq((si["sid"], si["ttl_ms"], si["locks"], si["keys"], si["owner"], si["name"]),
       (a1, raw["ttl_ms"], raw["locks"], raw["keys"], text(raw["owner"]), text(raw["name"])))
    out = as_user("alice", "session", "info", a1).stdout
    assert "owner:      alice" in out and "name:       first" in out, out
    p = as_user("bob", "session", "info", a1)
    eq(p.returncode, 1, "another user's session is as a missing one: %r" % p.stderr)
    assert "NOSESSION" in p.stderr, p.stderr
    eq(as_user("root", "session", "info", a1).returncode, 0, "an admin may read any session")
    expect_ok(alice.call("SESSION.CLOSE", a2))
    eq(as_user("alice", "session", "info", a2).returncode, 1, "a closed session")
    eq(as_user("alice", "session", "list", "--limit", "0").returncode, 2)
    eq(as_user("alice", "session", "info").returncode, 2)
    eq(as_user("alice", "session", "open", "--limit", "3").returncode, 2)

    # The command itself: AFTER pages, LIMIT bounds, bad syntax changes nothing.
    ids = ok(root.call("SESSION.LIST"))
    eq(len(ids), 2, "a1 and b1 left: %r" % ids)
    page = ok(root.call("SESSION.LIST", "AFTER", a1))
    eq(len(page), 1, repr(page))
    eq(len(ok(root.call("SESSION.LIST", "LIMIT", 1))), 1)
    eq(ok(root.call("SESSION.LIST", "AFTER", b1)), [])
    for bad in (("LIMIT", 0), ("LIMIT",), ("AFTER", "x"), ("FROM", 1)):
        expect_err(root.call("SESSION.LIST", *bad), "ERR", repr(bad))


def test_session_list_without_users_shows_every_session(ctx):
    c = ctx.conn()
    sids = [expect_int(c.call("SESSION.OPEN", 30000)) for _ in range(3)]
    got = run_json(ctx, [ctx.srv], "session", "list")
    eq([x["sid"] for x in got], sids)
    eq([x["owner"] for x in got], ["", "", ""])


# ---------------------------------------------------------------------------------------------
# get --prefix


def test_cli_get_prefix_prints_keys_with_values(ctx):
    srv = [ctx.srv]
    c = ctx.conn()
    for k, v in (("app/a", "1"), ("app/b", "two"), ("apq", "x"), ("b", "y")):
        expect_int(c.call("PUT", k, v))
    expect_int(c.call("PUT", "app/bin", b"\xff\x00z"))
    r = run_ok(ctx, srv, "get", "--prefix", "app/")
    eq(r.out, "app/a\n1\napp/b\ntwo\napp/bin\n\ufffd\x00z\n", "key line, value line")
    r = run_ok(ctx, srv, "get", "app/", "--prefix", "--limit", "2")
    eq(r.out, "app/a\n1\napp/b\ntwo\n")
    j = run_json(ctx, srv, "get", "--prefix", "app/")
    eq([(x["key"], x.get("value"), x.get("value_base64")) for x in j],
       [("app/a", "1", None), ("app/b", "two", None), ("app/bin", None, "/wB6")])
    for x in j:
        assert x["mod_rev"] > 0 and x["version"] == 1 and x["lease"] == 0, x
    eq([x["key"] for x in run_json(ctx, srv, "get", "--prefix")],
       ["app/a", "app/b", "app/bin", "apq", "b"], "no prefix: every key")
    eq(run_json(ctx, srv, "get", "--prefix", "none/"), [])
    eq(run_ok(ctx, srv, "get", "app/a").out, "1\n", "plain get unchanged")
    for bad in (["get", "app/a", "--limit", "1"], ["get", "--prefix", "--limit", "0"],
                ["get", "a", "b"]):
        r = run(ctx, srv, *bad)
        eq(r.rc, 2, "%r: %r" % (bad, r))


# ---------------------------------------------------------------------------------------------
# lock: -E / --conflict-exit-code, --error-exit-code


def test_cli_lock_exit_code_options_leave_the_commands_codes_alone(ctx):
    srv = [ctx.srv]
    c = ctx.conn()
    sid = expect_int(c.call("SESSION.OPEN", 60000))
    expect_int(c.call("LOCK", "j", sid))
    eq(run(ctx, srv, "lock", "j", "--wait", "0", "-E", "75", "--", "true").rc, 75, "-E 75")
    eq(run(ctx, srv, "lock", "j", "--wait", "0", "--conflict-exit-code=0", "--", "true").rc, 0,
       "--conflict-exit-code=0")
    eq(run(ctx, srv, "lock", "j", "--wait", "0", "--", "true").rc, 3, "the default stays 3")
    eq(run(ctx, srv, "sem", "j", "2", "--wait", "0", "-E", "76").rc, 4,
       "a lock is no semaphore: an error, not a conflict")
    expect_ok(c.call("UNLOCK", "j", sid))
    # The command's own 3, 4 and 5 pass through unchanged.
    for code in (3, 4, 5):
        eq(run(ctx, srv, "lock", "j", "-E", "75", "--error-exit-code", "99", "--", "sh", "-c",
               "exit %d" % code).rc, code, "the command's exit %d" % code)
    eq(run(ctx, srv, "lock", "j", "--error-exit-code", "99", "--", "/nonexistent/cmd").rc, 127,
       "127: the command was not found (a shell's code, not fencelock's)")
    dead = "127.0.0.1:1"
    r = run(ctx, None, "--endpoints", dead, "--timeout", "1s", "lock", "j",
            "--error-exit-code", "99", "--", "true")
    eq(r.rc, 99, "unreachable, --error-exit-code 99: %r" % r)
    r = run(ctx, None, "--endpoints", dead, "--timeout", "1s", "lock", "j", "--", "true")
    eq(r.rc, 4, "unreachable, default: %r" % r)

    # Lost while the command ran: 5, or --error-exit-code's N.
    pid_path = ctx.tmp("P")
    p = spawn(ctx, srv, "lock", "j", "--error-exit-code", "98", "--", "sh", "-c",
              "echo $$ > %s; exec sleep 60" % pid_path)
    wait_pid_file(pid_path, p)
    holder = lock_info(c, "j")["holder"]
    expect_ok(c.call("SESSION.CLOSE", holder))
    rc, _, err = finish(p)
    eq(rc, 98, "lost while the command ran, --error-exit-code 98: %r" % err)
    for bad in (["-E", "256"], ["-E", "x"], ["--error-exit-code", "-1"], ["-E"]):
        r = run(ctx, srv, "lock", "j", *bad, "--", "true")
        eq(r.rc, 2, "%r: %r" % (bad, r))
    r = run_ok(ctx, None, "lock", "--help")
    assert "--conflict-exit-code" in r.out and "--error-exit-code" in r.out, r.out
    assert "CMD's own" in r.out, r.out


# ---------------------------------------------------------------------------------------------
# --ttl: a bare number is seconds; over an hour, a warning


def test_cli_warns_on_a_bare_ttl_over_an_hour(ctx):
    srv = [ctx.srv]
    c = ctx.conn()
    r = run_ok(ctx, srv, "session", "open", "--ttl", "7200")
    eq(session_info(c, int(r.out))["ttl_ms"], 7200 * 1000, "a bare number is seconds")
    eq(len(r.err.splitlines()), 1, r.err)
    assert "warning" in r.err and "7200 seconds" in r.err and "--ttl 7200ms" in r.err, r.err
    for quiet in ("3600", "2h", "7200s", "30"):
        r = run_ok(ctx, srv, "session", "open", "--ttl", quiet)
        eq(r.err, "", "--ttl %s: no warning" % quiet)
    r = run(ctx, srv, "lock", "job", "--ttl", "5000", "--", "true")
    eq(r.rc, 0, r)
    assert "warning: --ttl 5000 is 5000 seconds" in r.err, r.err


# ---------------------------------------------------------------------------------------------
# completion: bash and zsh, from the CLI's own table


def complete(script, words, env=None):
    """COMPREPLY of bash's _fencelock for the command line `words` (the last one is the word
    being completed), with `script` loaded as bash-completion would load it."""
    prog = ("source %s\ncomplete -p fencelock\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n"
            "COMP_LINE=\"${COMP_WORDS[*]}\"\n_fencelock fencelock\n"
            "printf '%%s\\n' \"${COMPREPLY[@]}\"\n"
            % (script, " ".join("'%s'" % w for w in words), len(words) - 1))
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], capture_output=True,
                       text=True, timeout=30, env=env)
    assert p.returncode == 0, (words, p.stderr)
    lines = p.stdout.splitlines()
    assert lines and lines[0] == "complete -F _fencelock fencelock", (words, p.stdout)
    return [ln for ln in lines[1:] if ln]


def help_commands(ctx):
    """The command names of `fencelock --help`'s command list."""
    out = run_ok(ctx, None, "--help").out
    section = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [ln.split()[0] for ln in section.splitlines() if ln.startswith("  ") and
            not ln.startswith("   ")]


def test_cli_completion_bash_completes_from_the_table(ctx):
    script = ctx.tmp("fencelock.bash")
    r = run_ok(ctx, None, "completion", "bash")
    with open(script, "w") as f:
        f.write(r.out)
    cmds = complete(script, ["fencelock", ""])
    eq(cmds, help_commands(ctx), "the same commands as --help lists (one table)")
    for want in ("members", "session", "completion", "lock", "get"):
        assert want in cmds, cmds
    eq(complete(script, ["fencelock", "mem"]), ["members"])
    eq(complete(script, ["fencelock", "members", ""]), ["list", "add", "remove", "transfer"])
    eq(complete(script, ["fencelock", "session", "i"]), ["info"])
    eq(complete(script, ["fencelock", "completion", ""]), ["bash", "zsh"])
    eq(complete(script, ["fencelock", "help", "loc"]), ["lock", "lock-info", "locks"])
    eq(complete(script, ["fencelock", "--endpoints", "127.0.0.1:1", "--json", "st"]), ["status"],
       "a global option's value is skipped")
    opts = complete(script, ["fencelock", "lock", "j", "--"])
    for want in ("--shared", "--ttl", "--conflict-exit-code", "--error-exit-code", "--endpoints",
                 "--tls-ca", "--help"):
        assert want in opts, (want, opts)
    assert "--prefix" not in opts and "--force" not in opts, opts
    eq(complete(script, ["fencelock", "lock", "j", "--ttl", ""]), [], "a DUR value: nothing")
    eq(complete(script, ["fencelock", "lock", "j", "-E", "7", "--sh"]), ["--shared"])
    eq(complete(script, ["fencelock", "sem", "s", "2", "--sh"]), [], "sem has no --shared")
    eq(complete(script, ["fencelock", "get", "--pr"]), ["--prefix"])
    cmdline = complete(script, ["fencelock", "lock", "j", "--ttl", "5s", "--", "ech"])
    assert "echo" in cmdline, cmdline
    os.makedirs(ctx.tmp("d"))
    for name in ("cert.pem", "backup.snap"):
        open(ctx.tmp("d/" + name), "w").close()
    eq(complete(script, ["fencelock", "--tls-ca", ctx.tmp("d/ce")]), [ctx.tmp("d/cert.pem")],
       "a FILE value completes file names")
    eq(complete(script, ["fencelock", "snapshot", "save", ctx.tmp("d/ba")]),
       [ctx.tmp("d/backup.snap")])
    eq(complete(script, ["fencelock", "snapshot", ""]), ["save"])
    eq(complete(script, ["fencelock", "put", "k", "--fence", "L", ""]), [],
       "--fence NAME TOKEN: two values")
    eq(complete(script, ["fencelock", "put", "k", "--fence", "L", "7", "--if"]), ["--ifrev"])

    zsh = run_ok(ctx, None, "completion", "zsh").out
    assert zsh.startswith("#compdef fencelock\n"), zsh[:80]
    data = [ln for ln in r.out.splitlines() if ln.startswith("_fencelock_commands=")]
    assert data and data[0] in zsh.splitlines(), "the same command list in both scripts"
    if shutil.which("zsh"):  # not installed by the tests: checked where it is
        p = subprocess.run(["zsh", "-n"], input=zsh, capture_output=True, text=True, timeout=30)
        eq(p.returncode, 0, p.stderr)
        zfile = ctx.tmp("_fencelock")
        with open(zfile, "w") as f:
            f.write(zsh)
        # zsh's completion builtins replaced by ones that print what would be offered.
        prog = ("compadd() { [[ $1 == -- ]] && shift; print -r -- \"ADD $*\"; }\n"
                "_files() { print FILES; }\n_command_names() { print COMMANDS; }\n"
                "compdef() { print -r -- \"compdef $*\"; }\nsource %s\n"
                "t() { words=(\"$@\"); CURRENT=$#; _fencelock; }\n"
                "t fencelock members ''\nt fencelock lock j -- ec\nt fencelock --tls-ca x\n"
                "t fencelock put k --fence L ''\nt fencelock sem s 2 --sh\n" % zfile)
        p = subprocess.run(["zsh", "-f", "-c", prog], capture_output=True, text=True,
                           timeout=30)
        lines = p.stdout.splitlines()
        eq(lines[:4], ["compdef _fencelock fencelock", "ADD list add remove transfer",
                       "COMMANDS", "FILES"], p.stderr)
        assert "--shared" not in lines[4] and "--ttl" in lines[4], lines
    r = run(ctx, None, "completion", "fish")
    eq(r.rc, 2, r)
    assert "bash or zsh" in r.err, r.err


def test_make_install_puts_the_completion_where_the_package_lists_it(ctx):
    dest = ctx.tmp("dest")
    ib = os.path.dirname(ctx.binary)
    p = subprocess.run(["make", "-s", "install-files", "IB=" + ib, "DESTDIR=" + dest,
                        "PREFIX=/usr"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, p.stderr[-2000:])
    with open(os.path.join(ROOT, "debian", "fencelock.install")) as f:
        listed = f.read().split()
    for rel, shell in (("usr/share/bash-completion/completions/fencelock", "bash"),
                       ("usr/share/zsh/vendor-completions/_fencelock", "zsh")):
        with open(os.path.join(dest, rel)) as f:
            eq(f.read(), run_ok(ctx, None, "completion", shell).out, rel)
        assert rel in listed, "debian/fencelock.install lacks %s" % rel


# ---------------------------------------------------------------------------------------------
# KEYS patterns and the Redis commands users try first


def test_keys_star_is_a_prefix_and_redis_commands_get_a_hint(ctx):
    c = ctx.conn()
    for k in ("a/1", "a/2", "b"):
        expect_int(c.call("PUT", k, "v"))
    eq([text(x) for x in ok(c.call("KEYS", "*"))], ["a/1", "a/2", "b"], "KEYS *: every key")
    eq([text(x) for x in ok(c.call("KEYS", "a/*"))], ["a/1", "a/2"], "a trailing * is a prefix")
    eq([text(x) for x in ok(c.call("KEYS", "a/"))], ["a/1", "a/2"], "the plain prefix")
    eq([text(x) for x in ok(c.call("KEYS", "*", "LIMIT", 1))], ["a/1"])
    for pat, ch in (("a?", "?"), ("a*b", "*"), ("[ab]*", "["), ("**", "*")):
        r = expect_err(c.call("KEYS", pat), "ERR", pat)
        assert "prefix" in r.text and "'%s'" % ch in r.text, r.text
    r = c.call("GET", "b")
    eq(r, b"v", "GET exists")
    for cmd, want in ((("SET", "k", "v"), "fencelock's is PUT key value"),
                      (("setnx", "k", "v"), "PUT key value IFREV 0"),
                      (("EXPIRE", "k", "10"), "LEASE sid"),
                      (("SETEX", "k", "10", "v"), "LEASE sid")):
        r = expect_err(c.call(*cmd), "ERR", repr(cmd))
        assert r.text.startswith("ERR unknown command '%s'; " % cmd[0]) and want in r.text, r.text
    r = expect_err(c.call("FROBNICATE"), "ERR")
    eq(r.text, "ERR unknown command 'FROBNICATE'", "no hint for the rest")
    eq(c.call("KEYS", "k"), [], "the refused SET wrote nothing")
    assert isinstance(c.call("KEYS", "a?"), RespError)


def test_cli_man_page_describes_every_command_of_the_table(ctx):
    """Every command `fencelock --help` lists (the command table) has its section in
    fencelock(1)."""
    with open(os.path.join(ROOT, "docs", "fencelock.1")) as f:
        heads = [ln[4:].strip('"').replace("\\-", "-") for ln in f.read().splitlines()
                 if ln.startswith(".SS ")]
    missing = [c for c in help_commands(ctx) if not any(h.split()[0] == c for h in heads)]
    eq(missing, [], "commands without a section in fencelock(1)")
