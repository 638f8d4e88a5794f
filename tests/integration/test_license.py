"""The license (issue 31): Apache-2.0 in LICENSE, in every source file's SPDX line, in the
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
    # The check must bite: a file it covers, without the line, is reported.
    probe = os.path.join(ROOT, "src", "common", "zz_spdx_probe.c")
    with open(probe, "w") as f:
        f.write("/* no license line */\nint zz;\n")
    try:
        subprocess.run(["git", "-C", ROOT, "add", "-N", probe], check=True, timeout=30)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "spdx.py")],
                           capture_output=True, text=True, timeout=60)
        eq((p.returncode, p.stdout), (1, "no SPDX line: src/common/zz_spdx_probe.c\n"),
           "the check finds a file without the line")
    finally:
        subprocess.run(["git", "-C", ROOT, "rm", "-q", "--cached", "-f", probe], timeout=30)
        os.unlink(probe)


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
