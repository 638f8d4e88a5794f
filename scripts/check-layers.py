#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Includes run only downwards (docs/design.md "Layers"): every `#include "..."` in src/ and
include/ is checked against the layer table below, and one that runs up or sideways is
reported as FILE:LINE: LAYER includes TARGET. Exit status 1 if any; `make check-layers` (part
of `make test`) runs it. `--root DIR` checks another tree (tests/integration/test_layers.py
proves the check bites on a scratch tree).

The server and the client library share only src/common; the public header include/fencelock.h
is the client's (the server gets the version from the Makefile, not from it).
"""

import os
import re
import sys

ALLOWED = {
    "common": {"common"},
    "fsm": {"fsm", "common"},
    "raft": {"raft", "fsm", "common"},
    "server": {"server", "raft", "fsm", "common"},
    "client": {"client", "common", "include"},
    "cli": {"cli", "client", "common", "include"},
    "include": set(),
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of_target(target, here):
    """The layer an include names: src/<layer>/... by its first component, a public header by
    being in include/, a bare name by the including file's own layer."""
    head = target.split("/")[0]
    if head in ALLOWED and "/" in target:
        return head
    if os.path.isfile(os.path.join(ROOT, "include", target)):
        return "include"
    return here


def files():
    for top in ("src", "include"):
        for d, _, names in os.walk(os.path.join(ROOT, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield os.path.join(d, n)


def main():
    global ROOT
    ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    if "--root" in sys.argv[1:]:
        ROOT = os.path.abspath(sys.argv[sys.argv.index("--root") + 1])
    bad = 0
    for path in files():
        rel = os.path.relpath(path, ROOT)
        parts = rel.split(os.sep)
        here = "include" if parts[0] == "include" else parts[1]
        if here not in ALLOWED:
            print("%s: in no layer of scripts/check-layers.py" % rel)
            bad += 1
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for no, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                to = layer_of_target(m.group(1), here)
                if to not in ALLOWED[here] and to != here:
                    print("%s:%d: %s includes %s (%s)" % (rel, no, here, m.group(1), to))
                    bad += 1
    if bad:
        print("layer check failed: %d include(s) run up or sideways (docs/design.md \"Layers\")"
              % bad)
        return 1
    print("layer check: includes run only downwards")
    return 0


ROOT = ""
if __name__ == "__main__":
    sys.exit(main())
