#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every source file of fencelock carries `SPDX-License-Identifier: Apache-2.0` in its first
lines (LICENSE holds the text). `scripts/spdx.py` lists the files that lack it and exits 1;
`scripts/spdx.py --fix` adds the line, in the file's own comment syntax, as its first line
(after a #! line). `--root DIR` works on another git checkout than this one.
tests/integration/test_license.py runs the check.

Source files: what git tracks with the endings in STYLES, Makefile, debian/rules, the
maintainer scripts and .ci/run; vendored or generated files are none here.
"""

import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TAG = "SPDX-License-Identifier: Apache-2.0"
STYLES = {".c": "/* %s */", ".h": "/* %s */", ".py": "# %s", ".sh": "# %s", ".js": "// %s",
          ".go": "// %s",
          ".sql": "-- %s"}
NAMED = {"Makefile": "# %s", "debian/rules": "# %s", "debian/fencelockd.postinst": "# %s",
         "debian/fencelockd.postrm": "# %s", ".ci/run": "# %s", "Dockerfile": "# %s",
         "docker-compose.yml": "# %s", "debian/tests/smoke": "# %s",
         "debian/tests/python-client": "# %s"}
HEAD_LINES = 3  # the tag must stand within the first lines


def sources():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split("\n")
    for path in filter(None, out):
        style = NAMED.get(path) or STYLES.get(os.path.splitext(path)[1])
        if style and os.path.isfile(os.path.join(ROOT, path)):
            yield path, style


def has_tag(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        head = [f.readline() for _ in range(HEAD_LINES)]
    return any(TAG in line for line in head)


def fix(path, style):
    full = os.path.join(ROOT, path)
    with open(full, encoding="utf-8") as f:
        lines = f.readlines()
    at = 1 if lines and lines[0].startswith("#!") else 0
    lines.insert(at, style % TAG + "\n")
    with open(full, "w", encoding="utf-8") as f:
        f.writelines(lines)


def main():
    global ROOT
    if "--root" in sys.argv[1:]:
        ROOT = os.path.abspath(sys.argv[sys.argv.index("--root") + 1])
    missing = [(p, s) for p, s in sources() if not has_tag(p)]
    if "--fix" in sys.argv[1:]:
        for p, s in missing:
            fix(p, s)
        print("spdx: added the line to %d files" % len(missing))
        return 0
    for p, _ in missing:
        print("no SPDX line: %s" % p)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
