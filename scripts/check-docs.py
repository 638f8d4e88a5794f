#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The documentation's references stay true. Four checks, each failure printed as
FILE[:LINE]: what is wrong; exit status 1 if any. `make check-docs` (part of `make test`) runs it;
`--root DIR` checks another tree (tests/integration/test_docs_refs.py proves it bites there).

1. docs/design.md, sections "Files" and "Where to change what": every file path and every C
   symbol named in backquotes exists in the tree. In "Files", each table lists one folder (the
   folder in its heading); every file of that folder has a row and every row names a file of it.
2. Every reference of the form  docs/x.md "Heading"  (also `x.md` "Heading", [x.md](x.md)
   "Heading", or the quote on the next comment line) anywhere in the tree names a heading of
   docs/x.md, or the label in the first cell of one of its tables' rows. A heading matches
   without its numbering, backquotes, a parenthesised part or what follows a colon or dash;
   case does not matter. A section cited by number (the section sign and a digit after a doc
   name) is reported: numbers move when sections do.
3. Every path of a doc under docs/ named anywhere in the tree exists (a decision record...).
4. No tracker references ("issue" and a number): a reference to a tracker that is not in the
   repository explains nothing. Say the reason itself, or write a decision record under
   docs/decisions/.
"""

import fnmatch
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# Where references are looked for (files and folders at the top of the tree).
SCANNED = ["src", "include", "tests", "scripts", "docs", "bench", "clients", "examples", "fuzz",
           "debian", "deploy", "contrib", "README.md", "Makefile"]
SKIP_DIRS = {".git", "build", "__pycache__", "corpus", "fixtures", "node_modules"}
TEXT_EXT = (".c", ".h", ".py", ".md", ".sh", ".txt", ".yml", ".yaml", ".json", ".in", ".8", ".1",
            ".conf", ".service", ".toml", ".cfg", ".install", ".go", ".js", ".rs", "")
CODE_EXT = (".c", ".h", ".py")
ISSUE_REF = re.compile(r"\bissues?\s+#?[0-9]+", re.IGNORECASE)
HEADING_REF = re.compile(
    r"(?P<doc>(?:docs/)?[A-Za-z0-9_-]+\.md)[`)\]]*,?[ \t]*(?:\n[ \t]*(?:\*|#|//|-)?[ \t]*)?"
    r"[ \t]\"(?P<h>[A-Za-z`][^\"\n]{0,100})\"")


def walk(top):
    """Every regular file under top (a file or folder relative to ROOT), as relative paths."""
    p = os.path.join(ROOT, top)
    if os.path.isfile(p):
        yield top
        return
    for d, dirs, fs in os.walk(p):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
        for f in sorted(fs):
            yield os.path.relpath(os.path.join(d, f), ROOT)


def read(rel):
    try:
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return None


def text_files():
    for top in SCANNED:
        for rel in walk(top):
            if os.path.splitext(rel)[1] in TEXT_EXT:
                yield rel


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


# --- 1. design.md: files and symbols -----------------------------------------------------------

class Tree:
    """The tree's file names and the text of its code, searched for symbols."""

    def __init__(self):
        self.files = set()
        self.basenames = set()
        for top in SCANNED:
            for rel in walk(top):
                self.files.add(rel)
                self.basenames.add(os.path.basename(rel))
        self.code = "\n".join(read(rel) or "" for rel in sorted(self.files)
                              if rel.endswith(CODE_EXT) or os.path.basename(rel) == "Makefile")

    def path_exists(self, token):
        if "*" in token or "?" in token:
            if "/" in token:
                return any(fnmatch.fnmatch(f, token) or fnmatch.fnmatch(f, token + "/*")
                           for f in self.files)
            return any(fnmatch.fnmatch(b, token) for b in self.basenames)
        if "/" in token:
            return os.path.exists(os.path.join(ROOT, token.rstrip("/")))
        return token in self.basenames

    def symbol_exists(self, token):
        # Where the token's literal start occurs (str.find, fast), the regex is tried there
        # only: a search of the whole code for a pattern with a lookbehind tries every position
        # (3 s of the check's 8 s, which a loaded machine stretched past a test's bound).
        lead = re.split(r"[* ]", token, 1)[0]
        pat = re.compile(re.escape(token).replace(r"\*", r"\w*").replace(r"\ ", r"\s+")
                         + r"(?!\w)")
        if not lead:  # a leading wildcard: the regex over everything (rare)
            return re.search(r"(?<![\w.])" + pat.pattern, self.code) is not None
        at = self.code.find(lead)
        while at >= 0:  # where the literal start occurs, not preceded by a word char or a dot
            if (at == 0 or not re.match(r"[\w.]", self.code[at - 1])) and pat.match(self.code, at):
                return True
            at = self.code.find(lead, at + 1)
        return False


