"""Embedded Python as forpy does it.

The host imports a Python module by path, calls its `initialize(config)` once, then each
call looks the compute function up by name and passes no-copy numpy views of the host
arrays (Fortran-ordered, as forpy's ndarray_create_nocopy makes them). The module
converts to torch, runs the model and assigns the result into the output view, which
is what reaches host memory. The module times its own phases with `config["phase"]`;
what the host spends around them (view creation, the call by name) is the coupling
overhead. The contract is documented in docs/bridge.md.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from couplescope.coupling import BackendBase, Coupling
from couplescope.errors import UsageError
from couplescope.layout import numpy_view

BUILTIN_MODULE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "bridge_module.py")
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
    spec.loader.exec_module(module)
    return module


def check_contract(module, path: str, function: str = "compute") -> None:
    needed = ("initialize", function)
    missing = [f for f in needed if not callable(getattr(module, f, None))]
    if missing:
        raise UsageError(f"bridge module {path} lacks the contract function(s) {', '.join(missing)}; "
                         "it must define initialize(config) and compute(inputs, output) (see docs/bridge.md)")


class BridgeCoupling(Coupling):
    function = "compute"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.path = ctx.extra.get("bridge_module") or BUILTIN_MODULE
        self.module = None
        self._loads = 0

    def config(self) -> dict:
        spec = self.ctx.spec
        return {"model": spec.model, "size": self.ctx.size, "dtype": self.ctx.dtype,
                "seed": spec.seed, "device": self.ctx.device, "bridge_model": spec.bridge_model,
                "torchscript_path": self.ctx.torchscript_path, "phase": self.ctx.clock,
                "threads": spec.threads}

    def load(self) -> None:
        self._loads += 1
        self.module = import_by_path(self.path, f"couplescope_bridge_{os.getpid()}_{self._loads}")
        check_contract(self.module, self.path, self.function)
        self.module.initialize(self.config())

    def call(self) -> None:
        ctx, clock = self.ctx, self.ctx.clock
        if ctx.spec.reload_every_call:
            with clock("load"):
                self.load()
        layout = ctx.spec.layout
        for call in ctx.calls:
            with clock("marshal_in"):
                inputs = tuple(numpy_view(ctx.arrays[n], layout) for n in call.inputs)
                output = numpy_view(ctx.outputs[call.output], layout)
            try:
                getattr(self.module, self.function)(inputs, output)
            except ValueError as exc:  # numpy's broadcast error: the model's output shape is wrong
                self.output_error = f"compute could not write the output: {exc}"


class BridgeBackend(BackendBase):
    name = "bridge"
    summary = "embedded Python as forpy does it"

    @property
    def needs_torchscript(self):  # only when the module loads a TorchScript file
        return True

    def open(self, ctx):
        return BridgeCoupling(ctx)


BACKEND = BridgeBackend()
