#!/usr/bin/env python3
"""Lists the public symbols of the public products that have no doc comment, as DocC sees them.

Reads the symbol graphs the compiler emits for DocC (`swift package dump-symbol-graph`), so it counts
what DocC documents: types, members of public protocols, enum cases, initializers, extensions of other
modules' types. A symbol with no location in this package (a member that a conformance synthesizes, a
default implementation from the standard library) has no comment to write here and is not counted.

    Scripts/doc-coverage.py                          # builds, dumps the graphs, checks them
    Scripts/doc-coverage.py -- --enable-all-traits   # arguments after -- go to `swift package`
    Scripts/doc-coverage.py --symbol-graphs DIR      # checks graphs already emitted (no build)

After `swift package generate-documentation`, the graphs the DocC plugin extracted are in
`$(swift build --show-bin-path)/extracted-symbols`: pass that directory to check exactly them.

Prints `file:line: ...` for each undocumented symbol and exits 1 if there is one; exits 0 otherwise.
"""

import argparse
import json
import os
import re
import subprocess
import sys
from urllib.parse import unquote, urlparse

# The targets of the library products that apps use (Package.swift). FlagshipFuzzing and
# PostgresTestSupport are products only so that the fuzzers and the benchmarks can reach them.
PUBLIC_MODULES = [
    "Flagship",
    "FlagshipLocalServer",
    "FlagshipServiceLifecycle",
    "FlagshipMetrics",
    "FlagshipTracing",
    "FlagshipConfiguration",
    "FlagshipPostgres",
    "FlagshipAsyncHTTPClient",
    "FlagshipTesting",
]

PACKAGE_ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def dump_symbol_graphs(swift, package_args):
    """Runs `swift package dump-symbol-graph` and returns the directory it wrote to."""
    # Extension blocks as the DocC plugin asks for them, so that extended types are counted too.
    command = [
        swift, "package", "--package-path", PACKAGE_ROOT, *package_args,
        "dump-symbol-graph", "--emit-extension-block-symbols",
    ]
    print("$ " + " ".join(command), file=sys.stderr)
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    sys.stderr.write(result.stdout)
    if result.returncode != 0:
        sys.exit("doc-coverage: dump-symbol-graph failed (exit %d)" % result.returncode)
    match = re.search(r"^Files written to (.+)$", result.stdout, re.MULTILINE)
    if not match:
        sys.exit("doc-coverage: dump-symbol-graph did not say where it wrote the graphs")
    return match.group(1).strip()


def graph_files(directory, module):
    """The module's own graph and those of its extensions to other modules (`Module@Swift`)."""
    found = []
    for parent, _, names in os.walk(directory):
        for name in names:
            if name == module + ".symbols.json" or (
                name.startswith(module + "@") and name.endswith(".symbols.json")
            ):
                found.append(os.path.join(parent, name))
    return sorted(found)


def source_path(uri):
    """The symbol's file relative to the package, or None when it is not in this package."""
    path = os.path.realpath(unquote(urlparse(uri).path))
    if not path.startswith(PACKAGE_ROOT + os.sep):
        return None
    relative = os.path.relpath(path, PACKAGE_ROOT)
    # Sources that a build plugin generates are not edited by hand.
    if relative.startswith(".build"):
        return None
    return relative


def documentation(symbol, location):
    """The symbol's comment: "own" when written on it, "inherited" when DocC shows the one of the
    protocol requirement it implements (`description` gets `CustomStringConvertible`'s), else None."""
    comment = symbol.get("docComment") or {}
    if not any(line.get("text", "").strip() for line in comment.get("lines") or []):
        return None
    return "own" if comment.get("uri") == location["uri"] else "inherited"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--symbol-graphs", metavar="DIR", help="graphs already emitted (searched recursively)")
    parser.add_argument("--module", action="append", help="check only this module (repeatable)")
    parser.add_argument("--package-path", help="the package to check (default: this script's)")
    parser.add_argument("package_args", nargs="*", help="after --: arguments for `swift package`")
    options = parser.parse_args()
    if options.package_path:
        global PACKAGE_ROOT
        PACKAGE_ROOT = os.path.realpath(options.package_path)

    directory = options.symbol_graphs or dump_symbol_graphs(os.environ.get("SWIFT", "swift"), options.package_args)
    modules = options.module or PUBLIC_MODULES

    # (file, line, name) -> [module, kind, "own" | "inherited" | None]
    symbols = {}
    extended_types = {}  # (module, extended type's name) -> its key in symbols
    for module in modules:
        files = graph_files(directory, module)
        if not files:
            sys.exit("doc-coverage: no symbol graph for %s in %s" % (module, directory))
        for file in files:
            with open(file, encoding="utf-8") as handle:
                graph = json.load(handle)
            for symbol in graph["symbols"]:
                # A member a type gets from a protocol extension is documented where it is written.
                if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                    continue
                location = symbol.get("location")
                path = source_path(location["uri"]) if location else None
                if path is None:
                    continue
                kind = symbol["kind"]["identifier"]
                name = ".".join(symbol["pathComponents"])
                line = location["position"]["line"] + 1
                comment = documentation(symbol, location)
                if kind == "swift.extension":
                    # DocC documents an extended type (`Bool` in `extension Bool`) with the longest
                    # comment among its extension blocks: one of them documented is enough.
                    key = extended_types.get((module, name))
                    if key is None:
                        extended_types[(module, name)] = (path, line, name)
                        symbols[(path, line, name)] = [module, "extended type", comment]
                    elif comment:
                        symbols[key][2] = comment
                    continue
                symbols[(path, line, name)] = [module, symbol["kind"]["displayName"].lower(), comment]

    for module in modules:
        if not any(value[0] == module for value in symbols.values()):
            # A module compiled without its trait (`#if Postgres`) is empty, not documented.
            sys.exit("doc-coverage: %s has no public symbol in %s: built without its trait? "
                     "(pass -- --enable-all-traits)" % (module, directory))

    undocumented = sorted(key for key, value in symbols.items() if not value[2])
    inherited = sum(1 for value in symbols.values() if value[2] == "inherited")
    for path, line, name in undocumented:
        module, kind, _ = symbols[(path, line, name)]
        print("%s:%d: undocumented public %s %s.%s" % (path, line, kind, module, name))
    print(
        "doc-coverage: %d of %d public symbols documented, %d of them by the comment of the requirement"
        " they implement (%s)"
        % (len(symbols) - len(undocumented), len(symbols), inherited, ", ".join(modules)),
        file=sys.stderr,
    )
    return 1 if undocumented else 0


if __name__ == "__main__":
    sys.exit(main())
