"""The bridge module contract (docs/bridge.md): import by path, check the functions.

Shared by the bridge backend (which calls a module's compute by name every step) and
by user models (`--model mine.py`, whose reference() and make_inputs() the engine
calls): both import the module the way forpy does, by path, so it may import its
neighbours.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys

from couplescope.protocol.errors import UsageError

CONTRACT = ("initialize", "compute")


def import_by_path(path: str, unique: str):
    """Import a module from a file path, as forpy's import_py does with sys.path."""
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:  # as forpy's paths_insert: the module may import its neighbours
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(unique, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:   # the user's file: bad input, named where it is wrong
        del sys.modules[unique]
        raise UsageError(f"{path} has a syntax error on line {exc.lineno}: {exc.msg}") from None
    except Exception as exc:     # an import it needs is missing, its top level raises
        del sys.modules[unique]
        text = str(exc).strip().splitlines()
        raise UsageError(f"importing {path} failed: {type(exc).__name__}"
                         + (f": {text[0]}" if text else "")) from None
    return module


def untimed_phase(name: str):
    """config["phase"] outside the measured loop (building the reference): times nothing."""
    return contextlib.nullcontext()


def check_contract(module, path: str, function: str = "compute") -> None:
    needed = ("initialize", function)
    missing = [f for f in needed if not callable(getattr(module, f, None))]
    if missing:
        signature = "train(inputs, target)" if function == "train" else f"{function}(inputs, output)"
        raise UsageError(f"bridge module {path} lacks the contract function(s) {', '.join(missing)}; "
                         f"it must define initialize(config) and {signature} (see docs/bridge.md)")
