# SPDX-License-Identifier: Apache-2.0
"""The Debian packages and the systemd unit (debian/, docs/operations.md "Install from packages").

test_systemd_unit_verifies: `systemd-analyze verify` accepts debian/fencelockd.service without
a warning (systemd is not PID 1 here: the unit is verified offline, its ExecStart pointed at
the built binary, man pages not looked up).

test_unit_reads_only_the_conf_file: the unit's ExecStart passes the conf file and no other
setting, so the conf file's data-dir is the one used (it was silently overridden by a
--data-dir on the unit's command line); checked with the command line itself and
`--print-config`.

test_logrotate_reopens_audit_log: debian/fencelockd.logrotate, run by logrotate(8) over a
temp directory (its path the only change; `systemctl` a stand-in on PATH that sends SIGHUP as
`systemctl reload` would), moves a live server's audit log aside and the server's next audit
line goes to a new file.

test_deb_build_lint_install_run_purge: `make deb` builds the five packages, running the unit
tests on the way (dh_auto_test; not with DEB_BUILD_OPTIONS=nocheck), lintian finds no error,
`dpkg -i` installs them (the system user appears), the installed fencelockd starts by hand on
free loopback ports with a temp data dir, the installed CLI (libfencelock.so.0 found through
ldconfig) runs a command under a lock against it, the autopkgtests of debian/tests/control run
against the installed packages (the server and the CLI; the Python module), a program builds
against libfencelock-dev with pkg-config, then `dpkg --purge` leaves no file nor directory
behind but keeps the system user (Debian's guidance). Then the container image's build step
(deploy/container/install-debs.sh, the Dockerfile's RUN) installs the same packages with
apt-get, and the installed server runs as user fencelock on /var/lib/fencelock as the image's
entrypoint does. Needs root (dpkg) and refuses to run over an existing installation of the
packages.
"""

import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time

from helpers import eq, open_session
from server import Server, free_port

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
UNIT = os.path.join(ROOT, "debian", "fencelockd.service")
CONF = os.path.join(ROOT, "debian", "fencelockd.conf")
LOGROTATE = os.path.join(ROOT, "debian", "fencelockd.logrotate")
AUTOPKGTESTS = os.path.join(ROOT, "debian", "tests")
INSTALL_DEBS = os.path.join(ROOT, "deploy", "container", "install-debs.sh")
PACKAGES = ["fencelockd", "fencelock", "libfencelock0", "libfencelock-dev", "python3-fencelock"]
# What the container image installs (deploy/container/install-debs.sh).
IMAGE_PACKAGES = ["fencelockd", "fencelock", "libfencelock0"]


