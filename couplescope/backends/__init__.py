"""The coupling backends, registered by name and listed without importing them.

A backend is one module here plus one line in REGISTRY. Its module must import
cheaply (no torch at import time) and define `BACKEND`, an object with:
  name, summary
  unavailable(spec=None) -> str | None   why it cannot run here (None: it can)
  open(context) -> Coupling              (in the worker) see couplescope/coupling.py
  command(spec, worker_cmd) -> list[str] optional: how to launch the worker (MPI)
"""

from __future__ import annotations

import importlib

from couplescope.errors import UsageError, choices_text

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
    if spec.backend != "mpi" and spec.device != "cpu":
        from couplescope.devices import available, cuda_unavailable_reason

        reason = cuda_unavailable_reason(spec.device)
        if reason:
            raise UsageError(f"device '{spec.device}' is unavailable: {reason}; "
                             f"devices here: {', '.join(available())}")
