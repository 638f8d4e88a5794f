# SPDX-License-Identifier: Apache-2.0
"""The Debian packages and the systemd unit (debian/, docs/operations.md "Install from packages").

test_systemd_unit_verifies: `systemd-analyze verify` accepts debian/fencelockd.service without
a warning (systemd is not PID 1 here: the unit is verified offline, its ExecStart pointed at
the built binary, man pages not looked up).

test_deb_build_lint_install_run_purge: `make deb` builds the four packages, lintian finds no
error, `dpkg -i` installs them (the system user appears), the installed fencelockd starts by
hand on free loopback ports with a temp data dir, the installed CLI (libfencelock.so.0 found
through ldconfig) runs a command under a lock against it, a program builds against
libfencelock-dev with pkg-config, then `dpkg --purge` leaves no file, directory nor user
behind. Needs root (dpkg) and refuses to run over an existing installation of the packages.
"""

import os
import re
import shutil
import subprocess
import tempfile

from helpers import eq
from server import Server

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
UNIT = os.path.join(ROOT, "debian", "fencelockd.service")
PACKAGES = ["fencelockd", "fencelock", "libfencelock0", "libfencelock-dev"]


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


def installed(pkg):
    r = run(["dpkg-query", "-W", "-f=${db:Status-Status}", pkg])
    return r.returncode == 0 and r.stdout.strip() not in ("", "not-installed", "config-files")


def purge_all():
    run(["dpkg", "--purge"] + PACKAGES, timeout=120)


def build_debs():
    r = run(["make", "deb"], timeout=900, cwd=ROOT)
    assert r.returncode == 0, "make deb failed:\n" + (r.stdout + r.stderr)[-4000:]
    # The -dbgsym packages dh_strip makes beside them are not installed.
    debs = sorted(os.path.join(ROOT, "build", "deb", f)
                  for f in os.listdir(os.path.join(ROOT, "build", "deb"))
                  if f.endswith(".deb") and "-dbgsym_" not in f)
    names = sorted(os.path.basename(d).split("_")[0] for d in debs)
    eq(names, sorted(PACKAGES), "packages built")
    return debs


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
    debs = build_debs()
    lint(debs)
    ctx.defer(purge_all)  # whatever fails below
    r = run(["dpkg", "-i"] + debs, timeout=120)
    eq(r.returncode, 0, "dpkg -i: %s %s" % (r.stdout, r.stderr))
    assert run(["getent", "passwd", "fencelock"]).returncode == 0, "no system user fencelock"
    for f in ("/etc/fencelock/fencelockd.conf", "/usr/share/man/man8/fencelockd.8.gz",
              "/usr/share/man/man1/fencelock.1.gz", "/usr/share/doc/fencelock/protocol.md",
              "/etc/default/fencelockd"):
        assert os.path.exists(f), f
    assert (os.path.exists("/lib/systemd/system/fencelockd.service")
            or os.path.exists("/usr/lib/systemd/system/fencelockd.service")), "the unit"
    run_installed_server_and_cli(ctx)
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
    eq(run(["getent", "passwd", "fencelock"]).returncode, 2, "user fencelock after purge")
    eq(run(["getent", "group", "fencelock"]).returncode, 2, "group fencelock after purge")
    eq(run(["dpkg-query", "-W", "-f=${db:Status-Status}"] + PACKAGES).stdout.count("config"), 0,
       "config-files state after purge")


# The package build is a full release build (a few minutes on a busy machine) plus lintian.
test_deb_build_lint_install_run_purge.timeout = 1500
