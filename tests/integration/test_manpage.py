# SPDX-License-Identifier: Apache-2.0
"""The installed documentation stays true to the settings table (src/server/config/table.c):
fencelockd(8), docs/server.md's flag table and the packaged /etc/fencelock/fencelockd.conf each
list every setting, no setting the table lacks, and the table's default wherever they show one;
the conf file has every line but data-dir commented out; the man pages refer to no docs/*.md path (only to the
documents `make install` and the packages install).

The table is read through the binary: `--print-config` in an empty environment prints every row
with its default (`key = value  # default`, or `# key =  # default (unset)`), and `--help` adds
the few flags that are no setting (--config, --print-config, --version, --hash-password,
--help)."""

import os
import re
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MAN8 = os.path.join(ROOT, "docs", "fencelockd.8")
MAN1 = os.path.join(ROOT, "docs", "fencelock.1")
SERVER_MD = os.path.join(ROOT, "docs", "server.md")
CONF = os.path.join(ROOT, "debian", "fencelockd.conf")
FLAG = re.compile(r"--[a-z][a-z0-9-]*")
# Settings that run once and exit (--recover, --restore): no place in a standing config file.
ONE_SHOT = {"--recover", "--restore"}
# The packaged unit passes only the conf file, which sets data-dir to the packaged path (its one
# line not commented out), not the default.
CONF_OWN_VALUE = {"--data-dir"}
CONF_SET = {"data-dir = /var/lib/fencelock"}


