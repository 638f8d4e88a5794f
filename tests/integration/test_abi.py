# SPDX-License-Identifier: Apache-2.0
"""libfencelock.so as applications see it (docs/client.md "ABI and versions"), through
tests/client/fl_abi.c, a program linked against the shared library with the public header only.

test_abi_exports_only_the_symbols_file: the built library's dynamic symbols are exactly
debian/libfencelock0.symbols (scripts/check-abi.py): fl_* under FENCELOCK_0, no cl_*,
proto_addr_*, snapfile_* or any other internal symbol.
test_abi_check_bites_on_an_added_or_removed_symbol: the same check on stand-in libraries built
here (every listed symbol; one more; one fewer; no version script) passes only the first.
test_abi_header_and_library_versions_agree: FL_VERSION_* of the header equal fl_version() of the
library loaded, and a program built with another header's version sees the difference.
test_abi_sigpipe_plain_and_tls: a host program that leaves SIGPIPE at its default action,
whose connection the server side closes (FIN, then a reset) while a 32 MiB put is still being
written, lives and gets an error code, over plain TCP and over TLS (before the library's own
BIO, OpenSSL's write(2) killed it over TLS).
test_abi_fork_child_uses_a_client_of_its_own: fork() while a session's keepalive thread runs
and a lock is held: the child's own client and session work (the parent's lock is busy to
it), no socket survives the child's exec, and the parent's lock and keepalives go on.
"""

import os
import re
import select
import socket
import struct
import subprocess
import sys
import threading

from helpers import eq
from server import free_port
from test_tls import tls_server

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "scripts", "check-abi.py")
SYMBOLS = os.path.join(ROOT, "debian", "libfencelock0.symbols")
HEADER = os.path.join(ROOT, "include", "fencelock.h")
MAP = os.path.join(ROOT, "src", "client", "libfencelock.map")
BIG = 32 << 20  # more than loopback's socket buffers hold: the put is still being written


def build_dir(ctx):
    return os.path.dirname(ctx.binary)


def library(ctx):
    return os.path.join(build_dir(ctx), "libfencelock.so.0")


def fl_abi(ctx):
    return os.path.join(build_dir(ctx), "tests", "client", "fl_abi")


