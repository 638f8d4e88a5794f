# SPDX-License-Identifier: Apache-2.0
"""Start, stop, kill and restart fencelockd processes for the integration tests.

Every Server gets its own free loopback ports (never 7480-7482), a fresh data directory and a
log file that collects stdout+stderr of every incarnation (start, restart). Problems that make
a test fail even when its assertions passed are collected in `problems`: a sanitizer report in
the log, an exit nobody asked for, a non-zero exit status after SIGTERM, a shutdown that needed
SIGKILL.
"""

import os
import random
import re
import signal
import socket
import subprocess
import time

from resp import Conn, as_map, text, RespError, ConnectionClosed, ReplyTimeout

# Leaks inside dependencies, each explained in the file.
LSAN_SUPP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lsan.supp")

SANITIZER_PATTERNS = (
    "ERROR: AddressSanitizer",
    "runtime error:",
    "LeakSanitizer",
    "Sanitizer:DEADLYSIGNAL",
    "ERROR: UndefinedBehaviorSanitizer",
)

_used_ports = set()
_rng = random.Random(os.getpid() ^ int(time.time()))


def port_range():
    """The loopback ports this process may hand out: 20000..32767 (below Linux's ephemeral
    range), or the slice FL_TEST_PORTS=lo-hi that run.py gives each of its parallel workers,
    so that two workers never pick the same free port at the same moment."""
    lo, hi = 20000, 32767
    spec = os.environ.get("FL_TEST_PORTS")
    if spec:
        lo, hi = (int(x) for x in spec.split("-"))
    return lo, hi


def free_port():
    """A port of port_range() (never 7480-7482) that binds right now."""
    lo, hi = port_range()
    for _ in range(2000):
        p = _rng.randrange(lo, hi + 1)
        if p in _used_ports or 7480 <= p <= 7482:
            continue
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        _used_ports.add(p)
        return p
    raise RuntimeError("no free port found in %d-%d" % (lo, hi))


def faketime_library():
    try:
        out = subprocess.run(["dpkg", "-L", "libfaketime"], capture_output=True, text=True,
                             timeout=10).stdout
        for line in out.splitlines():
            if line.endswith("/libfaketime.so.1"):
                return line.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    p = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
    return p if os.path.exists(p) else None


def faketime_env(timestamp_file):
    lib = faketime_library()
    if not lib:
        raise RuntimeError("libfaketime not installed (apt-get install libfaketime)")
    return {
        "LD_PRELOAD": lib,
        "FAKETIME_TIMESTAMP_FILE": timestamp_file,
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }


def faketime_at_env(when):
    """The environment that runs a program whose wall clock starts at `when` ("YYYY-MM-DD
    HH:MM:SS", UTC) and runs on from there: libfaketime preloaded directly. Not the faketime(1)
    wrapper: it leaves a POSIX semaphore and shared memory in /dev/shm named by its pid on
    every run, and a later wrapper that gets the same pid (pid_max is 32768 here) fails with
    "sem_open: File exists"."""
    lib = faketime_library()
    if not lib:
        raise RuntimeError("libfaketime not installed (apt-get install libfaketime)")
    return dict(os.environ, LD_PRELOAD=lib, FAKETIME="@" + when, TZ="UTC",
                FAKETIME_DONT_FAKE_MONOTONIC="1")


def _asan_runtime(binary):
    """Path of the ASan runtime the binary links against, or None."""
    try:
        out = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"libasan\.so\.\S+ => (\S+)", out)
    return m.group(1) if m else None


class ServerError(Exception):
    pass


