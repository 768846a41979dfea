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


def check_host(spec) -> None:
    """Raise UsageError when the spec's explicit host cannot make this backend's calls here."""
    if spec.host is None:
        return
    hosts = get(spec.backend).hosts(spec)
    if spec.host not in hosts:
        raise UsageError(f"backend '{spec.backend}' runs on the {' or '.join(hosts)} host only, "
                         f"not --host {spec.host}")
    if spec.host == "native":
        from couplescope.backends import native

        reason = native.unavailable()
        if reason:
            raise UsageError(f"--host native is unavailable: {reason}; --host python runs without it")


def resolve_host(spec):
    """(the spec with its host decided, a note or None). An unset host becomes the native
    host where the backend has one and it can be built here, else python; the note says
    why a backend that has a native host falls back to python."""
    if spec.host is not None:
        return spec, None
    hosts = get(spec.backend).hosts(spec)
    if "native" in hosts:
        from couplescope.backends import native

        reason = native.unavailable()
        if reason is None:
            return spec.replace(host="native"), None
        return (spec.replace(host="python"),
                f"{spec.label}: on the python host because the native host is unavailable ({reason})")
    return spec.replace(host=hosts[0]), None


def host_rows() -> dict:
    """The hosts, what each is, and why the native one cannot be built here (if so)."""
    from couplescope.backends import native

    reason = native.unavailable()
    if reason is None:
        directory = native.build_dir()
        state = (f"built, cached in {directory}" if native.built_module(directory)
                 else f"compiled on first use ({native.BUILD_TIME}) into {directory}")
        what = f"C++ against libtorch, as a Fortran code through FTorch or forpy; {state}"
    else:
        what = "C++ against libtorch, as a Fortran code through FTorch or forpy"
    return {"native": (what, reason),
            "python": ("the worker's Python loop: what a Python simulation code pays", None)}


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

