# SPDX-License-Identifier: Apache-2.0
"""Includes run only downwards (docs/design.md "Layers", scripts/check-layers.py): the tree
passes, and the check finds an include that runs up or sideways (proven on a scratch tree)."""

import os
import subprocess
import sys

from helpers import eq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "scripts", "check-layers.py")


def run(*args):
    return subprocess.run([sys.executable, CHECK] + list(args), capture_output=True, text=True,
                          timeout=60)


def test_the_tree_includes_only_downwards(ctx):
    p = run()
    eq((p.returncode, p.stdout), (0, "layer check: includes run only downwards\n"),
       "scripts/check-layers.py on the tree")


def test_the_layer_check_finds_includes_that_run_up_or_sideways(ctx):
    d = ctx.tmp("tree")
    files = {
        "include/fencelock.h": "",
        "src/common/a.c": '#include "common/a.h"\n',                 # same layer: fine
        "src/fsm/b.c": '#include "common/a.h"\n#include "server/s.h"\n',  # up: reported
        "src/server/c.c": '#include "raft/rn.h"\n#include "fencelock.h"\n',  # the client's header
        "src/server/d.c": '  #  include "client/client.h"\n',         # sideways
        "src/cli/e.c": '#include "client/client.h"\n#include "fencelock.h"\n',  # fine
        "src/client/f.c": '#include "cli/cli.h"\n',                  # up: reported
    }
    for rel, body in files.items():
        os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
        with open(os.path.join(d, rel), "w") as f:
            f.write(body)
    p = run("--root", d)
    eq(p.returncode, 1, "exit status: %s" % p.stdout)
    eq(sorted(p.stdout.splitlines()[:-1]), [
        "src/client/f.c:1: client includes cli/cli.h (cli)",
        "src/fsm/b.c:2: fsm includes server/s.h (server)",
        "src/server/c.c:2: server includes fencelock.h (include)",
        "src/server/d.c:1: server includes client/client.h (client)",
    ], "the violations, each with its line")
