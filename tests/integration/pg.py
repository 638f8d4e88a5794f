# SPDX-License-Identifier: Apache-2.0
"""A throwaway PostgreSQL server for the integration tests, with the fencelock guard loaded.

    pg = Postgres(workdir_parent)   # finds Debian's binaries, initdb in a fresh temp dir
    pg.start(); pg.load_guard()     # postgres on a Unix socket only (listen_addresses='')
    pg.sql("SELECT 1")              # psql -X -A -t, ON_ERROR_STOP, verbose errors (SQLSTATE)
    pg.stop()                       # SIGINT (fast shutdown) by PID, SIGKILL of its group after
                                    # 15 s; the temp dir is removed

Standard library only: statements go through psql. postgres refuses to run as root, so as root
the data dir belongs to, and the server runs as, the `postgres` user (Debian's package makes it)
or else `nobody`. The data dir is a fresh directory under /tmp (not under the test's own temp
dir, whose 0700 parents that user could not traverse). Clients connect as the superuser
`fencelock` with trust authentication on the socket, from any OS user. `available()` says why
the tests cannot run (no PostgreSQL installed) so they can say so instead of failing obscurely.
"""

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GUARD_SQL = os.path.join(HERE, "..", "..", "contrib", "postgresql", "fencelock.sql")


def _version_key(path):
    try:
        return float(path.split("/")[-3])
    except ValueError:
        return 0.0


def bindir():
    """Directory of postgres/initdb/psql: $FENCELOCK_PG_BINDIR or Debian's newest version."""
    env = os.environ.get("FENCELOCK_PG_BINDIR")
    if env:
        return env
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=_version_key)
    if found:
        return os.path.dirname(found[-1])
    p = shutil.which("postgres")
    return os.path.dirname(p) if p else None


def available():
    """None if the tests can run, else the reason they cannot."""
    d = bindir()
    if d is None:
        return "PostgreSQL is not installed (scripts/deps.sh test installs it)"
    for exe in ("postgres", "initdb", "psql"):
        if not os.access(os.path.join(d, exe), os.X_OK):
            return "%s not found in %s" % (exe, d)
    return None


class SqlError(Exception):
    """psql failed; .sqlstate is the error's SQLSTATE (or None), .stderr the whole output."""

    def __init__(self, stderr, sqlstate):
        super().__init__(stderr.strip())
        self.stderr = stderr
        self.sqlstate = sqlstate


def _sqlstate(stderr):
    # VERBOSITY verbose prints "ERROR:  FL001: message".
    for line in stderr.splitlines():
        at = line.find("ERROR:")
        if at >= 0:
            rest = line[at + len("ERROR:"):].strip()
            code = rest.split(":", 1)[0]
            if len(code) == 5 and code.isalnum():
                return code
    return None


