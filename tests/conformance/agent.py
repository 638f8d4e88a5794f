# SPDX-License-Identifier: Apache-2.0
"""One conformance agent process (PROTOCOL.md): started from its tests/conformance/agents/*.json
entry, driven with JSON lines on stdin, its stdout read by a thread into replies (by id) and
events (in order). Everything the agent does against the protocol is recorded in `problems`
(a line that is not one JSON object, a second reply to an id, a reply to an id never sent, a
sanitizer report on stderr, an unclean quit): the scenario then fails even when its own
assertions passed.

An agent may be started inside a cgroup v2 group of its own (cgroup=True): every socket it
opens then carries that group, which is how faults.ReplyDrop drops the replies to this one
process and nobody else's."""

import itertools
import json
import os
import signal
import subprocess
import threading
import time

SANITIZER_PATTERNS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer",
                      "Sanitizer:DEADLYSIGNAL", "ERROR: UndefinedBehaviorSanitizer")
LSAN_SUPP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lsan.supp")

# sh wrapper: join the cgroup, then exec the agent (the pid stays the Popen's).
CG_WRAPPER = 'echo $$ > "$0" || exit 97; exec "$@"'

_cg_seq = itertools.count(1)


def cgroup2_root():
    try:
        with open("/proc/mounts") as f:
            for line in f:
                p = line.split()
                if len(p) > 2 and p[2] == "cgroup2":
                    return p[1]
    except OSError:
        pass
    return None


class AgentError(AssertionError):
    pass


