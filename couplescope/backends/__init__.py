"""The coupling backends, registered by name and listed without importing them.

A backend is one module here plus one line in REGISTRY. Its module must import cheaply
(no torch at import time) and define `BACKEND`, an instance of a
couplescope.backends.base.Backend subclass; that module documents every hook.
docs/architecture.md walks through adding one. Which hosts make a backend's calls is the
hosts' declaration (couplescope.backends.hosts).
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
    "aoti": ("couplescope.backends.aoti",
             "after TorchScript: torch.export + AOTInductor package, no-copy host arrays"),
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


def label_parts_of(spec: dict) -> list[str] | None:
    """The words a recorded variant's backend adds to its name (run_started's label_parts),
    for a run recorded before run_started carried them; None when the backend or the spec
    is unknown here."""
    from couplescope.protocol.spec import RunSpec

    try:
        run_spec = RunSpec.from_dict({k: v for k, v in spec.items() if k in RunSpec.__dataclass_fields__})
        return list(get(run_spec.backend).label_parts(run_spec))
    except (UsageError, ImportError, TypeError, ValueError):
        return None


def with_label_parts(event: dict) -> dict:
    """A recorded run_started event with its label_parts (added when it lacks them)."""
    if event.get("event") == "run_started" and "label_parts" not in event:
        parts = label_parts_of(event.get("spec") or {})
        if parts is not None:
            event["label_parts"] = parts
    return event

