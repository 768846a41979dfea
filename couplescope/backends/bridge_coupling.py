"""The bridge's calls, as forpy makes them: a module's compute function called by name.

The host imports a Python module by path, calls its `initialize(config)` once, then each
call looks the compute function up by name and passes no-copy numpy views of the host
arrays (Fortran-ordered, as forpy's ndarray_create_nocopy makes them). The module
converts to torch, runs the model and assigns the result into the output view, which
is what reaches host memory. The module times its own phases with `config["phase"]`;
what the host spends around them (view creation, the call by name) is the coupling
overhead. The contract is documented in docs/bridge.md.

`BridgeCoupling` is the python host's loop; `NativeBridgeCoupling` the native host's
(C++ calling CPython as forpy does: couplescope/backends/native/host.cpp, EmbeddedHost).
The backend's registry object is couplescope.backends.bridge; training steps are
couplescope.backends.bridge_training.
"""

from __future__ import annotations

import os
from time import perf_counter

from couplescope.backends.base import Coupling
from couplescope.backends.host_memory import numpy_view
from couplescope.workloads.bridge_contract import check_contract, import_by_path

#: the module couplescope's own models are called through (forpy's side of the bridge)
BUILTIN_MODULE = os.path.join(os.path.dirname(__file__), "bridge_module.py")


def user_module(spec) -> bool:
    """The variant calls the user's own module (--model mine.py), not couplescope's."""
    return spec.model.endswith(".py")


def config(spec, size: int, dtype: str, device: str, clock, torchscript_path, lr=None,
           optimizer=None, allreduce=None) -> dict:
    """What a bridge module's initialize(config) receives (docs/bridge.md lists it); a
    training run adds its optimizer, learning rate and loss."""
    config = {"model": spec.model, "size": size, "dtype": dtype, "seed": spec.seed, "device": device,
              "bridge_model": spec.bridge_model, "torchscript_path": torchscript_path, "phase": clock,
              "threads": spec.threads, "grad_mode": spec.grad_mode, "task": spec.task}
    if spec.task == "train":
        # allreduce: under MPI, averages the gradients of the parameters it is given across
        # the ranks (call it between backward and step); None in one process
        config.update(optimizer=optimizer or spec.optimizer, lr=lr, loss=spec.loss, train_call=spec.train_call,
                      allreduce=allreduce)
    return config


class BridgeCoupling(Coupling):
    function = "compute"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.path = ctx.extra.get("bridge_module") or BUILTIN_MODULE
        self.module = None
        self._loads = 0

    def config(self) -> dict:
        ctx = self.ctx
        return config(ctx.spec, ctx.size, ctx.dtype, ctx.device, ctx.clock, ctx.torchscript_path,
                      lr=ctx.extra.get("lr"), optimizer=ctx.extra.get("optimizer"),
                      allreduce=ctx.extra.get("allreduce"))

    def load(self) -> None:
        self._loads += 1
        handed = self.ctx.extra.get("initialised")
        if handed is not None and self._loads == 1:
            # a user's module, imported and initialised once while the variant was built (its
            # reference() needed it): initialising it again would run its set-up twice
            self.module, self.loaded_before = handed
            check_contract(self.module, self.path, self.function)   # train, under --task train
        else:
            self.module = import_by_path(self.path, f"couplescope_bridge_{os.getpid()}_{self._loads}")
            check_contract(self.module, self.path, self.function)
            self.module.initialize(self.config())
        if self.ctx.spec.bridge_model == "compiled" and self.compiled is None:
            self.compiled = self.first_call()

    def first_call(self) -> dict:
        """torch.compile compiles on a model's first call: make it now, once per call of an
        iteration, on the host arrays' own views (the shapes, strides and grad mode the timed
        calls use, so none of them compiles again), and time it as compile time."""
        ctx, layout = self.ctx, self.ctx.spec.layout
        t0 = perf_counter()
        for call in ctx.calls:
            inputs = tuple(numpy_view(ctx.arrays[n], layout) for n in call.inputs)
            getattr(self.module, self.function)(inputs, numpy_view(ctx.outputs[call.output], layout))
        seconds = perf_counter() - t0
        ctx.clock.reset()   # the phases the module timed during it belong to no iteration
        return {"status": "compiled", "seconds": seconds, "compiler": "torch.compile"}

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


class NativeBridgeCoupling(BridgeCoupling):
    """The same calls made by the native host's EmbeddedHost: arrays created, the function
    looked up by name and called, references released, all in C++ and timed there."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        from couplescope.backends import native

        self.native = native.module_for_worker()
        self.host = None

    #: the host reads back what the function returns (a training step's loss)
    returns_loss = False

    def host_calls(self):
        """The calls as the native host receives them: input arrays and the output array."""
        from couplescope.backends.native.host_arrays import host_array

        layout = self.ctx.spec.layout
        return [self.native.Call([host_array(self.native, self.ctx.arrays[n], layout) for n in c.inputs],
                                 host_array(self.native, self.ctx.outputs[c.output], layout))
                for c in self.ctx.calls]

    def load(self) -> None:
        super().load()
        clock = self.ctx.clock
        self.host = self.native.EmbeddedHost(self.module, self.function, self.host_calls(), clock.reset,
                                             self.returns_loss)
        if not self.ctx.spec.reload_every_call:
            from couplescope.backends.native.batch import NativeBatchRunner

            outputs = {} if self.returns_loss else self.ctx.outputs   # a step is judged by its loss
            self.call_batch = NativeBatchRunner(self.native, self.host, outputs,
                                                ("marshal_in", "marshal_out"), before=clock.reset,
                                                inputs=self.ctx.arrays)

    def call(self) -> float:
        from couplescope.backends.native.host_arrays import add_host_phases

        ctx, clock = self.ctx, self.ctx.clock
        loading = 0.0
        if ctx.spec.reload_every_call:
            with clock("load"):
                self.load()
            loading = clock.phases["load"]
        try:
            whole, marshal_in, marshal_out = self.host.call(clock.profiling)
        except ValueError as exc:  # numpy's broadcast error: the model's output shape is wrong
            self.output_error = f"compute could not write the output: {exc}"
            return None
        add_host_phases(clock.phases, ("marshal_in", "marshal_out"), (marshal_in, marshal_out))
        return whole + loading
