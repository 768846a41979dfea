"""Who may say a backend's or a host's name: the rule tests/test_architecture.py applies.

Outside couplescope/backends/ and the option declarations nothing asks which backend or
host a variant has; where behaviour differs there is a hook. The names come from the
registries (`backends.names()`, `hosts.names()`), so a new backend or host is guarded
without editing a test.

A name can also be a word of another vocabulary: `torchscript` and `eager` are values of
`--bridge-model`, `python` is a key of run_started's environment. A literal rule (any
string equal to a name) would then forbid the other vocabulary's word, so the rule is:

- a string equal to a name is spoken where it is compared with, falls back for, is passed
  as, or is filed under something called backend or host (`spec.backend == "mpi"`,
  `spec.host or "python"`, `backend="eager"`, `{"host": "native"}`, `hosts.get("native")`),
  whatever else the word means;
- anywhere else it is spoken too, unless it is a word of another vocabulary there: a value
  a declared option (other than --backend and --host) chooses from, or a field's name (a
  key of a dict display whose other keys are not names);
- a constant of the declarations that holds a name (MPI_BACKEND) is spoken wherever it is
  imported or read.
"""

from __future__ import annotations

import ast
import os
import re

#: what a backend or host is called where code holds one
HOLDS_ONE = re.compile(r"backend|host", re.I)


def vocabulary() -> tuple[set[str], set[str]]:
    """(the registries' names, the words other declarations use: the choices of every
    declared option that is not a backend or a host)."""
    from couplescope import backends
    from couplescope.backends import hosts
    from couplescope.protocol.options import OPTIONS

    names = set(backends.names()) | set(hosts.names())
    others = {str(c) for o in OPTIONS if o.choices and o.source not in ("backends", "hosts")
              for c in o.choices}
    return names, others


def _text(node, source: str) -> str:
    return ast.get_source_segment(source, node) or ""


def _holds_one(node, parents: dict, source: str) -> bool:
    """Whether the constant `node` is compared with, falls back for, is passed as or is filed
    under something called backend or host (through a tuple, list or set around it)."""
    child, parent = node, parents.get(node)
    while isinstance(parent, (ast.Tuple, ast.List, ast.Set)):
        child, parent = parent, parents.get(parent)
    if isinstance(parent, ast.Compare):
        others = [n for n in (parent.left, *parent.comparators) if n is not child]
        return any(HOLDS_ONE.search(_text(n, source)) for n in others)
    if isinstance(parent, ast.BoolOp):
        return any(HOLDS_ONE.search(_text(n, source)) for n in parent.values if n is not child)
    if isinstance(parent, ast.keyword):
        return bool(parent.arg and HOLDS_ONE.search(parent.arg))
    if isinstance(parent, ast.Call):
        return child is not parent.func and bool(HOLDS_ONE.search(_text(parent.func, source)))
    if isinstance(parent, ast.Dict) and child in parent.values:
        key = parent.keys[parent.values.index(child)]
        return key is not None and bool(HOLDS_ONE.search(_text(key, source)))
    if isinstance(parent, (ast.Assign, ast.AnnAssign)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return any(HOLDS_ONE.search(_text(t, source)) for t in targets)
    if isinstance(parent, ast.arguments):
        positional = parent.posonlyargs + parent.args
        pairs = list(zip(positional[len(positional) - len(parent.defaults):], parent.defaults))
        pairs += [(a, d) for a, d in zip(parent.kwonlyargs, parent.kw_defaults) if d is not None]
        return any(d is child and HOLDS_ONE.search(a.arg) for a, d in pairs)
    return False


def _field_name(node, parents: dict, names: set[str]) -> bool:
    """A key of a dict display with a key that is no name: a record's field, not a choice."""
    parent = parents.get(node)
    if not isinstance(parent, ast.Dict) or node not in parent.keys:
        return False
    return any(not (isinstance(k, ast.Constant) and k.value in names) for k in parent.keys if k is not None)


def named_constants(names: set[str]) -> set[str]:
    """The declarations' constants that hold a name (MPI_BACKEND): importing one says it."""
    from couplescope.protocol import options

    return {attr for attr, value in vars(options).items() if isinstance(value, str) and value in names}


def spoken(source: str, names: set[str], others: set[str], constants: frozenset = frozenset()) -> list[tuple[int, str]]:
    """(line, name) for every place `source` says a backend's or host's name, by a string
    or by one of the declarations' `constants` that hold one."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += [(node.lineno, a.name) for a in node.names if a.name in constants]
        elif isinstance(node, ast.Attribute) and node.attr in constants:
            found.append((node.lineno, node.attr))
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names):
            continue
        other_word = node.value in others or _field_name(node, parents, names)
        if _holds_one(node, parents, source) or not other_word:
            found.append((node.lineno, node.value))
    return sorted(found)


def exempt(rel: str) -> bool:
    """The backends themselves and the option declarations (paths relative to couplescope/)."""
    return rel.split(os.sep)[0] == "backends" or rel == os.path.join("protocol", "options.py")


def spoken_in_package(package: str) -> list[str]:
    """'path:line: name' for every place outside the exempt modules that says a name."""
    names, others = vocabulary()
    constants = frozenset(named_constants(names))
    found = []
    for folder, _, files in os.walk(package):
        for file in sorted(files):
            rel = os.path.relpath(os.path.join(folder, file), package)
            if not file.endswith(".py") or exempt(rel):
                continue
            with open(os.path.join(folder, file), encoding="utf-8") as f:
                source = f.read()
            lines = source.splitlines()
            found += [f"{rel}:{n}: {lines[n - 1].strip()}" for n, _ in spoken(source, names, others, constants)]
    return found