class Agent:
    """spec: the parsed agents/*.json; env: PROTOCOL.md's variables (FL_ENDPOINTS, ...)."""

    def __init__(self, spec, repo, workdir, label, env, cgroup=False):
        self.spec, self.label = spec, label
        self.log_path = os.path.join(workdir, "agent-%s.stderr" % label)
        self.problems = []
        self.replies, self.events = {}, []
        # arrival order of stdout lines: reply ids and events (by index in self.events), so a
        # scenario can check PROTOCOL.md's order rules (watch_end, revoke)
        self.reply_at, self.event_at = {}, []
        self.n_lines = 0
        self.ready = None
        self.exited = False
        self.cv = threading.Condition()
        self.ids = itertools.count(1)
        self.sent = set()
        self.cg_dir = self.cg_name = None
        argv = list(spec["run"])
        if cgroup:
            root = cgroup2_root()
            if not root:
                raise AgentError("no cgroup v2 mount: cannot single out the agent's sockets")
            self.cg_name = "fencelock-conf-%d-%d" % (os.getpid(), next(_cg_seq))
            self.cg_dir = os.path.join(root, self.cg_name)
            os.makedirs(self.cg_dir, exist_ok=True)
            argv = ["/bin/sh", "-c", CG_WRAPPER, os.path.join(self.cg_dir, "cgroup.procs")] + argv
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("FL_")}
        full_env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        full_env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        full_env.setdefault("LSAN_OPTIONS", "suppressions=" + LSAN_SUPP)
        full_env.update({k: str(v) for k, v in env.items() if v is not None})
        self.stderr = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(argv, cwd=os.path.join(repo, spec.get("cwd") or "."),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.stderr, env=full_env,
                                         start_new_session=True)
        except OSError as e:
            self.stderr.close()
            self._rm_cgroup()
            raise AgentError("cannot start agent %s (%s): %s" % (spec["name"], argv[0], e))
        self.pid = self.proc.pid
        self.stopped = False
        threading.Thread(target=self._read, daemon=True).start()

    # ---- the reader ----
    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            try:
                m = json.loads(line)
                if not isinstance(m, dict):
                    raise ValueError("not an object")
            except ValueError:
                with self.cv:
                    self.problems.append("%s: stdout line that is not one JSON object: %r"
                                         % (self.label, line[:200]))
                continue
            with self.cv:
                self.n_lines += 1
                if "event" in m:  # first: a watch event has an "id" of its own
                    self.events.append(m)
                    self.event_at.append(self.n_lines)
                elif "id" in m:
                    i = m["id"]
                    if i in self.replies:
                        self.problems.append("%s: a second reply to id %r: %r"
                                             % (self.label, i, m))
                    elif i not in self.sent:
                        self.problems.append("%s: a reply to an id never sent: %r"
                                             % (self.label, m))
                    self.replies[i] = m
                    self.reply_at.setdefault(i, self.n_lines)
                elif "ready" in m and self.ready is None:
                    self.ready = m
                else:
                    self.problems.append("%s: a line that is no reply, event or ready: %r"
                                         % (self.label, m))
                self.cv.notify_all()
        with self.cv:
            self.exited = True
            self.cv.notify_all()

    def _wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                v = pred()
                if v:
                    return v
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AgentError("%s: no %s within %.0f s%s" % (
                        self.label, what, timeout, self._tail()))
                if self.exited and not v:
                    v = pred()
                    if v:
                        return v
                    raise AgentError("%s: exited (status %s) before %s%s" % (
                        self.label, self.proc.poll(), what, self._tail()))
                self.cv.wait(min(left, 0.5))

    def _tail(self, n=15):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()[-n:]
        except OSError:
            return ""
        return "".join("\n    | " + x for x in lines) if lines else ""

    # ---- start ----
    def wait_ready(self, timeout=60.0):
        """The ready line (a JVM under ASan-loaded CPUs may take a while)."""
        return self._wait(lambda: self.ready, timeout, "ready line")

    def expect_ready(self, timeout=60.0):
        r = self.wait_ready(timeout)
        if r.get("ready") is not True:
            raise AgentError("%s: not ready: %r" % (self.label, r))
        return r

    # ---- requests ----
    def send(self, op, **args):
        """Send a request; its id (wait for the reply with reply(id))."""
        i = next(self.ids)
        msg = dict(args, id=i, op=op)
        with self.cv:
            self.sent.add(i)
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as e:
            raise AgentError("%s: cannot send %s: %s%s" % (self.label, op, e, self._tail()))
        return i

    def reply(self, i, timeout=30.0):
        return self._wait(lambda: self.replies.get(i), timeout, "reply to request %d" % i)

    def answered(self, i):
        with self.cv:
            return i in self.replies

    def call(self, op, timeout=30.0, **args):
        """The reply to one request, ok or not."""
        return self.reply(self.send(op, **args), timeout)

    def ok(self, op, timeout=30.0, **args):
        """The reply to one request, which must be ok."""
        r = self.call(op, timeout, **args)
        if r.get("ok") is not True:
            raise AgentError("%s: %s %r -> %r" % (self.label, op, args, r))
        return r

    def err(self, op, words, timeout=30.0, **args):
        """The error word of one request, which must fail with one of `words`."""
        words = (words,) if isinstance(words, str) else tuple(words)
        r = self.call(op, timeout, **args)
        if r.get("ok") is not False or r.get("error") not in words:
            raise AgentError("%s: %s %r: expected error %s, got %r"
                             % (self.label, op, args, "/".join(words), r))
        return r

    def ok_of(self, i, timeout=30.0, what=""):
        r = self.reply(i, timeout)
        if r.get("ok") is not True:
            raise AgentError("%s: request %d%s -> %r" % (self.label, i, what, r))
        return r

    # ---- events ----
    def wait_event(self, pred, timeout, what):
        """The first event (in arrival order) that pred accepts."""
        def find():
            return next((e for e in self.events if pred(e)), None)
        return self._wait(find, timeout, what)

    def before(self, reply_id, event):
        """True if the reply to request reply_id was read before `event` (one of self.events:
        the same object), by the order of the agent's stdout lines."""
        with self.cv:
            at = next(n for e, n in zip(self.events, self.event_at) if e is event)
            return reply_id in self.reply_at and self.reply_at[reply_id] < at

    def events_of(self, pred):
        with self.cv:
            return [e for e in self.events if pred(e)]

    # ---- faults on the agent process ----
    def sigstop(self):
        """Freeze the agent's whole process group (an interpreter's helpers too)."""
        os.killpg(self.pid, signal.SIGSTOP)
        self.stopped = True

    def sigcont(self):
        if self.stopped:
            try:
                os.killpg(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.stopped = False

    # ---- the end ----
    def quit(self, timeout=20.0):
        """quit: answered ok and exit 0 (PROTOCOL.md), else a problem."""
        self.sigcont()
        if self.proc.poll() is None:
            try:
                r = self.call("quit", timeout=timeout)
                if r.get("ok") is not True:
                    self.problems.append("%s: quit -> %r" % (self.label, r))
                rc = self.proc.wait(timeout)
                if rc != 0:
                    self.problems.append("%s: exit status %s after quit" % (self.label, rc))
            except (AgentError, subprocess.TimeoutExpired) as e:
                self.problems.append("%s: unclean quit: %s" % (self.label, e))
        self.kill()

    def kill(self):
        self.sigcont()
        if self.proc.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self.stderr.close()
        self._rm_cgroup()

    def _rm_cgroup(self):
        if self.cg_dir:
            try:
                os.rmdir(self.cg_dir)
            except OSError:
                pass
            self.cg_dir = None

    def sanitizer_report(self):
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return None
        for i, line in enumerate(lines):
            if any(p in line for p in SANITIZER_PATTERNS):
                return "\n".join(lines[max(0, i - 2):i + 40])
        return None