def run(argv, timeout=60, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def test_systemd_unit_verifies(ctx):
    assert shutil.which("systemd-analyze"), "systemd-analyze (package systemd) is needed"
    d = tempfile.mkdtemp(prefix="flunit", dir=ctx.workdir)
    with open(UNIT) as f:
        unit = f.read()
    assert "ExecStart=/usr/sbin/fencelockd " in unit
    with open(os.path.join(d, "fencelockd.service"), "w") as f:
        f.write(unit.replace("/usr/sbin/fencelockd", os.path.abspath(ctx.binary)))
    r = run(["systemd-analyze", "verify", "--man=no", os.path.join(d, "fencelockd.service")])
    eq(r.returncode, 0, "systemd-analyze verify: %s" % r.stderr)
    # verify exits 0 over unknown keys and bad values, only warning: any output is a failure.
    eq(r.stderr.strip() + r.stdout.strip(), "", "systemd-analyze verify's warnings")
    for want in ("Type=notify", "StateDirectory=fencelock", "ProtectSystem=strict",
                 "ProtectHome=true", "NoNewPrivileges=true", "PrivateTmp=true",
                 "Restart=on-failure", "User=fencelock"):
        assert re.search("^%s$" % re.escape(want), unit, re.M), want
    # LimitNOFILE covers the default --max-clients plus fencelockd's reserve (fdlimit.h:
    # 32 + 2 * 16 Raft connections + 64 HTTP).
    m = re.search(r"^LimitNOFILE=(\d+)$", unit, re.M)
    assert m and int(m.group(1)) >= 10000 + 32 + 2 * 16 + 64, "LimitNOFILE"


def unit_exec_start():
    with open(UNIT) as f:
        m = re.search(r"^ExecStart=(.*)$", f.read(), re.M)
    assert m, "no ExecStart in the unit"
    return shlex.split(m.group(1))


def print_config(argv):
    """{key: (value, source)} of `argv --print-config` (fencelockd's settings and their origin)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FENCELOCK_")}
    r = run(argv + ["--print-config"], env=env)
    eq(r.returncode, 0, "%s --print-config: %s" % (" ".join(argv), r.stderr))
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^#? ?([a-z][a-z0-9-]*) = ?(.*?)\s+# (.*)$", line)
        if m:
            out[m.group(1)] = (m.group(2).strip(), m.group(3))
    return out


def test_unit_reads_only_the_conf_file(ctx):
    argv = unit_exec_start()
    eq(argv, ["/usr/sbin/fencelockd", "--config", "/etc/fencelock/fencelockd.conf"],
       "the unit's command line: the conf file and nothing else")
    with open(UNIT) as f:
        unit = f.read()
    assert "EnvironmentFile" not in unit and "$" not in unit.split("ExecStart=")[1].split("\n")[0]
    with open(CONF) as f:
        conf = f.read()
    assert re.search(r"^data-dir = /var/lib/fencelock$", conf, re.M), "conf: data-dir"
    # The same command line with a conf file that moves data-dir: the file's value wins.
    moved = os.path.join(ctx.workdir, "moved-data")
    alt = os.path.join(ctx.workdir, "fencelockd.conf")
    with open(alt, "w") as f:
        f.write(conf.replace("data-dir = /var/lib/fencelock", "data-dir = " + moved))
    argv = [ctx.binary if a == "/usr/sbin/fencelockd" else alt if a.endswith(".conf") else a
            for a in argv]
    cfg = print_config(argv)
    assert "data-dir" in cfg, cfg
    eq(cfg["data-dir"][0], moved, "data-dir the unit's fencelockd uses")
    assert cfg["data-dir"][1].startswith("file:"), "data-dir's source: %r" % (cfg["data-dir"],)


def test_logrotate_reopens_audit_log(ctx):
    assert shutil.which("logrotate"), "logrotate is needed (scripts/deps.sh test installs it)"
    logdir = os.path.join(ctx.workdir, "log")
    os.makedirs(logdir, mode=0o750)
    audit = os.path.join(logdir, "audit.log")
    srv = ctx.server("--audit-log", audit)
    # systemctl for the postrotate script: is-active answers yes, reload sends SIGHUP (as the
    # unit's ExecReload does); each call is recorded.
    bindir = os.path.join(ctx.workdir, "bin")
    os.makedirs(bindir)
    calls = os.path.join(ctx.workdir, "systemctl.calls")
    with open(os.path.join(bindir, "systemctl"), "w") as f:
        f.write('#!/bin/sh\necho "$*" >>%s\ncase "$1" in is-active) exit 0 ;; '
                'reload) kill -HUP %d ;; esac\n' % (calls, srv.proc.pid))
    os.chmod(os.path.join(bindir, "systemctl"), 0o755)
    with open(LOGROTATE) as f:
        rules = f.read()
    assert "/var/log/fencelock/*.log {" in rules
    conf = os.path.join(ctx.workdir, "logrotate.conf")
    with open(conf, "w") as f:
        f.write(rules.replace("/var/log/fencelock/", logdir + "/"))
    os.chmod(conf, 0o644)

    def revoke(c):
        sid = open_session(c, 60000)
        eq(c.call("SESSION.REVOKE", sid), "OK", "SESSION.REVOKE")
        return "sid=%d" % sid

    with srv.conn() as c:
        first = revoke(c)
        wait_for_text(audit, first)
        env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"])
        r = run(["logrotate", "-f", "-s", os.path.join(ctx.workdir, "lr.state"), conf], env=env)
        eq(r.returncode, 0, "logrotate: %s %s" % (r.stdout, r.stderr))
        with open(calls) as f:
            eq(f.read().split("\n")[:2], ["is-active --quiet fencelockd.service",
                                            "reload fencelockd.service"], "postrotate's calls")
        with open(audit + ".1") as f:
            assert first in f.read(), "the rotated file holds the line before the rotation"
        second = revoke(c)
        wait_for_text(audit, second)  # reopened: a new audit.log
    with open(audit) as f:
        assert first not in f.read(), "the new audit.log starts after the rotation"


def wait_for_text(path, needle, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                if needle in f.read():
                    return
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    raise AssertionError("%r never appeared in %s" % (needle, path))


def test_deb_rules_honour_nocheck(ctx):
    """dh_auto_test runs the unit tests, and runs nothing with DEB_BUILD_OPTIONS=nocheck
    (make -n: what debian/rules would run)."""
    def would_run(opts):
        env = dict(os.environ, DEB_BUILD_OPTIONS=opts)
        r = run(["make", "-s", "-n", "-f", "debian/rules", "override_dh_auto_test"], cwd=ROOT,
                env=env)
        eq(r.returncode, 0, "make -n debian/rules: %s" % r.stderr)
        return r.stdout
    assert "unit-tests" in would_run(""), would_run("")
    skipped = would_run("nocheck")
    assert "unit-tests" not in skipped and "nocheck: the unit tests are not run" in skipped, \
        skipped


def installed(pkg):
    r = run(["dpkg-query", "-W", "-f=${db:Status-Status}", pkg])
    return r.returncode == 0 and r.stdout.strip() not in ("", "not-installed", "config-files")


def purge_all():
    run(["dpkg", "--purge"] + PACKAGES, timeout=120)


def remove_user():
    run(["deluser", "--system", "--quiet", "fencelock"])
    run(["delgroup", "--system", "--quiet", "fencelock"])


def build_debs():
    env = {k: v for k, v in os.environ.items() if k != "DEB_BUILD_OPTIONS"}
    r = run(["make", "deb"], timeout=1200, cwd=ROOT, env=env)
    assert r.returncode == 0, "make deb failed:\n" + (r.stdout + r.stderr)[-4000:]
    # dh_auto_test ran every unit test of tests/unit, each passing.
    units = [f for f in os.listdir(os.path.join(ROOT, "tests", "unit"))
             if f.startswith("test_") and f.endswith(".c")]
    sums = re.findall(r"^tests: (\d+) passed, (\d+) failed$", r.stdout, re.M)
    eq(len(sums), len(units), "unit-test summaries in make deb's output")
    assert all(f == "0" and int(p) > 0 for p, f in sums), sums
    # The -dbgsym packages dh_strip makes beside them are not installed.
    debs = sorted(os.path.join(ROOT, "build", "deb", f)
                  for f in os.listdir(os.path.join(ROOT, "build", "deb"))
                  if f.endswith(".deb") and "-dbgsym_" not in f)
    names = sorted(os.path.basename(d).split("_")[0] for d in debs)
    eq(names, sorted(PACKAGES), "packages built")
    return debs


def free_port_run(n=3):
    """A port p with p..p+n-1 free on loopback (the autopkgtests use three in a row)."""
    for _ in range(200):
        p = free_port()
        ok = True
        for q in range(p, p + n):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", q))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            return p
    raise AssertionError("no %d free ports in a row" % n)


def autopkgtests():
    """[(name, [depends])] of debian/tests/control."""
    with open(os.path.join(AUTOPKGTESTS, "control")) as f:
        stanzas = f.read().split("\n\n")
    tests = []
    for st in stanzas:
        fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", st, re.M))
        if "Tests" in fields:
            deps = [d.strip() for d in fields.get("Depends", "").split(",") if d.strip()]
            tests += [(t, deps) for t in fields["Tests"].split()]
    return tests


def run_autopkgtests(ctx):
    tests = autopkgtests()
    eq(sorted(t for t, _ in tests), ["python-client", "smoke"], "debian/tests/control")
    for name, deps in tests:
        for d in deps:
            assert installed(d), "%s needs %s installed" % (name, d)
        tmp = tempfile.mkdtemp(prefix="adt-" + name, dir=ctx.workdir)
        env = {k: v for k, v in os.environ.items() if not k.startswith("FENCELOCK_")}
        # A testbed's PATH: Debian's python3, not one installed elsewhere (pyenv, a venv).
        env.update(AUTOPKGTEST_TMP=tmp, FL_SMOKE_PORT=str(free_port_run()),
                   PATH="/usr/sbin:/usr/bin:/sbin:/bin")
        r = run([os.path.join(AUTOPKGTESTS, name)], timeout=180, env=env, cwd=tmp)
        eq(r.returncode, 0, "autopkgtest %s: %s\n%s" % (name, r.stdout, r.stderr))


def lint(debs):
    r = run(["lintian", "--no-tag-display-limit"] + debs, timeout=300)
    errors = [l for l in r.stdout.splitlines() if l.startswith("E:")]
    assert not errors, "lintian errors:\n" + "\n".join(errors)
    assert r.returncode == 0, "lintian: %s %s" % (r.stdout, r.stderr)


def run_installed_server_and_cli(ctx):
    r = run(["/usr/sbin/fencelockd", "--version"])
    eq((r.returncode, r.stdout.strip()), (0, "fencelockd 0.1.0"), "fencelockd --version")
    assert "libfencelock.so.0" in run(["ldconfig", "-p"]).stdout, "ldconfig knows no libfencelock"
    ldd = run(["ldd", "/usr/bin/fencelock"]).stdout
    assert re.search(r"libfencelock\.so\.0 => (/usr)?/lib/\S+/libfencelock\.so\.0", ldd), ldd
    srv = Server("/usr/sbin/fencelockd", os.path.join(ctx.workdir, "installed"))
    ctx.servers.append(srv)
    srv.start()
    r = run(["/usr/bin/fencelock", "--endpoints", "127.0.0.1:%d" % srv.port, "lock", "pkgtest",
             "--ttl", "10s", "--", "sh", "-c", 'echo "token=$FENCELOCK_TOKEN"'], timeout=30)
    eq(r.returncode, 0, "fencelock lock: %s" % r.stderr)
    assert re.search(r"^token=\d+$", r.stdout, re.M), r.stdout
    eq(srv.stop(), 0, "installed fencelockd's exit status")


def build_against_dev(ctx):
    src = os.path.join(ctx.workdir, "app.c")
    with open(src, "w") as f:
        f.write('#include <fencelock.h>\n#include <stdio.h>\n'
                'int main(void) { fl_err e; fl_client *c = fl_client_new("127.0.0.1:1", NULL, &e);\n'
                '  if (c) fl_client_free(c); puts(FL_VERSION); return 0; }\n')
    flags = run(["pkg-config", "--cflags", "--libs", "fencelock"])
    eq(flags.returncode, 0, "pkg-config fencelock: %s" % flags.stderr)
    app = os.path.join(ctx.workdir, "app")
    r = run(["cc", "-o", app, src] + flags.stdout.split())
    eq(r.returncode, 0, "cc against libfencelock-dev: %s" % r.stderr)
    r = run([app])
    eq((r.returncode, r.stdout.strip()), (0, "0.1.0"), "the program built against the -dev")


def shared_dir(path):
    """A directory that another installed package owns too (/usr/bin, /etc/default, ...), the
    root, or one of merged-/usr's links (/lib -> usr/lib)."""
    if path == "/." or (os.path.islink(path) and path in ("/bin", "/sbin", "/lib", "/lib64")):
        return True
    if not os.path.isdir(path) or os.path.islink(path):
        return False
    r = run(["dpkg", "-S", path])
    return r.returncode == 0 and any(l.endswith(": " + path) for l in r.stdout.splitlines())


def owned_paths():
    paths = set()
    for p in PACKAGES:
        paths.update(l for l in run(["dpkg", "-L", p]).stdout.splitlines() if l.startswith("/"))
    return paths


def test_deb_build_lint_install_run_purge(ctx):
    assert os.geteuid() == 0, "dpkg -i needs root"
    already = [p for p in PACKAGES if installed(p)]
    assert not already, "refusing to run over installed packages: %s" % already
    if run(["getent", "passwd", "fencelock"]).returncode == 2:
        ctx.defer(remove_user)  # purge keeps it: the test leaves the machine as it found it
    debs = build_debs()
    lint(debs)
    ctx.defer(purge_all)  # whatever fails below
    r = run(["dpkg", "-i"] + debs, timeout=120)
    eq(r.returncode, 0, "dpkg -i: %s %s" % (r.stdout, r.stderr))
    assert run(["getent", "passwd", "fencelock"]).returncode == 0, "no system user fencelock"
    for f in ("/etc/fencelock/fencelockd.conf", "/usr/share/man/man8/fencelockd.8.gz",
              "/usr/share/man/man1/fencelock.1.gz", "/usr/share/doc/fencelock/protocol.md",
              "/etc/logrotate.d/fencelockd"):
        assert os.path.exists(f), f
    assert not os.path.exists("/etc/default/fencelockd"), "the unit reads the conf file only"
    r = run(["/usr/bin/python3", "-c",
             "import fencelock, fencelock.client; print(fencelock.__file__)"],
            cwd="/")
    eq(r.returncode, 0, "import fencelock: %s" % r.stderr)
    assert r.stdout.startswith("/usr/lib/python3/dist-packages/fencelock/"), r.stdout
    assert (os.path.exists("/lib/systemd/system/fencelockd.service")
            or os.path.exists("/usr/lib/systemd/system/fencelockd.service")), "the unit"
    run_installed_server_and_cli(ctx)
    run_autopkgtests(ctx)
    build_against_dev(ctx)
    paths = owned_paths()
    os.makedirs("/var/lib/fencelock", exist_ok=True)  # what systemd's StateDirectory makes
    r = run(["dpkg", "--purge"] + PACKAGES, timeout=120)
    eq(r.returncode, 0, "dpkg --purge: %s %s" % (r.stdout, r.stderr))
    left = sorted(p for p in paths if os.path.lexists(p) and not shared_dir(p))
    left += [p for p in ("/etc/fencelock", "/var/lib/fencelock", "/var/log/fencelock")
             if os.path.lexists(p)]
    assert not left, "left after purge: %s" % left
    assert not [p for p in PACKAGES if installed(p)], "still installed after purge"
    eq(run(["getent", "passwd", "fencelock"]).returncode, 0, "user fencelock kept by purge")
    eq(run(["getent", "group", "fencelock"]).returncode, 0, "group fencelock kept by purge")
    eq(run(["dpkg-query", "-W", "-f=${db:Status-Status}"] + PACKAGES).stdout.count("config"), 0,
       "config-files state after purge")
    container_build_step(ctx, debs)


def container_build_step(ctx, debs):
    """The Dockerfile's RUN (deploy/container/install-debs.sh) against the built packages, then
    the installed server as the image runs it: user fencelock, the packaged conf file (so
    /var/lib/fencelock), loopback ports here instead of the image's 0.0.0.0."""
    with open(os.path.join(ROOT, "Dockerfile")) as f:
        dockerfile = f.read()
    assert re.search(r"^FROM debian:12-slim$", dockerfile, re.M), "the image's base"
    assert re.search(r"^RUN sh /usr/local/lib/fencelock/install-debs.sh --image /tmp/debs",
                     dockerfile, re.M), "the Dockerfile runs the script the test runs"
    r = run(["sh", INSTALL_DEBS, os.path.dirname(debs[0])], timeout=600)
    eq(r.returncode, 0, "install-debs.sh: %s %s" % (r.stdout, r.stderr))
    eq(sorted(p for p in PACKAGES if installed(p)), sorted(IMAGE_PACKAGES), "installed")
    for d in ("/var/lib/fencelock", "/var/log/fencelock"):
        st = os.stat(d)
        eq((run(["id", "-un", str(st.st_uid)]).stdout.strip(), oct(st.st_mode & 0o777)),
           ("fencelock", "0o750"), d)
    port = free_port_run()
    # setpriv execs fencelockd itself (runuser would stay its parent and take the SIGTERM).
    argv = ["setpriv", "--reuid=fencelock", "--regid=fencelock", "--init-groups",
            "/usr/sbin/fencelockd", "--config",
            "/etc/fencelock/fencelockd.conf", "--listen", "127.0.0.1:%d" % port,
            "--raft-listen", "127.0.0.1:%d" % (port + 1), "--http-listen",
            "127.0.0.1:%d" % (port + 2)]
    log = open(os.path.join(ctx.workdir, "image-server.log"), "wb")
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        out = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r = run(["/usr/bin/fencelock", "--endpoints", "127.0.0.1:%d" % port, "lock",
                     "image", "--ttl", "10s", "--", "sh", "-c", 'echo "token=$FENCELOCK_TOKEN"'],
                    timeout=30)
            if r.returncode == 0:
                out = r.stdout
                break
            assert p.poll() is None, "the image's fencelockd exited: %s" % p.returncode
            time.sleep(0.5)
        assert out and re.search(r"^token=\d+$", out, re.M), out
        assert os.listdir("/var/lib/fencelock"), "the server wrote its data dir"
    finally:
        p.terminate()
        rc = p.wait(30)
        log.close()
    eq(rc, 0, "the image's fencelockd's exit status")
    r = run(["dpkg", "--purge"] + IMAGE_PACKAGES, timeout=120)
    eq(r.returncode, 0, "dpkg --purge: %s %s" % (r.stdout, r.stderr))


# The package build is a full release build (a few minutes on a busy machine) plus lintian.
test_deb_build_lint_install_run_purge.timeout = 2400
