"""What can be run here: models, backends (and why not), presets, devices.

One query for every front end (`couplescope --list`, the app's form), so they can
never disagree. It needs no torch where it can be helped (a listing should not pay for
importing it): models are read from their files (couplescope.workloads.model_info) and a
torch build without CUDA is known from its version file (couplescope.backends.devices);
a model with computed attributes, or a CUDA build of torch, is still asked by importing.
Call it off any UI thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from couplescope.protocol.spec import RunSpec


@dataclass
class Catalogue:
    #: name -> {"size_name", "default_size", "dtype", "summary", "train_steps", "train_optimizer"}
    models: dict = field(default_factory=dict)
    #: name -> (summary, why unavailable or None)
    backends: dict = field(default_factory=dict)
    #: backend name -> the hosts that make its calls (an MPI job's: its inner backend's)
    backend_hosts: dict = field(default_factory=dict)
    #: backend name -> the tasks it runs
    backend_tasks: dict = field(default_factory=dict)
    #: host name -> (what it is, why unavailable or None)
    hosts: dict = field(default_factory=dict)
    #: name -> description
    presets: dict = field(default_factory=dict)
    #: (device, description) pairs; `devices` lists the usable ones
    device_rows: list = field(default_factory=list)
    devices: list = field(default_factory=lambda: ["cpu"])
    #: one line per part that could not be read (a broken model file ...)
    errors: list = field(default_factory=list)


def read_catalogue(with_devices: bool = True) -> Catalogue:
    from couplescope import backends
    from couplescope.backends import hosts
    from couplescope.core import presets
    from couplescope.workloads import catalogue, model_info

    out = Catalogue()
    for name in catalogue.model_names():
        # read from the model's file (no torch); a model whose attributes are computed is imported
        described = model_info.info(f"{catalogue.MODELS_PACKAGE}.{name.replace('-', '_')}")
        if described is not None:
            out.models[name] = described
            continue
        try:
            w = catalogue.load(name)
            out.models[name] = {field: getattr(w, field) for field in model_info.FIELDS}
        except Exception as exc:  # one broken model must not hide the others
            out.errors.append(f"model {name}: {type(exc).__name__}: {exc}")
    for name in backends.names():
        out.backends[name] = (backends.REGISTRY[name][1], backends.unavailable(name))
        runs = backends.get(name).coupling_backend(RunSpec(model="simplenet", backend=name))
        out.backend_tasks[name] = runs.tasks
        out.backend_hosts[name] = tuple(h for h in hosts.names() if hosts.get(h).served(runs))
    out.hosts = hosts.rows()
    for name in presets.preset_names():
        out.presets[name] = presets.describe(name)
    if with_devices:
        from couplescope.backends import devices

        out.device_rows = [list(r) for r in devices.describe()]
        out.devices = devices.available()
    return out