def run(argv, timeout=60, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def check_abi(lib, symbols=SYMBOLS, header=HEADER):
    return run([sys.executable, CHECK, lib, "--symbols", symbols, "--header", header])


def sanitizer_flags(lib):
    """-fsanitize=... when lib is the sanitizer build (a program using it must load ASan
    first), else nothing."""
    out = run(["ldd", lib]).stdout
    return ["-fsanitize=address,undefined"] if "libasan" in out else []


def test_abi_exports_only_the_symbols_file(ctx):
    lib = library(ctx)
    p = check_abi(lib)
    eq(p.returncode, 0, "scripts/check-abi.py: %s" % p.stdout)
    assert p.stdout.startswith("abi check: libfencelock.so.0 exports the "), p.stdout
    nm = run(["nm", "-D", "--defined-only", lib]).stdout
    names = [l.split()[-1] for l in nm.splitlines() if l.strip()]
    assert len(names) > 50, nm
    for n in names:
        assert n.startswith("fl_") and n.endswith("@@FENCELOCK_0") or n.startswith(
            "FENCELOCK_0"), "exported: %s" % n
    # the internal families the library used to export
    for prefix in ("cl_", "proto_addr_", "snapfile_", "text_", "num_", "addr_"):
        assert not any(n.startswith(prefix) for n in names), prefix
    # ... still in the archive, for static users of the internals (the torture worker)
    ar = run(["nm", "--defined-only", os.path.join(build_dir(ctx), "libfencelock.a")]).stdout
    assert re.search(r" T cl_call$", ar, re.M), "cl_call in libfencelock.a"


def _stub_library(d, name, symbols, extra=(), drop=(), version_script=True):
    """A stand-in libfencelock.so.0 defining the listed functions (plus extra, less drop)."""
    funcs = [s.split("@")[0] for s in symbols if s.startswith("fl_")]
    funcs = [f for f in funcs if f not in drop] + list(extra)
    src = os.path.join(d, name + ".c")
    with open(src, "w") as f:
        for fn in funcs:
            f.write("void %s(void);\nvoid %s(void) {}\n" % (fn, fn))
        f.write("void cl_call(void);\nvoid cl_call(void) {}\n")  # an internal function
    lib = os.path.join(d, name + ".so.0")
    argv = ["gcc", "-shared", "-fPIC", "-o", lib, src, "-Wl,-soname,libfencelock.so.0"]
    if version_script:
        argv.append("-Wl,--version-script=" + MAP)
    p = run(argv)
    eq(p.returncode, 0, "gcc: %s" % p.stderr)
    return lib


def test_abi_check_bites_on_an_added_or_removed_symbol(ctx):
    d = ctx.tmp("abi")
    os.makedirs(d, exist_ok=True)
    with open(SYMBOLS) as f:
        listed = [l.split()[0] for l in f if l.startswith(" ")]
    assert "fl_lock@FENCELOCK_0" in listed
    same = check_abi(_stub_library(d, "same", listed))
    eq(same.returncode, 0, "every listed symbol: %s" % same.stdout)
    added = check_abi(_stub_library(d, "added", listed, extra=["fl_new_call"]))
    eq(added.returncode, 1, "one more: %s" % added.stdout)
    assert "added: fl_new_call@FENCELOCK_0 is exported but not in" in added.stdout, added.stdout
    assert "header: fl_new_call is exported but not declared FL_API" in added.stdout
    removed = check_abi(_stub_library(d, "removed", listed, drop=["fl_lock"]))
    eq(removed.returncode, 1, "one fewer: %s" % removed.stdout)
    assert "removed: fl_lock@FENCELOCK_0 is in" in removed.stdout, removed.stdout
    assert "header: fl_lock is declared FL_API but not exported" in removed.stdout
    loose = check_abi(_stub_library(d, "loose", listed, version_script=False))
    eq(loose.returncode, 1, "no version script: %s" % loose.stdout)
    assert "internal: cl_call" in loose.stdout, loose.stdout
    # and the other way round: the real library against a symbols file one line short
    short = os.path.join(d, "short.symbols")
    with open(SYMBOLS) as f, open(short, "w") as g:
        g.write("".join(l for l in f if not l.startswith(" fl_unlock@")))
    p = check_abi(library(ctx), symbols=short)
    eq(p.returncode, 1, p.stdout)
    assert "added: fl_unlock@FENCELOCK_0" in p.stdout, p.stdout


def test_abi_header_and_library_versions_agree(ctx):
    prog = fl_abi(ctx)
    ldd = run(["ldd", prog]).stdout
    m = re.search(r"libfencelock\.so\.0 => (\S+)", ldd)
    assert m, "fl_abi is linked against libfencelock.so.0: %s" % ldd
    eq(os.path.realpath(m.group(1)), os.path.realpath(library(ctx)), "the library loaded")
    p = run([prog, "version"])
    eq(p.returncode, 0, p.stdout + p.stderr)
    with open(HEADER) as f:
        h = f.read()
    v = tuple(int(re.search(r"^#define FL_VERSION_%s (\d+)$" % k, h, re.M).group(1))
              for k in ("MAJOR", "MINOR", "PATCH"))
    want = "%d.%d.%d" % v
    eq(p.stdout.strip(), "header %s library %s" % (want, want))
    # a program built with another header (the patch number moved on) sees the difference
    d = ctx.tmp("newer-header")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "fencelock.h"), "w") as f:
        f.write(re.sub(r"^#define FL_VERSION_PATCH \d+$", "#define FL_VERSION_PATCH %d" % (v[2] + 1),
                       h, flags=re.M))
    exe = os.path.join(d, "fl_abi")
    c = run(["gcc", "-std=c11", "-D_GNU_SOURCE", "-I", d] + sanitizer_flags(library(ctx)) +
            ["-o", exe, os.path.join(ROOT, "tests", "client", "fl_abi.c"),
             "-L", build_dir(ctx), "-Wl,-rpath," + build_dir(ctx), "-lfencelock"], timeout=120)
    eq(c.returncode, 0, "gcc: %s" % c.stderr)
    p = run([exe, "version"])
    eq(p.returncode, 1, p.stdout)
    assert "header %d.%d.%d library %s" % (v[0], v[1], v[2] + 1, want) in p.stdout, p.stdout