def help_flags(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0, out
    flags = set(FLAG.findall(out.stdout))
    assert len(flags) > 40, "too few flags in --help: %r" % sorted(flags)
    return out.stdout, flags


# The units --help names a number's metavariable by, and the suffixes each takes (value.c):
# --print-config shows a size or duration with the largest unit that divides it (64MiB, 2m), a
# document may show the plain number; both are the same default.
UNIT_MUL = {"BYTES": {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40},
            "MS": {"": 1, "ms": 1, "s": 1000, "m": 60000, "h": 3600000},
            "S": {"": 1, "s": 1, "m": 60, "h": 3600}}
_UNITS = {}


def flag_units(binary):
    """{"--flag": "BYTES" | "MS" | "S"} of the numbers with a unit, from --help."""
    if binary not in _UNITS:
        out, _ = help_flags(binary)
        _UNITS[binary] = dict(re.findall(r"(--[a-z][a-z0-9-]*) (BYTES|MS|S)\b", out))
    return _UNITS[binary]


def same_value(ctx, flag, a, b):
    """a == b, or both the same number in the flag's unit (64MiB and 67108864)."""
    if a == b:
        return True
    unit = flag_units(ctx.binary).get(flag)
    if unit is None or a is None or b is None:
        return False
    vals = []
    for v in (a, b):
        m = re.fullmatch(r"(\d+)([A-Za-z]*)", v.strip())
        if not m or m.group(2) not in UNIT_MUL[unit]:
            return False
        vals.append(int(m.group(1)) * UNIT_MUL[unit][m.group(2)])
    return vals[0] == vals[1]


def settings(ctx):
    """{"--flag": default text, "false" for a boolean, None when unset}, from --print-config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FENCELOCK_")}
    out = subprocess.run([ctx.binary, "--print-config"], capture_output=True, text=True,
                         timeout=30, env=env, cwd=ctx.workdir)
    assert out.returncode == 0, out
    table = {}
    for line in out.stdout.splitlines()[1:]:
        m = re.match(r"^([a-z][a-z0-9-]*) = (.*?)  # default$", line)
        u = re.match(r"^# ([a-z][a-z0-9-]*) =  # default \(unset\)$", line)
        assert m or u, "unexpected --print-config line %r" % line
        table["--" + (m or u).group(1)] = m.group(2) if m else None
    assert len(table) > 40, "too few settings: %r" % sorted(table)
    return table


def extras(ctx, table):
    """The flags --help lists that are no setting."""
    _, flags = help_flags(ctx.binary)
    missing = sorted(set(table) - flags)
    assert not missing, "--help lacks: %s" % ", ".join(missing)
    return flags - set(table)


def roff_text(path):
    with open(path) as f:
        return f.read().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "") \
            .replace("\\fI", "")


def shown_default(text):
    """The default an entry's text states: what follows "(default " up to ) ; or ,."""
    m = re.search(r"\(default ([^);,]*)", text)
    return m.group(1).strip() if m else None


def check_listing(what, entries, table, allowed_extra, default_of):
    """entries: {flag: text}. Every setting listed, nothing else but allowed_extra, and every
    default shown as the table has it."""
    errors = []
    missing = sorted(set(table) - set(entries))
    if missing:
        errors.append("%s lacks: %s" % (what, ", ".join(missing)))
    unknown = sorted(set(entries) - set(table) - allowed_extra)
    if unknown:
        errors.append("%s lists what the settings table lacks: %s" % (what, ", ".join(unknown)))
    for flag, text in sorted(entries.items()):
        if flag not in table:
            continue
        err = default_of(flag, table[flag], text)
        if err:
            errors.append("%s, %s: %s" % (what, flag, err))
    assert not errors, "\n".join(errors)


def man8_entries():
    """{flag: text} of fencelockd(8)'s OPTIONS: a flag counts where it starts an entry (the tag
    line after .TP); the text runs to the next .TP or .SH."""
    lines = roff_text(MAN8).splitlines()
    entries = {}
    for i, line in enumerate(lines):
        if line != ".TP" or i + 1 >= len(lines):
            continue
        body = []
        for nxt in lines[i + 2:]:
            if nxt.startswith(".TP") or nxt.startswith(".SH"):
                break
            body.append(nxt)
        for flag in FLAG.findall(lines[i + 1]):
            entries[flag] = " ".join(body)
    return entries


def test_man8_matches_settings_table(ctx):
    table = settings(ctx)

    def default_of(flag, want, text):
        got = shown_default(text)
        if want is None or want == "false":
            return None if got is None else "shows default %r, the table has none" % got
        return None if same_value(ctx, flag, got, want) else \
            "shows default %r, the table has %r" % (got, want)
    check_listing("fencelockd(8)", man8_entries(), table, extras(ctx, table), default_of)


def test_man8_sighup_names_every_reloaded_setting(ctx):
    """The settings --help marks "reloaded on SIGHUP" (the table's reload flag) are the ones
    fencelockd(8)'s SIGHUP entry names."""
    out, _ = help_flags(ctx.binary)
    reloaded = set()
    for entry in re.split(r"\n  (?=--)", out):
        if re.sub(r"\s+", " ", entry).rstrip().endswith("reloaded on SIGHUP"):
            reloaded.add(FLAG.match(entry).group(0))
    assert len(reloaded) >= 5, "too few reloaded settings in --help: %r" % sorted(reloaded)
    man = roff_text(MAN8)
    sighup = man.split(".B SIGHUP\n", 1)[1].split("\n.SH", 1)[0]
    named = set(FLAG.findall(sighup))
    eq_sets = (sorted(reloaded - named), sorted(named - reloaded))
    assert eq_sets == ([], []), "fencelockd(8) SIGHUP lacks %s, names %s as reloaded" % eq_sets


def server_md_entries():
    """{flag: default column} of docs/server.md's "## Flags" table."""
    with open(SERVER_MD) as f:
        text = f.read()
    section = text.split("\n## Flags\n", 1)[1].split("\n## ", 1)[0]
    entries = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != 3 or not cells[0].startswith("`--"):
            continue
        for flag in FLAG.findall(cells[0]):
            entries[flag] = cells[1].replace("`", "")
    return entries


def test_server_md_matches_settings_table(ctx):
    table = settings(ctx)

    def default_of(flag, want, cell):
        if want == "false":
            return None if cell == "off" else "default %r, a boolean's is 'off'" % cell
        if want is None:
            return None if not re.search(r"\d", cell) else \
                "shows default %r, the table has none" % cell
        return None if same_value(ctx, flag, cell, want) else \
            "shows default %r, the table has %r" % (cell, want)
    check_listing("docs/server.md \"Flags\"", server_md_entries(), table, extras(ctx, table),
                  default_of)


def conf_entries():
    """{flag: value} of the packaged conf file's `# key = value` lines; every line commented
    but CONF_SET's."""
    entries = {}
    with open(CONF) as f:
        for n, line in enumerate(f, 1):
            if line.strip() and not line.startswith("#") and line.strip() not in CONF_SET:
                raise AssertionError("%s:%d is not commented out: %r" % (CONF, n, line))
            m = re.match(r"#? ?([a-z][a-z0-9-]*) = (\S.*)$", line.rstrip("\n"))
            if m:
                entries["--" + m.group(1)] = m.group(2).strip()
    return entries


def test_deb_conf_matches_settings_table(ctx):
    table = settings(ctx)

    def default_of(flag, want, value):
        if want == "false":
            return None if value in ("true", "false") else "%r is no boolean" % value
        if want is None or flag in CONF_OWN_VALUE:
            return None
        return None if same_value(ctx, flag, value, want) else \
            "shows %r, the table's default is %r" % (value, want)
    entries = conf_entries()
    for flag in ONE_SHOT:
        assert flag not in entries, "%s runs once: not for %s" % (flag, CONF)
        entries[flag] = table.get(flag) or ""
    check_listing(CONF, entries, table, set(), default_of)


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
