# SPDX-License-Identifier: Apache-2.0
"""The redis-cli quick start works as written (redis-cli from Debian's redis-tools)."""

import os
import pty
import re
import select
import shutil
import subprocess
import time

from helpers import eq


def _cli(port, *args, stdin=None):
    exe = shutil.which("redis-cli")
    assert exe, "redis-cli not installed (apt-get install redis-tools)"
    p = subprocess.run([exe, "-p", str(port)] + [str(a) for a in args], input=stdin,
                       capture_output=True, text=True, timeout=15)
    assert p.returncode == 0, "redis-cli %s exited %d: %s %s" % (
        " ".join(map(str, args)), p.returncode, p.stdout, p.stderr)
    return p.stdout.strip()


def _int(out, what):
    m = re.fullmatch(r"(?:\(integer\) )?(\d+)", out)
    assert m, "%s: redis-cli printed %r, expected an integer" % (what, out)
    return int(m.group(1))


def test_redis_cli_quick_start(ctx):
    port = ctx.srv.port
    eq(_cli(port, "PING"), "PONG", "redis-cli PING")
    sid = _int(_cli(port, "SESSION.OPEN", 10000), "SESSION.OPEN 10000")
    token = _int(_cli(port, "LOCK", "mylock", sid), "LOCK mylock")
    rev = _int(_cli(port, "PUT", "stock", 10, "FENCE", "mylock", token), "PUT FENCE")
    assert rev > token, "PUT revision %d not above the token %d" % (rev, token)
    eq(_cli(port, "GET", "stock"), "10", "GET stock")
    eq(_cli(port, "UNLOCK", "mylock", sid), "OK", "UNLOCK")
    out = _cli(port, "PUT", "stock", 11, "FENCE", "mylock", token)
    assert "STALE" in out, "PUT with a released token printed %r, expected a STALE error" % out
    eq(_cli(port, "GET", "stock"), "10", "GET stock after the stale PUT")
    eq(_cli(port, "SESSION.CLOSE", sid), "OK", "SESSION.CLOSE")


def test_redis_cli_reads_commands_from_stdin(ctx):
    out = _cli(ctx.srv.port, stdin="PING\nPUT a 1\nGET a\nKEYS a\n")
    lines = out.splitlines()
    eq(lines[0], "PONG", "PING")
    _int(lines[1], "PUT a 1")
    eq(lines[2:], ["1", "a"], "GET a / KEYS a")


def test_redis_cli_resp3_hello(ctx):
    out = _cli(ctx.srv.port, "-3", "GET", "missing")
    assert out in ("", "(nil)"), "redis-cli -3 GET missing printed %r" % out
    eq(_cli(ctx.srv.port, "-3", "PING"), "PONG", "redis-cli -3 PING")


def _cli_tty(port, *args):
    """Run redis-cli with stdout on a pseudo-terminal: it prints as in an interactive shell."""
    exe = shutil.which("redis-cli")
    assert exe, "redis-cli not installed (apt-get install redis-tools)"
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([exe, "-p", str(port)] + [str(a) for a in args],
                             stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
        os.close(slave)
        slave = None
        out = b""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                out += chunk
            elif p.poll() is not None:
                break
        p.wait(5)
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    return out.decode("utf-8", "replace").replace("\r\n", "\n").strip()


def _readme_steps():
    """The `$ ...` lines of README.md's quick start (`redis-cli -p 7480 ...`, `export ...`,
    `fencelock ...`) and the output printed under each, as (kind, command, output)."""
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    steps, cur = [], None
    with open(readme) as f:
        text = f.read()
    text = text[text.index("## Quick start"):text.index("## Clients")]
    for line in text.splitlines():
        m = re.match(r"\$ (redis-cli -p 7480 |fencelock |export )(.*?)\s*(?:#.*)?$", line)
        if m:
            cur = (m.group(1).split()[0], m.group(1) + m.group(2), [])
            steps.append(cur)
        elif cur is not None and line and not line.startswith(("```", "$")):
            cur[2].append(line)
        else:
            cur = None
    return [(kind, cmd, "\n".join(out)) for kind, cmd, out in steps]


def test_readme_quick_start_output_as_written(ctx):
    """README.md's quick start, read from the README itself, on a fresh data directory: the
    redis-cli block, then the fencelock CLI block (what `make run` builds, on PATH)."""
    port = ctx.srv.port
    steps = _readme_steps()
    kinds = [k for k, _, _ in steps]
    assert kinds.count("redis-cli") >= 6 and kinds.count("fencelock") >= 4, \
        "README quick start not found: %r" % steps
    bindir = os.path.dirname(ctx.binary)
    env = dict(os.environ, FENCELOCK_ENDPOINTS="127.0.0.1:%d" % port,
               PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    for k in [k for k in env if k.startswith("FENCELOCK_") and k != "FENCELOCK_ENDPOINTS"]:
        del env[k]
    for kind, cmd, want in steps:
        if kind == "redis-cli":
            args = cmd.split()[3:]
            eq(_cli_tty(port, *args), want, cmd)
        elif kind == "export":
            # The CLI the README puts on PATH is the one `make run` builds.
            eq(cmd, "export PATH=$PWD/build/release:$PATH", "the README's PATH line")
            with open(os.path.join(os.path.dirname(__file__), "..", "..", "Makefile")) as f:
                mk = f.read()
            assert re.search(r"^run:\n(\t.*\n)*\t\$\(MAKE\) SAN=0 .*build/release/fencelock\b",
                             mk, re.M), "make run builds build/release/fencelock"
        else:
            p = subprocess.run(["bash", "-c", cmd], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=60)
            eq(p.stdout.rstrip("\n"), want, cmd)