class Server:
    def __init__(self, binary, workdir, args=(), env=None, node_id=1, ready_timeout=20.0):
        self.binary = os.path.abspath(binary)
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.data_dir = os.path.join(workdir, "data")
        self.log_path = os.path.join(workdir, "server.log")
        self.node_id = node_id
        self.port = free_port()
        self.raft_port = free_port()
        self.http_port = free_port()
        self.extra_args = [str(a) for a in args]
        self.extra_env = dict(env or {})
        self.ready_timeout = ready_timeout
        self.proc = None
        self.incarnation = 0
        self.problems = []
        self._log_offset = 0  # where the current incarnation's output starts
        self.sigstopped = False  # set by sigstop(), cleared by sigcont()

    # ---- command line and environment ----
    def argv(self):
        return [self.binary,
                "--id", str(self.node_id),
                "--data-dir", self.data_dir,
                "--listen", "127.0.0.1:%d" % self.port,
                "--raft-listen", "127.0.0.1:%d" % self.raft_port,
                "--http-listen", "127.0.0.1:%d" % self.http_port] + self.extra_args

    def environ(self):
        # fencelockd reads FENCELOCK_<FLAG> variables as settings: one left in the caller's
        # shell (the CLI's FENCELOCK_TLS_CA, say) must not change every server; a test that
        # wants one passes it in env=.
        env = {k: v for k, v in os.environ.items() if not k.startswith("FENCELOCK_")}
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        env.setdefault("LSAN_OPTIONS", "suppressions=" + LSAN_SUPP)
        env.update(self.extra_env)
        if "LD_PRELOAD" in self.extra_env:
            # An ASan binary must have its runtime first in the preload list.
            rt = _asan_runtime(self.binary)
            if rt:
                env["LD_PRELOAD"] = rt + ":" + env["LD_PRELOAD"]
            env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"] + ":verify_asan_link_order=0"
        return env

    # ---- lifecycle ----
    def start(self, wait=True):
        if self.proc is not None and self.proc.poll() is None:
            raise ServerError("already running")
        self.incarnation += 1
        self.sigstopped = False
        with open(self.log_path, "ab") as f:
            self._log_offset = f.tell()
            f.write(("=== incarnation %d: %s\n" % (self.incarnation, " ".join(self.argv())))
                    .encode())
            if "LD_PRELOAD" in self.extra_env:
                f.write(("=== env: %s\n" % " ".join(
                    "%s=%s" % kv for kv in sorted(self.extra_env.items()))).encode())
        logf = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=logf,
                                         stderr=subprocess.STDOUT, env=self.environ(),
                                         cwd=self.workdir, start_new_session=True)
        finally:
            logf.close()
        if wait:
            self.wait_ready()
        return self

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout=None):
        """Until PING answers +PONG and CLUSTER.INFO says role leader (bounded)."""
        timeout = self.ready_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._note_unexpected_exit()
                self.proc._fl_reaped = True
                raise ServerError("fencelockd exited with status %s before it was ready"
                                  % self.proc.returncode)
            try:
                with Conn(self.port, timeout=1.0,
                          ssl_context=getattr(self, "tls", None)) as c:
                    if getattr(self, "auth", None):  # --acl-file: (user, password)
                        c.call("AUTH", *self.auth)
                    r = c.call("PING")
                    if r != "PONG":
                        last = "PING -> %r" % (r,)
                    else:
                        info = c.call("CLUSTER.INFO")
                        if isinstance(info, RespError):
                            last = "CLUSTER.INFO -> %r" % (info,)
                        else:
                            role = text(as_map(info).get("role"))
                            if role != "leader":
                                last = "role %r" % (role,)
                            else:
                                # A leader serves reads only once its term's barrier applied.
                                g = c.call("GET", "p")  # short: tests run with tiny --max-key
                                if not isinstance(g, RespError):
                                    return
                                last = "GET -> %r" % (g,)
            except (OSError, ConnectionClosed, ReplyTimeout, AssertionError) as e:
                last = "%s: %s" % (type(e).__name__, e)
            time.sleep(0.05)
        raise ServerError("fencelockd not ready after %.0f s (%s)" % (timeout, last))

    def _note_unexpected_exit(self):
        rc = self.proc.returncode
        self.problems.append("fencelockd (incarnation %d) exited unexpectedly with status %s"
                             % (self.incarnation, rc))

    def stop(self, timeout=15.0):
        """SIGTERM, wait; SIGKILL after `timeout` (a problem). Returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is not None:
            if not getattr(self.proc, "_fl_reaped", False):
                self.proc._fl_reaped = True
                self._note_unexpected_exit()
            return self.proc.returncode
        self.sigcont()  # only acts after sigstop(): a frozen process cannot handle SIGTERM
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.problems.append("fencelockd did not exit within %.0f s of SIGTERM; killed"
                                 % timeout)
            self._killpg()
            rc = self.proc.wait(10)
        else:
            if rc != 0:
                self.problems.append("fencelockd exited with status %s after SIGTERM "
                                     "(expected 0: clean shutdown)" % rc)
        self.proc._fl_reaped = True
        return rc

    def _killpg(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def sigstop(self):
        """Freeze the process (SIGSTOP): it keeps its sockets but runs nothing. Returns once
        the kernel reports it stopped (a loaded machine may take a moment to stop it), so
        that nothing it does after the call comes from before the stop."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.sigstopped = True
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            try:
                with open("/proc/%d/stat" % self.proc.pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] in ("T", "t"):
                        return
            except OSError:
                return  # gone: nothing more to wait for
            time.sleep(0.005)

    def sigcont(self):
        """Resume a process frozen by sigstop() (a no-op otherwise)."""
        if self.sigstopped and self.proc is not None \
                and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
        self.sigstopped = False

    def kill9(self):
        if self.proc.poll() is not None:
            self.proc._fl_reaped = True
            self._note_unexpected_exit()
            return
        self._killpg()
        self.proc.wait(10)
        self.proc._fl_reaped = True

    def restart(self, wait=True):
        if self.running():
            raise ServerError("restart() while running: stop() or kill9() first")
        return self.start(wait=wait)

    def force_cleanup(self):
        """Last resort for the runner: never leave a process behind."""
        if self.proc is not None and self.proc.poll() is None:
            self._killpg()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass

    # ---- logs ----
    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, n=40):
        return "\n".join(self.log_text().splitlines()[-n:])

    def sanitizer_report(self):
        lines = self.log_text().splitlines()
        for i, line in enumerate(lines):
            if any(p in line for p in SANITIZER_PATTERNS):
                return "\n".join(lines[max(0, i - 2):i + 60])
        return None

    # ---- clients ----
    def conn(self, timeout=10.0):
        return Conn(self.port, timeout=timeout, ssl_context=getattr(self, "tls", None))


def kill9_all(servers):
    """SIGKILL every running server first, then reap them: all die at (nearly) the same time."""
    live = [s for s in servers if s.running()]
    for s in live:
        s._killpg()
    for s in live:
        s.proc.wait(10)
        s.proc._fl_reaped = True
        s.sigstopped = False
