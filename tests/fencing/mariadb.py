# SPDX-License-Identifier: Apache-2.0
"""A throwaway MariaDB server (Debian's mariadb-server) for the fencing suite, with the guard
(contrib/mariadb/fencelock.sql) loaded into the database `app`.

    db = MariaDB(log_dir)     # mariadb-install-db in a fresh temp dir
    db.start()                # mariadbd on a Unix socket only (--skip-networking)
    db.sql("SELECT 1")        # the mariadb client, batch mode; MariaDBError has .sqlstate
    db.stop()                 # SIGTERM by PID, SIGKILL of its group after 30 s; dir removed

Started as root, the data dir belongs to, and mariadb-install-db and mariadbd run as, the
`mysql` user (Debian's package makes it), else `nobody`: the server is not a root process. The
dir is under /tmp (not the test's own dir, whose 0700 parents that user cannot traverse).
Clients connect as MariaDB's root, which mariadb-install-db makes without a password
(--auth-root-authentication-method=normal), reachable only through the socket in that dir.
"""

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GUARD_SQL = os.path.join(HERE, "..", "..", "contrib", "mariadb", "fencelock.sql")
INSTALL_DB = "/usr/bin/mariadb-install-db"
MARIADBD = "/usr/sbin/mariadbd"
CLIENT = "/usr/bin/mariadb"


def available():
    for exe in (INSTALL_DB, MARIADBD, CLIENT):
        if not os.access(exe, os.X_OK):
            return "%s not found: MariaDB is not installed (scripts/deps.sh test installs it)" % exe
    return None


class MariaDBError(Exception):
    def __init__(self, stderr):
        super().__init__(stderr.strip())
        self.stderr = stderr
        m = re.search(r"ERROR \d+ \(([0-9A-Z]{5})\)", stderr)
        self.sqlstate = m.group(1) if m else None


class MariaDB:
    def __init__(self, log_dir, start_timeout=60.0):
        self.log_path = os.path.join(log_dir, "mariadb.log")
        self.start_timeout = start_timeout
        self.dir = None
        self.proc = None
        self.user = None
        if os.geteuid() == 0:
            for name in ("mysql", "nobody"):
                try:
                    self.user = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue

    def _as_user(self):
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="fencelock-mariadb-")
        os.chmod(self.dir, 0o755)  # clients reach the socket in it
        if self.user is not None:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        data = os.path.join(self.dir, "data")
        # a temp dir of its own: the bootstrap's temporary tables in a shared /tmp met another
        # instance's ("Unknown table 'mysql.tmp_user_sys'" with two tests at once)
        tmp = os.path.join(self.dir, "tmp")
        os.mkdir(tmp, 0o700)
        if self.user is not None:
            os.chown(tmp, self.user.pw_uid, self.user.pw_gid)
        with open(self.log_path, "ab") as log:
            subprocess.run([INSTALL_DB, "--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp,
                            "--auth-root-authentication-method=normal", "--skip-test-db"],
                           stdout=log, stderr=subprocess.STDOUT, check=True, timeout=180,
                           cwd=self.dir, **self._as_user())
            self.proc = subprocess.Popen(
                [MARIADBD, "--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp,
                 "--socket=" + self.socket(),
                 "--pid-file=" + os.path.join(self.dir, "mariadbd.pid"), "--skip-networking",
                 "--skip-log-bin", "--innodb-buffer-pool-size=32M",
                 "--innodb-flush-log-at-trx-commit=0", "--max-connections=80",
                 "--innodb-lock-wait-timeout=20", "--log-error=" + os.path.join(self.dir, "err.log")],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.dir, start_new_session=True,
                **self._as_user())
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("mariadbd exited with %s at start:\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            r = subprocess.run(self.argv(db=None) + ["-e", "SELECT 1"], capture_output=True,
                               text=True, timeout=30)
            if r.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("mariadbd not ready after %.0f s: %s"
                                   % (self.start_timeout, r.stderr.strip()))
            time.sleep(0.2)
        if self.user is not None and os.stat("/proc/%d" % self.proc.pid).st_uid != self.user.pw_uid:
            raise RuntimeError("mariadbd does not run as %s" % self.user.pw_name)
        self.sql("CREATE DATABASE app", db=None)
        with open(GUARD_SQL) as f:
            self.sql(f.read())
        return self

    def socket(self):
        return os.path.join(self.dir, "mariadb.sock")

    def argv(self, db="app"):
        """The client's command line: batch mode, no column names."""
        return [CLIENT, "--no-defaults", "--socket=" + self.socket(), "--user=root", "-N", "-B"] \
            + ([db] if db else [])

    def sql(self, script, check=True, db="app", timeout=60):
        r = subprocess.run(self.argv(db), input=script, capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            err = MariaDBError(r.stderr)
            if check:
                raise err
            return err
        return [line for line in r.stdout.splitlines() if line != ""]

    def value(self, query):
        rows = self.sql(query)
        if len(rows) != 1:
            raise AssertionError("expected one row from %r, got %r" % (query, rows))
        return rows[0]

    def stop(self, timeout=30.0):
        try:
            if self.proc is not None and self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGCONT)
                os.kill(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(10)
                    raise RuntimeError("mariadbd ignored SIGTERM for %.0f s; killed" % timeout)
        finally:
            if self.dir is not None:
                try:
                    shutil.copy(os.path.join(self.dir, "err.log"),
                                os.path.join(os.path.dirname(self.log_path), "mariadb-err.log"))
                except OSError:
                    pass
                shutil.rmtree(self.dir, ignore_errors=True)
                self.dir = None

    def log_tail(self, n=30):
        for p in ((os.path.join(self.dir, "err.log") if self.dir else None), self.log_path):
            if not p:
                continue
            try:
                with open(p, "rb") as f:
                    return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-n:])
            except OSError:
                continue
        return ""
