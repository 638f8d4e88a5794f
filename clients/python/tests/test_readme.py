# SPDX-License-Identifier: Apache-2.0
"""The README's examples run as written: each ```python block, in a fresh interpreter with
FENCELOCK_ENDPOINTS naming a real fencelockd, exits 0 and sells one item."""

import os
import re
import subprocess
import sys

import pytest

from conftest import endpoint

PKG = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def blocks():
    with open(os.path.join(PKG, "README.md")) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_readme_examples_run_as_written(node, tmp_path):
    code = blocks()
    assert len(code) == 2, "the blocking and the asyncio example"
    lines = [ln for ln in code[0].splitlines() if ln.strip()]
    assert len(lines) <= 10, "the first example is ten lines of code"
    env = dict(os.environ, FENCELOCK_ENDPOINTS=endpoint(node), PYTHONPATH=PKG,
               PYTHONWARNINGS="error")
    for i, src in enumerate(code):
        p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True,
                           timeout=60, env=env, cwd=str(tmp_path))
        assert p.returncode == 0, "example %d:\n%s%s" % (i, p.stdout, p.stderr)
    from fencelock import Client
    with Client(endpoint(node)) as c:
        assert c.get("stock") == b"98", "each example sold one item, fenced"


def test_readme_examples_pass_mypy_strict(tmp_path):
    """What the README shows a user is type-correct against the package's annotations."""
    pytest.importorskip("mypy")
    for i, src in enumerate(blocks()):
        p = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                            "--cache-dir", str(tmp_path / "cache"), "-c", src],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, MYPYPATH=PKG), cwd=str(tmp_path))
        assert p.returncode == 0, "example %d:\n%s%s" % (i, p.stdout, p.stderr)
