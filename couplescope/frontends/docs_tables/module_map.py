"""docs/architecture.md's list of every module under couplescope/, from the source tree.

Each file's line is the first sentence of its docstring (another source's opening comment),
so the list says what a module holds in the words its author wrote there. Packages come
in the order of the layers contract (pyproject.toml: each layer imports only those below
it), then what sits at the package's top. Nothing is imported: the files are parsed.
"""

from __future__ import annotations

import ast
import os
import re

#: what is not a source file: Python's caches, a build's objects
SKIPPED = (".pyc", ".pyo", ".so", ".o")
#: how the other sources open a comment: C++, CSS, CMake, Fortran
COMMENT = re.compile(r"\s*(?://|/\*|\*|#|!)\s?(.*?)\s*(?:\*/)?$")


def layers(root: str) -> list[str]:
    """The top-level packages in the layers contract's order (pyproject.toml)."""
    text = open(os.path.join(root, "pyproject.toml"), encoding="utf-8").read()
    block = re.search(r'type = "layers"\s*\nlayers = \[(.*?)\]', text, re.S)
    return re.findall(r"couplescope\.(\w+)", block.group(1)) if block else []


def summary(path: str) -> str:
    """The first sentence of what a file says of itself."""
    text = open(path, encoding="utf-8").read()
    if path.endswith(".py"):
        words = (ast.get_docstring(ast.parse(text)) or "").split("\n\n")[0]
    else:   # the opening comment's first paragraph
        lines = []
        for line in text.splitlines():
            comment = COMMENT.match(line)
            if not comment or (lines and not comment.group(1)):
                break
            lines.append(comment.group(1))
        words = " ".join(lines)
    words = " ".join(words.split())
    first = re.split(r"(?<=[.!?])\s", words, maxsplit=1)[0]
    return first.replace("|", "\\|")


def files(package: str) -> list[str]:
    """Every source file of the package (relative to it, '/'-separated)."""
    found = []
    for folder, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if not name.endswith(SKIPPED):
                found.append(os.path.relpath(os.path.join(folder, name), package).replace(os.sep, "/"))
    return found


def _order(rel: str, ranks: dict) -> tuple:
    parts = rel.split("/")
    top = parts[0] if len(parts) > 1 else ""
    folder = "/".join(parts[:-1])
    return (ranks.get(top, len(ranks)), folder, parts[-1] != "__init__.py", parts[-1])


def markdown(root: str) -> str:
    package = os.path.join(root, "couplescope")
    ranks = {name: i for i, name in enumerate(layers(root))}
    lines = ["| module (under couplescope/) | what it holds |", "|---|---|"]
    for rel in sorted(files(package), key=lambda r: _order(r, ranks)):
        shown = rel[: -len("__init__.py")] if rel.endswith("/__init__.py") else rel
        name = f"**`{shown}`**" if shown.endswith("/") else f"`{shown}`"
        lines.append(f"| {name} | {summary(os.path.join(package, rel))} |")
    return "\n".join(lines) + "\n"
