"""What `--list` says of a catalogue model, read from its file without importing it.

A model file imports torch (its nn.Module), and importing torch is most of what a listing
would cost (about a second, several on a busy machine). The listing needs only the
Workload's plain class attributes (name, summary, size name, default size, dtype), which
are constants in the class body, so they are read from the file's syntax tree. The
parent reads `train_steps` the same way: the steps --task train makes when --iterations is
not given (couplescope.workloads.catalogue.train_steps), and `train_optimizer` (a host
that has one optimizer refuses the others before a worker starts). A model
whose attributes are not constants there (computed, or inherited from a class in
another file) is imported as before: `info()` returns None for it.
"""

from __future__ import annotations

import ast
import importlib.util
import operator

#: the attributes a listing (and the parent) reads, and the Workload base class's defaults
#: for them (couplescope.workloads.base.Workload)
FIELDS = {"summary": "", "size_name": "size", "default_size": 1, "dtype": "float32", "train_steps": None,
          "train_optimizer": "sgd"}

_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}


def info(module_name: str) -> dict | None:
    """{"summary", "size_name", "default_size", "dtype", "train_steps", "train_optimizer"} of the model module (e.g.
    couplescope.models.simplenet), or None when they cannot be read without importing it."""
    try:
        spec = importlib.util.find_spec(module_name)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        with open(spec.origin, encoding="utf-8") as f:
            tree = ast.parse(f.read(), spec.origin)
    except (OSError, SyntaxError, ValueError, ImportError):
        return None
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    workload = _workload_class(tree)
    found: dict = {}
    while workload is not None:
        node = classes.get(workload)
        if node is None:
            return None   # a base class from another file: import the model instead
        try:
            constants = _constants(node)
        except ValueError:
            return None   # computed: only the imported class knows
        for name, value in constants.items():
            found.setdefault(name, value)
        bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
        if bases == ["Workload"]:
            break
        if len(bases) != 1 or len(node.bases) != 1:
            return None
        workload = bases[0]
    else:
        return None
    return {name: found.get(name, default) for name, default in FIELDS.items()}


def _workload_class(tree) -> str | None:
    """The class of `WORKLOAD = SomeWorkload()` at the module's top level."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "WORKLOAD"
                                                 for t in node.targets)
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and not node.value.args and not node.value.keywords):
            return node.value.func.id
    return None


def _constants(node: ast.ClassDef) -> dict:
    """The class body's assignments of the listed attributes, whose values must be
    constants (or integer arithmetic on them, as `128 * 64`): ValueError otherwise."""
    out = {}
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            name, value = stmt.target.id, stmt.value
        else:
            continue
        if name in FIELDS:
            out[name] = _value(value)
    return out


def _value(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _value(node.left), _value(node.right)
        if isinstance(left, int) and isinstance(right, int):
            return _OPERATORS[type(node.op)](left, right)
    raise ValueError("not a constant")
