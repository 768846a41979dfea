"""`python -m couplescope.frontends.docs_tables [--check] [--root DIR]`: regenerate the docs that are tables.

Without --check it rewrites what is stale and names each file it wrote; with --check it
writes nothing and exits 1 naming the stale files (CI). Run it in a source checkout.
"""

from __future__ import annotations

import argparse
import os
import sys

from couplescope.frontends import docs_tables
from couplescope.protocol.errors import UsageError


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=docs_tables.COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a generated doc is stale")
    parser.add_argument("--root", default=docs_tables.checkout(),
                        help="the checkout whose docs/ to write (default: the one this package is in)")
    args = parser.parse_args(argv)
    root = args.root
    if not os.path.isdir(os.path.join(root, "docs")):
        print(f"error: no docs/ in {root}: run it in a source checkout (or give --root)",
              file=sys.stderr)
        return 2
    try:
        if args.check:
            found = docs_tables.stale(root)
            for rel in found:
                print(f"{rel} is stale: regenerate it with `{docs_tables.COMMAND}`")
            return 1 if found else 0
        for rel in docs_tables.write(root):
            print(f"wrote {rel}")
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
