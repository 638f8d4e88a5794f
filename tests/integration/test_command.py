# SPDX-License-Identifier: Apache-2.0
"""The command table (src/server/cmd/commands.def) as a client sees it, against
docs/protocol.md "Command table": the names of COMMAND LIST in their order, COMMAND INFO's arity
and flag, COMMAND DOCS's summary, and under --acl-file which users get -NOPERM, are what the
doc's table says. tests/unit/test_cmdtable.c checks the same doc against the rows themselves
(the names column too); this checks the server that ships."""

import os
import subprocess

from helpers import eq, expect_ok
from resp import RespError, as_map, text

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOC = os.path.join(ROOT, "docs", "protocol.md")
BEGIN = "## Command table\n"
END = "<!-- end of the command table -->\n"
OPEN, ANY = "none (before AUTH too)", "any user"
FLAG_OF_PATH = {"write": "write", "read": "readonly", "local": "fast"}


def doc_rows():
    """The rows of the doc's command table: dicts name, arity, path, perm, names, summary."""
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    assert BEGIN in doc and END in doc, "docs/protocol.md has no command table"
    section = doc[doc.index(BEGIN):doc.index(END)]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 6, line
        rows.append({"name": cells[0].strip("`"), "arity": int(cells[1]),
                     "path": cells[2].split(",")[0], "perm": cells[3], "names": cells[4],
                     "summary": cells[5]})
    assert len(rows) > 20, rows
    return rows


def test_command_list_info_and_docs_match_protocol_md(ctx):
    rows = doc_rows()
    c = ctx.conn()
    eq([text(n) for n in c.call("COMMAND", "LIST")], [r["name"].lower() for r in rows],
       "COMMAND LIST against the doc's table, in its order")
    eq(c.call("COMMAND", "COUNT"), len(rows), "COMMAND COUNT")
    info = []  # in parts: one COMMAND INFO of every name would pass --max-args (64)
    for i in range(0, len(rows), 32):
        part = c.call("COMMAND", "INFO", *[r["name"] for r in rows[i:i + 32]])
        assert isinstance(part, list), part
        info += part
    eq(len(info), len(rows), "COMMAND INFO entries")
    for r, e in zip(rows, info):
        assert e is not None, r["name"]
        eq((text(e[0]), e[1], [text(f) for f in e[2]]),
           (r["name"].lower(), r["arity"], [FLAG_OF_PATH[r["path"]]]),
           "COMMAND INFO %s: name, arity, flag" % r["name"])
    docs = c.call("COMMAND", "DOCS")
    got = {}
    for i in range(0, len(docs), 2):  # RESP2: name, [field, value, ...], ...
        got[text(docs[i])] = text(as_map(docs[i + 1])["summary"])
    eq(got, {r["name"].lower(): r["summary"] for r in rows}, "COMMAND DOCS summaries")


def _hash(ctx, pw):
    p = subprocess.run([ctx.binary, "--hash-password"], input=pw.encode() + b"\n",
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode().strip()


def _allowed(perm, user_perms):
    """Whether a user with these permission words may run a command whose doc permission is
    perm: "read,lock" needs all of them, "peer or admin" either."""
    if perm in (OPEN, ANY):
        return True
    need, _, alt = perm.partition(" or ")
    have = set(user_perms)
    return set(need.split(",")) <= have or bool(alt and set(alt.split(",")) & have)


def test_command_permissions_match_protocol_md(ctx):
    """Each user runs each command by its bare name (and no more: the permission is checked
    before the arity): -NOPERM exactly when the doc's permission column says so."""
    rows = doc_rows()
    users = {"r": ["read"], "l": ["lock"], "w": ["write"], "a": ["admin"], "p": ["peer"],
             "rl": ["read", "lock"]}
    path = ctx.tmp("acl")
    with open(path, "w") as f:
        f.write("user admin %s perm=all\n" % _hash(ctx, "adminpw"))
        for u, perms in users.items():
            f.write("user %s %s perm=%s\n" % (u, _hash(ctx, u + "pw"), ",".join(perms)))
    os.chmod(path, 0o600)
    s = ctx.server("--acl-file", path, start=False)
    s.auth = ("admin", "adminpw")
    s.start()
    checked = 0
    for u, perms in users.items():
        c = ctx.conn(s)
        expect_ok(c.call("AUTH", u, u + "pw"), "AUTH %s" % u)
        for r in rows:
            if r["perm"] in (OPEN, ANY):
                continue  # the connection commands: test_auth.py runs them
            # CLUSTER.TRANSFER alone would move the leadership: give it an id that is none
            args = [r["name"]] + (["not-an-id"] if r["name"] == "CLUSTER.TRANSFER" else [])
            reply = c.call(*args)
            denied = isinstance(reply, RespError) and reply.code == "NOPERM"
            eq(denied, not _allowed(r["perm"], perms),
               "user %s (%s) runs %s (doc: %s): %r" % (u, ",".join(perms), r["name"],
                                                       r["perm"], reply))
            if denied:
                assert "to run '%s'" % r["name"] in reply.text, reply
            checked += 1
        c.close()
    assert checked > 100, checked
