"""The forpy driver's Python helper: run by the driver's embedded interpreter, between calls.

The forpy host's driver (a Fortran program of ours compiled with the user's forpy_mod.F90)
embeds the Python that runs couplescope. Its Fortran side (fortran/couplescope_forpy.f90)
calls these functions by name through forpy, never between two clock reads of a timed
call:

  start(path)    reads the configuration the worker wrote (JSON), checks that the embedded
                 interpreter is the worker's (its prefix, so the venv's torch and
                 couplescope), points the module's print() at stderr as the worker does,
                 maps the shared file, and returns (config, module folder, module name):
                 the bridge module's `config` with a phase clock in config["phase"]
  after(k)       adds what the module timed during iteration k into its timings row
  forget()       drops what a failed call timed
  last_error()   the exception forpy's err_print handed to sys.excepthook, "Type: message"
  state(grads)   the module's state() written where the worker reads it (numpy .npz)
  save(path)     the module's save(path)

Imported in the driver only: the worker never imports it.
"""

from __future__ import annotations

import json
import mmap
import os
import sys

import numpy as np

from couplescope.backends.clock import PHASES, PhaseClock

_clock = PhaseClock()
_settings: dict = {}
_timings = None   # the shared file's timings rows, (capacity, 1 + len(PHASES)) doubles
_last_error = ""


def start(path: str):
    """(config, the module's folder, its name to import): set up from the worker's JSON."""
    global _timings
    with open(path) as f:
        _settings.update(json.load(f))
    expected = _settings["prefix"]
    if os.path.realpath(sys.prefix) != os.path.realpath(expected):
        raise RuntimeError(f"the embedded Python is {sys.prefix}, not the worker's {expected}: put the "
                           f"worker's interpreter first on PATH")
    sys.stdout = sys.stderr   # as the worker does: the module's print() reaches the run's output
    sys.excepthook = _keep_error
    with open(_settings["shared"], "r+b") as f:
        mapped = mmap.mmap(f.fileno(), 0)
    _timings = np.ndarray((_settings["capacity"], 1 + len(PHASES)), dtype=np.float64, buffer=mapped,
                          offset=_settings["timings_offset"])
    config = dict(_settings["config"], phase=_clock, allreduce=None)
    module = _settings["module"]
    return config, os.path.dirname(os.path.abspath(module)), os.path.splitext(os.path.basename(module))[0]


def after(k: int) -> None:
    """What the module timed during iteration k (from 1), added into its row."""
    row = _timings[k - 1]
    for name, seconds in _clock.reset().items():
        if name in PHASES:
            row[1 + PHASES.index(name)] += seconds


def forget() -> None:
    _clock.reset()


def _keep_error(kind, value, traceback) -> None:
    """sys.excepthook, which forpy's err_print (PyErr_Print) calls: keep its "Type: first
    line". A call made while an exception was pending (a later call of the same iteration)
    raises a SystemError over it: the exception kept is the one under those."""
    global _last_error
    while isinstance(value, SystemError) and (value.__cause__ or value.__context__) is not None:
        value = value.__cause__ or value.__context__
    kind = type(value) if value is not None else kind
    text = str(value).strip().splitlines() if value is not None else []
    _last_error = f"{kind.__name__}: {text[0]}" if text else kind.__name__


def last_error() -> str:
    global _last_error
    said, _last_error = _last_error, ""
    return said


def _module():
    return sys.modules[os.path.splitext(os.path.basename(_settings["module"]))[0]]


def state(grads: bool) -> None:
    """The module's state() ({name: (weight, grad)}) into the worker's .npz (an empty file
    when the module has none); the gradients only when asked."""
    getter = getattr(_module(), "state", None)
    arrays = {}
    if callable(getter):
        arrays["has_state"] = np.ones(1)
        for i, (name, (weight, grad)) in enumerate(getter().items()):
            arrays[f"name:{i}"] = np.array(name)
            arrays[f"weight:{i}"] = np.asarray(weight)
            if grads and grad is not None:
                arrays[f"grad:{i}"] = np.asarray(grad)
    with open(_settings["state_path"], "wb") as f:
        np.savez(f, **arrays)


def save(path: str) -> None:
    _module().save(path)
