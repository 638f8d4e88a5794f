# SPDX-License-Identifier: Apache-2.0
"""The installed documentation stays true: fencelockd(8) documents every flag that
`fencelockd --help` lists, the packaged /etc/fencelock/fencelockd.conf names only real flags
(and every flag that takes a value) with every line commented out, and the man pages refer to
no docs/*.md path (only to the documents `make install` and the packages install)."""

import os
import re
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MAN8 = os.path.join(ROOT, "docs", "fencelockd.8")
MAN1 = os.path.join(ROOT, "docs", "fencelock.1")
CONF = os.path.join(ROOT, "debian", "fencelockd.conf")
FLAG = re.compile(r"--[a-z][a-z0-9-]*")
# Flags that run once and exit: they have no place in a configuration file.
# flags that make no sense in the config file itself (a run once, or the file's own name)
ONE_SHOT = {"--version", "--help", "--hash-password", "--recover", "--restore", "--config",
            "--print-config"}


def help_flags(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out
    flags = set(FLAG.findall(out.stdout))
    assert len(flags) > 40, "too few flags in --help: %r" % sorted(flags)
    return out.stdout, flags


def roff_text(path):
    with open(path) as f:
        return f.read().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "") \
            .replace("\\fI", "")


def test_man8_lists_every_help_flag(ctx):
    _, flags = help_flags(ctx.binary)
    man = roff_text(MAN8)
    # A flag counts as documented where it starts an option entry (.TP's tag line).
    tags = set()
    lines = man.splitlines()
    for i, line in enumerate(lines):
        if line == ".TP" and i + 1 < len(lines):
            tags.update(FLAG.findall(lines[i + 1]))
    missing = sorted(flags - tags)
    assert not missing, "fencelockd(8) has no entry for: %s" % ", ".join(missing)


def test_conf_keys_are_flags_all_commented(ctx):
    _, flags = help_flags(ctx.binary)
    keys = set()
    with open(CONF) as f:
        for n, line in enumerate(f, 1):
            if line.strip() and not line.startswith("#"):
                raise AssertionError("%s:%d is not commented out: %r" % (CONF, n, line))
            m = re.match(r"# ([a-z][a-z0-9-]*) = \S", line)
            if m:
                keys.add("--" + m.group(1))
    unknown = sorted(keys - flags)
    assert not unknown, "fencelockd.conf keys that are no flag: %s" % ", ".join(unknown)
    absent = sorted(flags - keys - ONE_SHOT)
    assert not absent, "flags missing from fencelockd.conf: %s" % ", ".join(absent)


def installed_docs():
    """The basenames in the Makefile's USER_DOCS (what make install puts in DOCDIR)."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        mk = f.read()
    m = re.search(r"^USER_DOCS :=((?:.*\\\n)*.*)$", mk, re.M)
    assert m, "no USER_DOCS in the Makefile"
    return {os.path.basename(p) for p in m.group(1).replace("\\\n", " ").split()}


def test_man_pages_refer_to_installed_docs(ctx):
    docs = installed_docs()
    for page in (MAN1, MAN8):
        text = roff_text(page)
        bad = re.findall(r"(?<![/\w])docs/[\w.-]+", text)
        assert not bad, "%s refers to the source tree: %s" % (page, bad)
        for name in re.findall(r"/usr/share/doc/fencelock/([\w.-]+)", text):
            assert name in docs, "%s refers to %s, which is not installed" % (page, name)
            assert os.path.exists(os.path.join(ROOT, "docs", name)), name