class CutProxy:
    """Forwards loopback connections to a server. Once armed, the first connection that sends
    anything is cut while that request is on its way, as a server that gives up on a request
    half-way: FIN to the client (which, busy writing, does not look), then a reset (close with
    SO_LINGER 0, the request unread). Connections after the cut are closed at once."""

    def __init__(self, ctx, target_port):
        self.target = target_port
        self.armed = threading.Event()
        self.done = threading.Event()
        self.closed = False
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", free_port()))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        ctx.defer(self.close)

    def close(self):
        self.closed = True
        self.lsock.close()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            if self.done.is_set():
                c.close()
                continue
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                dst.sendall(b)
        except OSError:
            pass

    def _serve(self, c):
        up = socket.create_connection(("127.0.0.1", self.target), timeout=30)
        up.settimeout(None)
        threading.Thread(target=self._pump, args=(up, c), daemon=True).start()
        try:
            while not self.closed:
                r, _, _ = select.select([c], [], [], 0.2)
                if not r:
                    continue
                if self.armed.is_set() and not self.done.is_set():
                    c.shutdown(socket.SHUT_WR)
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.done.set()
                    return
                b = c.recv(65536)
                if not b:
                    return
                up.sendall(b)
        except OSError:
            pass
        finally:
            c.close()
            up.close()


def _sigpipe_case(ctx, port, env):
    proxy = CutProxy(ctx, port)
    p = subprocess.Popen([fl_abi(ctx), "sigpipe", "127.0.0.1:%d" % proxy.port, str(BIG)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ, **env))
    ctx.defer(lambda: p.poll() is None and p.kill())
    ready = p.stdout.readline().strip()
    eq(ready, "ready ok", "the first put, through the proxy")
    proxy.armed.set()
    p.stdin.write("go\n")
    p.stdin.flush()
    try:
        out, err = p.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    assert proxy.done.is_set(), "the proxy cut the connection"
    eq(p.returncode, 0, "fl_abi sigpipe exit status (-13: killed by SIGPIPE); stderr %s" % err)
    assert out.startswith("put "), out
    assert not out.startswith("put ok"), out  # an error code, whichever it is
    return out.strip()


def test_abi_sigpipe_plain_and_tls(ctx):
    plain = ctx.server()
    _sigpipe_case(ctx, plain.port, {})
    s, d = tls_server(ctx)
    _sigpipe_case(ctx, s.port, {"FL_ABI_TLS_CA": os.path.join(d, "ca.crt")})


test_abi_sigpipe_plain_and_tls.timeout = 240


def test_abi_fork_child_uses_a_client_of_its_own(ctx):
    s = ctx.server()
    # handle_abort: a child the parent kills after 60 s (a hang after the fork) prints its stack
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:handle_abort=1")
    p = run([fl_abi(ctx), "fork", "127.0.0.1:%d" % s.port], timeout=120, env=env)
    lines = p.stdout.splitlines()
    assert "child session ok" in lines, p.stdout + p.stderr
    assert "child trylock-parents lock busy" in lines, p.stdout
    assert "child lock-own ok" in lines, p.stdout
    assert "sockets 0" in lines, p.stdout
    assert "child exit 0" in lines, p.stdout
    eq(p.returncode, 0, p.stdout + p.stderr)
    eq(lines[-1], "fork ok")


test_abi_fork_child_uses_a_client_of_its_own.timeout = 180