PATHLIKE = re.compile(r"^[\w.*/-]+(\.(c|h|py|md|sh|yml|json|8|1|conf|service|in|txt|install)|/)$")
IDENT = re.compile(r"^[A-Za-z_*][\w*]*(\(\))?$")
DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+$")
STRUCT = re.compile(r"^struct [A-Za-z_]\w*$")


def check_token(tree, token, where, problems, folder=None):
    """A backquoted token of design.md: a path, a symbol, or something else (not checked)."""
    t = token.strip()
    if not t or t.startswith(("-", "/")) or "<" in t:  # a flag, a reply, a URL path
        return
    if PATHLIKE.match(t) or ("/" in t and " " not in t):
        ok = tree.path_exists(os.path.join(folder, t) if folder else t)
        if not ok and not folder and "/" not in t:
            ok = tree.path_exists(t)
        if not ok:
            problems.append("%s: `%s` names no file in the tree" % (where, t))
        return
    if STRUCT.match(t):
        if not tree.symbol_exists(t):
            problems.append("%s: `%s` is defined nowhere in the code" % (where, t))
        return
    if DOTTED.match(t):
        if t.upper() == t:  # a command (SESSION.OPEN): named somewhere in the code
            ok = t in tree.code
        else:  # a member or a method (srv.user_parked, Session._mutate): its last part
            ok = tree.symbol_exists(t.split(".")[-1])
        if not ok:
            problems.append("%s: `%s` is named nowhere in the code" % (where, t))
        return
    if IDENT.match(t):
        name = t[:-2] if t.endswith("()") else t
        if not (tree.symbol_exists(name) or name in tree.basenames):
            problems.append("%s: `%s` is named nowhere in the code" % (where, t))


def sections(text, level):
    """(heading text, start offset, body) of each heading of exactly `level` #s."""
    marks = [(m.start(), m.group(1)) for m in
             re.finditer(r"^%s ([^\n]*)$" % ("#" * level), text, re.M)]
    out = []
    for i, (pos, title) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        out.append((title, pos, text[pos:end]))
    return out


def table_rows(body, offset, text):
    """The rows of the markdown tables in body: (line, [cells]), header and rule left out."""
    rows = []
    lines = body.split("\n")
    pos = offset
    for i, line in enumerate(lines):
        if line.startswith("|") and i > 0:
            prev = lines[i - 1]
            is_rule = re.match(r"^\|[\s:|-]+\|$", line)
            is_header = i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|$", lines[i + 1])
            if not is_rule and not is_header and prev.startswith("|"):
                cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
                rows.append((line_of(text, pos), cells))
        pos += len(line) + 1
    return rows


def check_design(tree, problems):
    rel = "docs/design.md"
    text = read(rel)
    if text is None:
        problems.append("%s: missing" % rel)
        return
    top = {t.lower(): (pos, body) for t, pos, body in sections(text, 2)}
    for name in ("files", "where to change what"):
        if name not in top:
            problems.append('%s: no section "## %s"' % (rel, name.capitalize()))
    if "where to change what" in top:
        pos, body = top["where to change what"]
        for line, cells in table_rows(body, pos, text):
            for cell in cells:
                for tok in re.findall(r"`([^`]+)`", cell):
                    check_token(tree, tok, "%s:%d" % (rel, line), problems)
    if "files" in top:
        pos, body = top["files"]
        for title, spos, sbody in sections(body, 3):
            m = re.search(r"`([^`]+)`", title)
            if not m:
                continue
            folder = m.group(1).rstrip("/")
            if not os.path.isdir(os.path.join(ROOT, folder)):
                problems.append("%s:%d: folder `%s` does not exist"
                                % (rel, line_of(text, pos + spos), folder))
                continue
            named = set()
            for line, cells in table_rows(sbody, pos + spos, text):
                where = "%s:%d" % (rel, line)
                for tok in re.findall(r"`([^`]+)`", cells[0]):
                    named.add(tok)
                    if not os.path.isfile(os.path.join(ROOT, folder, tok)):
                        problems.append("%s: `%s` is not a file of %s/" % (where, tok, folder))
                for cell in cells[1:]:
                    for tok in re.findall(r"`([^`]+)`", cell):
                        check_token(tree, tok, where, problems)
            for f in sorted(os.listdir(os.path.join(ROOT, folder))):
                if os.path.isfile(os.path.join(ROOT, folder, f)) and f not in named:
                    problems.append('%s: %s/%s has no row in "### `%s/`" (one line per file)'
                                    % (rel, folder, f, folder))


