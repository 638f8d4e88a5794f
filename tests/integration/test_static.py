# SPDX-License-Identifier: Apache-2.0
"""The static analyser (scripts/check-static.sh, `make check-static`): the tree has no finding,
and the check reports the defects it is on for (proven on a scratch tree), each with its line,
while what it suppresses on purpose stays quiet."""

import os
import shutil
import subprocess

from helpers import eq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "scripts", "check-static.sh")


def run(*args):
    return subprocess.run(["bash", CHECK] + list(args), capture_output=True, text=True,
                          timeout=600)


def have_cppcheck():
    if shutil.which("cppcheck") is None:
        raise AssertionError("cppcheck is not installed (scripts/deps.sh test installs it)")


def test_the_tree_has_no_static_finding(ctx):
    have_cppcheck()
    p = run()
    eq(p.returncode, 0, "scripts/check-static.sh on the tree: %s%s" % (p.stdout, p.stderr))


def test_the_static_check_reports_defects_with_their_line(ctx):
    have_cppcheck()
    d = ctx.tmp("tree")
    files = {
        "include/x.h": "",
        # error: a write past an array's end; a read of an uninitialised variable
        "src/common/a.c": "int a(void)\n{\n    int v[2];\n    v[2] = 1;\n    return v[0];\n}\n",
        "src/common/b.c": "int b(int c)\n{\n    int x;\n    if (c)\n        x = 1;\n"
                          "    return x;\n}\n",
        # warning: a printf format that disagrees with its argument
        "src/server/c.c": "#include <stdio.h>\nvoid c(const char *s)\n{\n"
                          "    printf(\"%d\\n\", s);\n}\n",
        # style: a condition that is always false
        "src/fsm/d.c": "int d(unsigned u)\n{\n    if (u < 0)\n        return 1;\n    return 0;\n}\n",
        # suppressed on purpose (variableScope: taste), and clean code: no finding
        "src/fsm/e.c": "int e(int c)\n{\n    int k = 2;\n    if (c)\n        return k;\n"
                       "    return 0;\n}\n",
    }
    for rel, body in files.items():
        os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
        with open(os.path.join(d, rel), "w") as f:
            f.write(body)
    p = run("--root", d)
    eq(p.returncode, 1, "exit status: %s%s" % (p.stdout, p.stderr))
    where = sorted({line.split(": ")[0] for line in p.stderr.splitlines() if ": " in line})
    eq(where, ["src/common/a.c:4", "src/common/b.c:6", "src/fsm/d.c:3", "src/server/c.c:4"],
       "a finding per defect, each with its line: %s" % p.stderr)