class Postgres:
    def __init__(self, log_dir, start_timeout=30.0):
        self.bindir = bindir()
        self.log_path = os.path.join(log_dir, "postgres.log")
        self.start_timeout = start_timeout
        self.dir = None
        self.proc = None
        self.user = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    self.user = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue
            if self.user is None:
                raise RuntimeError("running as root and no postgres/nobody user to run as")

    # ---- server ----
    def _as_user(self):
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="fencelock-pg-")
        if self.user is not None:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        data = os.path.join(self.dir, "data")
        with open(self.log_path, "ab") as log:
            subprocess.run([os.path.join(self.bindir, "initdb"), "-D", data, "-U", "fencelock",
                            "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"],
                           stdout=log, stderr=subprocess.STDOUT, check=True, timeout=120,
                           cwd=self.dir, **self._as_user())
            # Own process group: stop() can take its children with it if it must SIGKILL.
            self.proc = subprocess.Popen(
                [os.path.join(self.bindir, "postgres"), "-D", data, "-k", self.dir,
                 "-c", "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=40",
                 "-c", "shared_buffers=16MB", "-c", "lock_timeout=20s"],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.dir, start_new_session=True,
                **self._as_user())
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("postgres exited with %s at start; see %s"
                                   % (self.proc.returncode, self.log_path))
            r = subprocess.run(self._psql_argv() + ["-c", "SELECT 1"], capture_output=True,
                               text=True, timeout=30)
            if r.returncode == 0:
                return self
            if time.monotonic() > deadline:
                raise RuntimeError("postgres not ready after %.0f s: %s"
                                   % (self.start_timeout, r.stderr.strip()))
            time.sleep(0.1)

    def stop(self, timeout=15.0):
        """Fast shutdown by PID; SIGKILL of the process group if it hangs. Removes the dir."""
        try:
            if self.proc is not None and self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGCONT)
                os.kill(self.proc.pid, signal.SIGINT)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(10)
                    raise RuntimeError("postgres ignored SIGINT for %.0f s; killed" % timeout)
        finally:
            if self.dir is not None:
                shutil.rmtree(self.dir, ignore_errors=True)
                self.dir = None

    def log_tail(self, n=30):
        try:
            with open(self.log_path, "rb") as f:
                return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-n:])
        except OSError:
            return ""

    # ---- clients ----
    def _psql_argv(self, user="fencelock"):
        return [os.path.join(self.bindir, "psql"), "-X", "-q", "-A", "-t", "-h", self.dir,
                "-U", user, "-d", "postgres", "-v", "ON_ERROR_STOP=1",
                "-v", "VERBOSITY=verbose"]

    def psql_argv(self):
        """The psql command line (for a subprocess that talks to this server itself)."""
        return self._psql_argv()

    def sql(self, script, check=True, timeout=30, user="fencelock"):
        """Run a script (one psql session, autocommit unless it says BEGIN) as database role
        `user`. Returns stdout's non-empty lines. If psql failed: raises SqlError (with
        .sqlstate) when check is true, else returns it."""
        r = subprocess.run(self._psql_argv(user) + ["-f", "-"], input=script, capture_output=True,
                           text=True, timeout=timeout)
        if r.returncode != 0:
            err = SqlError(r.stderr, _sqlstate(r.stderr))
            if check:
                raise err
            return err
        return [line for line in r.stdout.splitlines() if line != ""]

    def value(self, query):
        rows = self.sql(query)
        if len(rows) != 1:
            raise AssertionError("expected one row from %r, got %r" % (query, rows))
        return rows[0]

    def session(self):
        """A PsqlSession: one long-lived psql (no process start per statement)."""
        return PsqlSession(self._psql_argv())

    def load_guard(self, path=GUARD_SQL):
        with open(path) as f:
            self.sql(f.read())
        return self


class PsqlSession:
    """One psql process fed statements over a pipe, for loops that run many of them. Each
    query() is one statement (autocommit: one transaction) and returns (rows, sqlstate), where
    sqlstate is "00000" on success; psql's own error text goes to /dev/null."""

    END = "__fencelock_end__"

    def __init__(self, argv):
        argv = [a if a != "ON_ERROR_STOP=1" else "ON_ERROR_STOP=0" for a in argv]
        self.proc = subprocess.Popen(argv + ["-f", "-"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, bufsize=1)

    def query(self, statement):
        self.proc.stdin.write("%s;\n\\echo %s :SQLSTATE\n"
                              % (statement.rstrip("; \n"), self.END))
        self.proc.stdin.flush()
        rows = []
        while True:
            line = self.proc.stdout.readline()
            if line == "":
                raise RuntimeError("psql exited (status %s)" % self.proc.poll())
            line = line.rstrip("\n")
            if line.startswith(self.END + " "):
                return rows, line.split()[1]
            if line:
                rows.append(line)

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(10)


def sqlstate_of(stderr):
    return _sqlstate(stderr)


def start(ctx):
    """Start a Postgres for a test and load the guard; stopped by the test's cleanup."""
    why = available()
    if why:
        raise AssertionError(why)
    pg = Postgres(ctx.workdir)
    ctx.defer(pg.stop)
    pg.start()
    pg.load_guard()
    return pg
