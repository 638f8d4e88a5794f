# SPDX-License-Identifier: Apache-2.0
"""The license: Apache-2.0 in LICENSE, in every source file's SPDX line, in the
Debian packages' machine-readable copyright file, in the Python package's metadata and in the
README."""

import os
import re
import subprocess
import sys

from helpers import eq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def read(*path):
    with open(os.path.join(ROOT, *path), encoding="utf-8") as f:
        return f.read()


def test_license_file_is_apache_2(ctx):
    text = read("LICENSE")
    assert "Apache License" in text and "Version 2.0, January 2004" in text, text[:200]
    assert "END OF TERMS AND CONDITIONS" in text, "the whole text, not a pointer to it"


def test_every_source_file_has_an_spdx_line(ctx):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "spdx.py")],
                       capture_output=True, text=True, timeout=60)
    eq((p.returncode, p.stdout), (0, ""), "scripts/spdx.py (run it with --fix)")
    # The check must bite: in a scratch checkout, the files it covers without the line are
    # reported (and only those), and --fix adds it in each file's comment syntax.
    d = ctx.tmp("repo")
    files = {"a.c": "/* a */\nint a;\n", "b.py": "#!/usr/bin/python3\nprint(1)\n",
             "c.sh": "# SPDX-License-Identifier: Apache-2.0\ntrue\n", "d.md": "text\n",
             "Makefile": "all:\n"}
    os.makedirs(d)
    for name, body in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(body)
    subprocess.run(["git", "init", "-q", d], check=True, timeout=30)
    subprocess.run(["git", "-C", d, "add", "."], check=True, timeout=30)
    spdx = [sys.executable, os.path.join(ROOT, "scripts", "spdx.py"), "--root", d]
    p = subprocess.run(spdx, capture_output=True, text=True, timeout=60)
    eq((p.returncode, sorted(p.stdout.splitlines())),
       (1, ["no SPDX line: Makefile", "no SPDX line: a.c", "no SPDX line: b.py"]),
       "the check finds the files without the line")
    subprocess.run(spdx + ["--fix"], check=True, capture_output=True, timeout=60)
    eq(subprocess.run(spdx, capture_output=True, text=True, timeout=60).returncode, 0,
       "clean after --fix")
    with open(os.path.join(d, "b.py")) as f:
        eq(f.read(), "#!/usr/bin/python3\n# SPDX-License-Identifier: Apache-2.0\nprint(1)\n")
    with open(os.path.join(d, "a.c")) as f:
        eq(f.readline(), "/* SPDX-License-Identifier: Apache-2.0 */\n")


def test_debian_copyright_is_machine_readable_apache(ctx):
    text = read("debian", "copyright")
    paras = [p for p in re.split(r"\n\s*\n", text.strip())]
    head = paras[0]
    assert head.startswith("Format: https://www.debian.org/doc/packaging-manuals/"
                           "copyright-format/1.0/"), head
    files = [p for p in paras if p.startswith("Files:")]
    assert files and all(re.search(r"^License: Apache-2.0$", p, re.M) for p in files), files
    standalone = [p for p in paras if p.startswith("License: Apache-2.0\n")]
    assert standalone and "/usr/share/common-licenses/Apache-2.0" in standalone[0], paras
    assert "all rights are reserved" not in text


def test_python_package_and_readme_name_the_license(ctx):
    py = read("clients", "python", "pyproject.toml")
    assert re.search(r'^license = \{text = "Apache-2.0"\}$', py, re.M), py
    assert "License :: OSI Approved :: Apache Software License" in py
    readme = read("README.md")
    assert "## License" in readme and "(LICENSE)" in readme and "Apache" in readme
