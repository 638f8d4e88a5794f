# SPDX-License-Identifier: Apache-2.0
"""`pip install ./clients/python` works offline in a virtualenv that sees Debian's redis-py
(python3 -m venv --system-site-packages; pip --no-index --no-deps --no-build-isolation with
Debian's setuptools), and the installed package talks to a server."""

import os
import shutil
import subprocess

from conftest import endpoint

PKG = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def test_offline_install_in_a_venv(node, tmp_path):
    src = tmp_path / "src"  # a copy: pip builds in place (build/, *.egg-info)
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info",
                                                             "__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    p = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-index", "--no-deps",
                        "--no-build-isolation", str(src)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    code = ("import fencelock, sys; c = fencelock.Client(sys.argv[1]); "
            "s = c.session(ttl=5.0); t = s.acquire('pkg'); s.unlock('pkg'); s.close(); "
            "print(fencelock.__file__, t)")
    p = subprocess.run([str(venv / "bin" / "python"), "-c", code, endpoint(node)],
                       capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    path, token = p.stdout.split()
    assert path.startswith(str(venv)), "imported from the venv: %s" % path
    assert int(token) > 0
    # the version in one place (fencelock/_version.py) is the distribution's; py.typed and
    # the asyncio subpackage are installed
    code = ("import importlib.metadata as m, os, fencelock; "
            "d = os.path.dirname(fencelock.__file__); "
            "print(m.version('fencelock'), fencelock.__version__, "
            "os.path.exists(os.path.join(d, 'py.typed')), "
            "os.path.exists(os.path.join(d, 'aio', 'session.py')))")
    p = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True,
                       text=True, timeout=60, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    dist, mod, typed, aio = p.stdout.split()
    assert dist == mod and typed == "True" and aio == "True", p.stdout
