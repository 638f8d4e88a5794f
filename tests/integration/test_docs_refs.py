# SPDX-License-Identifier: Apache-2.0
"""The documentation's references stay true (scripts/check-docs.py, `make check-docs`): every
file and symbol named in docs/design.md's file tables and "Where to change what" exists, every
file of a listed folder has its line, every `docs/x.md "Heading"` reference resolves, and no
tracker reference ("issue" and a number) or section number comes back. The tree passes; a
scratch copy with one of each mistake fails, naming each."""

import os
import re
import shutil
import subprocess
import sys

from helpers import eq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "scripts", "check-docs.py")


def run(*args):
    return subprocess.run([sys.executable, CHECK] + list(args), capture_output=True, text=True,
                          timeout=120)


def scratch_tree(ctx):
    d = ctx.tmp("tree")
    shutil.rmtree(d, ignore_errors=True)
    # Only what check-docs reads: not the build trees nor the clients' installed packages
    # (node_modules alone is ~100 MB, whose copy outran the test's bound on a loaded machine).
    shutil.copytree(ROOT, d, ignore=shutil.ignore_patterns(
        ".git", "build", "__pycache__", "node_modules", "target", "dist", "test-dist"))
    return d


def edit(d, rel, old, new):
    p = os.path.join(d, rel)
    with open(p) as f:
        text = f.read()
    assert old in text, "%s: %r not found (the test needs updating)" % (rel, old)
    with open(p, "w") as f:
        f.write(text.replace(old, new, 1))


def test_the_tree_passes_the_docs_check(ctx):
    p = run()
    eq((p.returncode, p.stdout.splitlines()[-1:]),
       (0, ["docs check: design.md's files and symbols exist, doc paths and heading "
            "references resolve, no tracker references"]), "scripts/check-docs.py on the tree:\n" + p.stdout)


def test_the_docs_check_finds_each_kind_of_stale_reference(ctx):
    d = scratch_tree(ctx)
    p = run("--root", d)
    eq(p.returncode, 0, "the unchanged copy passes:\n" + p.stdout)

    # A heading renamed: every reference to it, in code and docs, is reported.
    edit(d, "docs/operations.md", "## Upgrading\n", "## Upgrades\n")
    # A symbol of "Where to change what" renamed in the code, a file named there removed.
    for top, _, files in os.walk(d):
        for name in files:
            if name.endswith((".c", ".h", ".py")):  # this file names it too
                p = os.path.join(top, name)
                with open(p, errors="replace") as f:
                    text = f.read()
                if "lease_takeover" in text:
                    with open(p, "w") as f:
                        f.write(text.replace("lease_takeover", "lease_take_over"))
    os.remove(os.path.join(d, "tests", "unit", "test_lease.c"))
    # A new file without its line in the folder's file table; a row naming no file.
    with open(os.path.join(d, "src", "fsm", "unlisted.c"), "w") as f:
        f.write("/* new */\n")
    edit(d, "docs/design.md", "| `kv.c` | the key-value store |",
         "| `kv.c` | the key-value store |\n| `gone.c` | a file that is not there |")
    # A tracker reference, in a C comment and in a doc.
    edit(d, "src/common/buf.h", "a growable byte buffer", "a growable byte buffer (issue " "7)")
    edit(d, "docs/server.md", "# Running fencelockd\n",
         "# Running fencelockd\n\nSee issues #" "3.\n")
    # A doc that does not exist (a decision record never written).
    edit(d, "src/client/link.h", "0001-client-owns-its-socket-io.md", "0009-nothing.md")
    # A section cited by its number.
    edit(d, "docs/client.md", "\n## ", "\nAs docs/design.md \u00a7" "4 says.\n\n## ")

    p = run("--root", d)
    eq(p.returncode, 1, "exit status:\n" + p.stdout)
    out = p.stdout

    def has(pattern, what):
        if not re.search(pattern, out, re.M):
            raise AssertionError("%s: no line matching %r in:\n%s" % (what, pattern, out))

    has(r'^tests/integration/test_upgrade\.py:\d+: '
        r'docs/operations\.md has no heading "Upgrading"$', "a reference from a test")
    has(r'^docs/protocol\.md:\d+: docs/operations\.md has no heading "Upgrading"$',
        "a reference from another doc")
    has(r"^docs/design\.md:\d+: `lease_takeover` is named nowhere in the code$",
        "a renamed symbol of 'Where to change what'")
    has(r"^docs/design\.md:\d+: `tests/unit/test_lease\.c` names no file in the tree$",
        "a removed file of 'Where to change what'")
    has(r"^docs/design\.md: src/fsm/unlisted\.c has no row in", "a file without its line")
    has(r"^docs/design\.md:\d+: `gone\.c` is not a file of src/fsm/$", "a row naming no file")
    has(r'^src/common/buf\.h:\d+: "issue[ ]7": say the reason itself', "a tracker reference in C")
    has(r'^docs/server\.md:3: "issues[ ]#3": say the reason itself', "a tracker reference in a doc")
    has(r"^src/client/link\.h:\d+: docs/decisions/0009-nothing\.md does not exist$",
        "a doc that does not exist")
    has(r"^docs/client\.md:\d+: docs/design\.md \u00a74: cite the heading", "a section number")
    eq(out.splitlines()[-1].startswith("docs check failed: "), True, "the closing line")
