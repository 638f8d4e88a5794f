#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""libfencelock.so's ABI is what the symbols file says (docs/client.md "ABI and versions").

    scripts/check-abi.py LIBRARY [--symbols FILE] [--header FILE]

LIBRARY is a built libfencelock.so.N. Its exported symbols (`nm -D --defined-only`, with their
versions) must be exactly the ones listed in FILE (default debian/libfencelock0.symbols, the
dpkg-gensymbols format: a "libfencelock.so.N package #MINVER#" line, "* Field: value" lines,
then one " symbol@VERSION minimal-version" line per symbol), the SONAME must be the file's, and
the functions declared FL_API in the header (default include/fencelock.h) must be exactly the
exported functions. A symbol exported but not listed ("added"), listed but not exported
("removed") or a header that disagrees is printed as one line each; exit status 1 if any.
`make check-abi` and tests/integration/test_abi.py run it (the test also proves it bites).
"""

import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SYMBOLS = os.path.join(ROOT, "debian", "libfencelock0.symbols")
HEADER = os.path.join(ROOT, "include", "fencelock.h")


def exported(lib):
    """{"name@VERSION"} of the library's defined dynamic symbols. nm prints "fl_x@@V" for a
    default version, "fl_x@V" for another, and the version node itself as an absolute symbol
    "V" (or "V@@V"); dpkg-gensymbols writes all of them as "name@V"."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1]
        name = name.replace("@@", "@")
        if "@" not in name and kind == "A":
            name = "%s@%s" % (name, name)  # the version node
        syms.add(name)
    return syms


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
    return m.group(1) if m else None


def listed(path):
    """(soname, {"name@VERSION": minimal version}) of a dpkg-gensymbols symbols file."""
    lib, syms = None, {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#") or line.startswith("*"):
                continue
            if not line[0].isspace():
                if lib is not None:
                    raise SystemExit("%s:%d: one library per file" % (path, n))
                lib = line.split()[0]
                continue
            fields = line.split()
            if len(fields) < 2:
                raise SystemExit("%s:%d: want \" symbol@VERSION minimal-version\"" % (path, n))
            syms[fields[0]] = fields[1]
    return lib, syms


def declared(header):
    """The function names declared FL_API in the header."""
    with open(header) as f:
        text = f.read()
    return set(re.findall(r"^FL_API\b[^(;]*?\b(fl_\w+)\s*\(", text, re.M))


def check(lib, symbols=SYMBOLS, header=HEADER):
    """The problems found, one line each (empty: the ABI is as listed)."""
    problems = []
    want_lib, want = listed(symbols)
    have = exported(lib)
    name = os.path.relpath(symbols, ROOT) if symbols.startswith(ROOT) else symbols
    if soname(lib) != want_lib:
        problems.append("SONAME %s, but %s is for %s" % (soname(lib), name, want_lib))
    for s in sorted(have - set(want)):
        problems.append("added: %s is exported but not in %s" % (s, name))
    for s in sorted(set(want) - have):
        problems.append("removed: %s is in %s but not exported" % (s, name))
    for s in sorted(have):
        base, _, ver = s.partition("@")
        if base != ver and not base.startswith("fl_"):
            problems.append("internal: %s is exported (only fl_* is API)" % s)
    funcs = {s.partition("@")[0] for s in have if s.startswith("fl_")}
    api = declared(header)
    for f in sorted(api - funcs):
        problems.append("header: %s is declared FL_API but not exported" % f)
    for f in sorted(funcs - api):
        problems.append("header: %s is exported but not declared FL_API" % f)
    return problems, len(have)


def main(argv):
    args = list(argv)
    symbols, header = SYMBOLS, HEADER
    if "--symbols" in args:
        i = args.index("--symbols")
        symbols = args[i + 1]
        del args[i:i + 2]
    if "--header" in args:
        i = args.index("--header")
        header = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    problems, n = check(args[0], symbols, header)
    for p in problems:
        print(p)
    if problems:
        print("abi check failed: update the library, the header or %s (docs/client.md "
              "\"ABI and versions\")" % os.path.basename(symbols))
        return 1
    print("abi check: %s exports the %d symbols of %s" % (os.path.basename(args[0]), n,
                                                           os.path.basename(symbols)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
