"""Embedded Python as forpy does it: the bridge backend's registry object.

A Python module is imported by path and its compute function called by name with no-copy
views of the host arrays (couplescope.backends.bridge_coupling has the calls and says
exactly what they are; docs/bridge.md the module's contract). The native host makes the
calls from C++ as forpy does, the python host from the worker's Python loop
(couplescope.backends.hosts); user modules run unchanged on both.
"""

from __future__ import annotations

from couplescope.backends.base import Backend
from couplescope.backends.bridge_coupling import user_module
from couplescope.protocol.errors import UsageError


class BridgeBackend(Backend):
    name = "bridge"
    model_kinds = ("catalogue", "torchscript-file", "bridge-module")

    def validate(self, spec) -> None:
        super().validate(spec)
        if spec.model.endswith((".pt", ".pth")) and spec.bridge_model != "torchscript":
            raise UsageError(f"{spec.model} is TorchScript: the bridge runs it with --bridge-model "
                             f"torchscript, not {spec.bridge_model}")
        if spec.bridge_model == "compiled" and spec.reload_every_call:
            raise UsageError("--bridge-model compiled with --reload-every-call would compile the model "
                             "inside every timed call; run it without --reload-every-call")

    runs_bridge_modules = True

    def compiles_on_load(self, spec) -> bool:
        return spec.bridge_model == "compiled"

    def label_parts(self, spec) -> list[str]:
        """The bridge model the built-in module runs; a user's module runs its own Python,
        whatever --bridge-model says, and the model's name (mine.py) already names it."""
        return [] if user_module(spec) else [spec.bridge_model]

    def describe(self, spec) -> list[str]:
        return ["user module"] if user_module(spec) else [f"bridge model {spec.bridge_model}"]

    def needs_torchscript(self, spec) -> bool:
        """The built-in module loads a TorchScript file; a user's module runs its own Python."""
        return spec.bridge_model == "torchscript" and not user_module(spec)

    def open(self, ctx):
        if ctx.spec.task == "train":
            from couplescope.backends.bridge_training import BridgeTraining

            return BridgeTraining(ctx)
        from couplescope.backends.bridge_coupling import BridgeCoupling

        return BridgeCoupling(ctx)


BACKEND = BridgeBackend()
