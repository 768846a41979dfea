"""What can be run here: models, backends (and why not), presets, devices.

One query for every front end (`couplescope --list`, the app's form), so they can
never disagree. It imports the model files and asks torch about devices: call it off
any UI thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from couplescope.protocol.spec import RunSpec


@dataclass
class Catalogue:
    #: name -> {"size_name", "default_size", "dtype", "summary"}
    models: dict = field(default_factory=dict)
    #: name -> (summary, why unavailable or None)
    backends: dict = field(default_factory=dict)
    #: backend name -> the hosts it runs on (preferred first)
    backend_hosts: dict = field(default_factory=dict)
    #: host name -> (what it is, why unavailable or None)
    hosts: dict = field(default_factory=dict)
    #: name -> description
    presets: dict = field(default_factory=dict)
    #: (device, description) pairs; `devices` lists the usable ones
    device_rows: list = field(default_factory=list)
    devices: list = field(default_factory=lambda: ["cpu"])
    #: one line per part that could not be read (a broken model file ...)
    errors: list = field(default_factory=list)


def host_rows() -> dict:
    """The hosts, what each is, and why the native one cannot be built here (if so)."""
    from couplescope.backends import native

    reason = native.unavailable()
    if reason is None:
        directory = native.build_dir()
        state = (f"built, cached in {directory}" if native.built_module(directory)
                 else f"compiled on first use (about a minute) into {directory}")
        what = f"C++ against libtorch, as a Fortran code through FTorch or forpy; {state}"
    else:
        what = "C++ against libtorch, as a Fortran code through FTorch or forpy"
    return {"native": (what, reason),
            "python": ("the worker's Python loop: what a Python simulation code pays", None)}


def read_catalogue(with_devices: bool = True) -> Catalogue:
    from couplescope import backends
    from couplescope.core import presets
    from couplescope.workloads import catalogue

    out = Catalogue()
    for name in catalogue.model_names():
        try:
            w = catalogue.load(name)
            out.models[name] = {"size_name": w.size_name, "default_size": w.default_size,
                                "dtype": w.dtype, "summary": w.summary}
        except Exception as exc:  # one broken model must not hide the others
            out.errors.append(f"model {name}: {type(exc).__name__}: {exc}")
    for name in backends.names():
        out.backends[name] = (backends.REGISTRY[name][1], backends.unavailable(name))
        try:
            out.backend_hosts[name] = backends.get(name).hosts(RunSpec(model="simplenet", backend=name))
        except Exception:
            out.backend_hosts[name] = ("python",)
    out.hosts = host_rows()
    for name in presets.preset_names():
        out.presets[name] = presets.describe(name)
    if with_devices:
        from couplescope.backends import devices

        out.device_rows = [list(r) for r in devices.describe()]
        out.devices = devices.available()
    return out
