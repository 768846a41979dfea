"""The coupling backends, registered by name and listed without importing them.

A backend is one module here plus one line in REGISTRY. Its module must import cheaply
(no torch at import time) and define `BACKEND`, an instance of a
couplescope.backends.base.Backend subclass; that module documents every hook.
docs/architecture.md walks through adding one.
"""

from __future__ import annotations

import importlib

from couplescope.protocol.errors import UsageError, choices_text

#: name -> (module, one-line summary). Order is the order `--list` shows.
REGISTRY = {
    "torchscript": ("couplescope.backends.torchscript",
                    "direct coupling as FTorch does it: TorchScript via libtorch, no-copy host arrays"),
    "bridge": ("couplescope.backends.bridge",
               "embedded Python as forpy does it: a module's compute function called by name"),
    "cudagraph": ("couplescope.backends.cudagraph",
                  "CUDA Graph capture of forward, replayed each iteration"),
    "mpi": ("couplescope.backends.mpi",
            "MPI fan-out: R ranks under mpiexec or srun, each running an inner coupling"),
}


def names() -> list[str]:
    return list(REGISTRY)


def check_name(name: str) -> None:
    if name not in REGISTRY:
        raise UsageError(f"unknown backend '{name}'; choose one of: {choices_text(REGISTRY)}")


def get(name: str):
    """The registry object of backend `name` (imports its module, which is cheap)."""
    check_name(name)
    return importlib.import_module(REGISTRY[name][0]).BACKEND


def unavailable(name: str, spec=None) -> str | None:
    """Why `name` cannot run here (for `spec`, if given), or None."""
    try:
        backend = get(name)
    except ImportError as exc:  # a backend module that cannot even import explains itself
        return f"cannot import: {exc}"
    return backend.unavailable(spec)


def check_available(spec) -> None:
    """Raise UsageError when the spec's backend (or device) cannot run here."""
    reason = unavailable(spec.backend, spec)
    if reason:
        raise UsageError(f"backend '{spec.backend}' is unavailable: {reason}")
    get(spec.backend).check_device(spec)