# --- 2. heading references ----------------------------------------------------------------------

def norm(s):
    s = s.replace("`", "").replace("*", "").strip().lower()
    s = re.sub(r"^(\d+\.)+\s*|^\d+\s+", "", s)
    return re.sub(r"\s+", " ", s).strip()


def heading_forms(title):
    """The ways a heading may be cited: whole, without parentheses, or up to a colon or dash."""
    t = norm(title)
    forms = {t, norm(re.sub(r"\([^)]*\)", "", t))}
    for sep in (":", " — ", " - ", " ("):
        if sep in t:
            forms.add(norm(t.split(sep)[0]))
    return forms


def headings(doc):
    """The citable places of a doc: its headings, and the labels of its tables' rows (the first
    cell, as security.md's threat table names "before AUTH")."""
    text = read(doc) or ""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    forms = set()
    for m in re.finditer(r"^#{1,6} (.*)$", text, re.M):
        forms |= heading_forms(m.group(1))
    for m in re.finditer(r"^\|([^|\n]+)\|", text, re.M):
        if not re.match(r"^[\s:-]+$", m.group(1)):
            forms |= heading_forms(m.group(1))
    return forms


DOC_PATH = re.compile(r"(?<![\w/.-])docs/[\w/.-]+\.md\b")


def check_doc_paths(problems):
    """Every path of a doc under docs/ named anywhere exists (x.md is the placeholder here)."""
    for rel in text_files():
        text = read(rel)
        if text is None:
            continue
        for m in DOC_PATH.finditer(text):
            if os.path.basename(m.group(0)) != "x.md" and \
                    not os.path.isfile(os.path.join(ROOT, m.group(0))):
                problems.append("%s:%d: %s does not exist" % (rel, line_of(text, m.start()),
                                                              m.group(0)))


SECTION_REF = re.compile(r"(?P<doc>(?:docs/)?[A-Za-z0-9_-]+\.md)[`)\]]*,?\s+§\s*(?P<n>[0-9.]+)")


def check_heading_refs(problems):
    cache = {}
    for rel in text_files():
        text = read(rel)
        if text is None or ".md" not in text:  # both patterns name a .md file
            continue
        for m in SECTION_REF.finditer(text):  # numbers move when sections do: cite headings
            problems.append('%s:%d: %s §%s: cite the heading ("Heading"), not a number'
                            % (rel, line_of(text, m.start()), m.group("doc"), m.group("n")))
        for m in HEADING_REF.finditer(text):
            doc = "docs/" + os.path.basename(m.group("doc"))
            if not os.path.isfile(os.path.join(ROOT, doc)):
                continue
            if doc not in cache:
                cache[doc] = headings(doc)
            if norm(m.group("h")) not in cache[doc]:
                problems.append('%s:%d: %s has no heading "%s"'
                                % (rel, line_of(text, m.start("h")), doc, m.group("h")))


# --- 3. tracker references ----------------------------------------------------------------------

def check_issue_refs(problems):
    for rel in text_files():
        text = read(rel)
        if text is None:
            continue
        for m in ISSUE_REF.finditer(text):
            problems.append('%s:%d: "%s": say the reason itself (or a record in docs/decisions/)'
                            % (rel, line_of(text, m.start()), m.group(0)))


def main():
    global ROOT
    if "--root" in sys.argv[1:]:
        ROOT = os.path.abspath(sys.argv[sys.argv.index("--root") + 1])
    problems = []
    check_design(Tree(), problems)
    check_heading_refs(problems)
    check_doc_paths(problems)
    check_issue_refs(problems)
    for p in problems:
        print(p)
    if problems:
        print("docs check failed: %d problem(s)" % len(problems))
        return 1
    print("docs check: design.md's files and symbols exist, doc paths and heading references "
          "resolve, no tracker references")
    return 0


if __name__ == "__main__":
    sys.exit(main())
