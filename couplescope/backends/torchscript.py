"""Direct coupling as FTorch does it.

The TorchScript file is loaded once with libtorch's loader. Each call wraps the host
arrays as tensors without copying, with strides from FTorch's layout rule
(couplescope.backends.host_memory), runs forward under the grad mode (no_grad, as FTorch's
torch::AutoGradMode(false); inference mode as a what-if), and copies the result into a
tensor wrapping the preallocated host output array. On a CUDA device the inputs are
moved to the device (h2d) and the result is copied straight into the tensor wrapping the
host output (d2h, FTorch's `copy_`), so there is no marshal_out phase on a GPU; see
couplescope.backends.transfer and docs/gpu.md.

Two hosts make these calls: the native host (C++, couplescope/backends/native/host.cpp:
what a Fortran code pays through FTorch) and the python host (this module's Python loop:
what a Python simulation code pays). On the python host the grad mode is entered once at
load, as a Python simulation would wrap its loop, so the forward phase holds only the
module call.
"""

from __future__ import annotations

from couplescope.backends.base import Backend, Coupling, grad_mode_guard
from couplescope.backends.host_memory import HostTensors
from couplescope.backends.native.host_arrays import add_host_phases, host_array


class TorchScriptCoupling(Coupling):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        import torch

        self.torch = torch
        layout = ctx.spec.layout
        self.wrap = HostTensors({**ctx.arrays, **ctx.outputs}, layout)
        self.on_gpu = ctx.device.startswith("cuda")
        self.copies = self.staging = None
        if self.on_gpu:
            from couplescope.backends.transfer import DeviceCopies

            self.copies = DeviceCopies(ctx.device, ctx.spec.pinned)
            self.staging = {n: self.copies.staging_for(self.wrap(n, a)) for n, a in ctx.outputs.items()}
        self.module = None
        self._grad = None

    def load(self) -> None:
        self.module = self.torch.jit.load(self.ctx.torchscript_path, map_location=self.ctx.device)
        self.module.eval()
        self.enter_grad_mode()

    def enter_grad_mode(self) -> None:
        if self._grad is None:   # entered once, left at close(): not a per-call cost
            self._grad = grad_mode_guard(self.torch, self.ctx.spec.grad_mode)
            self._grad.__enter__()

    def close(self) -> None:
        if self._grad is not None:
            self._grad.__exit__(None, None, None)
            self._grad = None

    def call(self) -> None:
        ctx, clock, torch = self.ctx, self.ctx.clock, self.torch
        if ctx.spec.reload_every_call:
            with clock("load"):
                self.load()
        for call in ctx.calls:
            if self.on_gpu:
                self.call_on_device(call)
                continue
            with clock("marshal_in"):
                inputs = [self.wrap(n, ctx.arrays[n]) for n in call.inputs]
            with clock("forward"):
                result = self.module(*inputs)
            with clock("marshal_out"):
                host = ctx.outputs[call.output]
                if tuple(result.shape) != host.shape:
                    self.output_error = (f"model returned shape {tuple(result.shape)}, "
                                         f"host expects {host.shape}")
                else:
                    self.wrap(call.output, host).copy_(result)

    def call_on_device(self, call) -> None:
        """FTorch on a GPU: wrap both host arrays, move the inputs, copy the result back."""
        ctx, clock, torch, copies = self.ctx, self.ctx.clock, self.torch, self.copies
        with clock("marshal_in"):
            inputs = [self.wrap(n, ctx.arrays[n]) for n in call.inputs]
            output = self.wrap(call.output, ctx.outputs[call.output])
        with clock("h2d"):
            inputs = [copies.to_device(t) for t in inputs]
        with clock("forward"):
            result = self.module(*inputs)
        if not isinstance(result, torch.Tensor) or result.shape != output.shape:
            got = tuple(result.shape) if isinstance(result, torch.Tensor) else type(result).__name__
            self.output_error = f"model returned {got}, host expects {tuple(output.shape)}"
            return
        with clock("d2h"):
            copies.to_host(output, result, self.staging[call.output])


class NativeTorchScriptCoupling(Coupling):
    """The same calls made by the native host's DirectHost, timed in C++."""

    PHASES = ("marshal_in", "h2d", "forward", "d2h", "marshal_out")
    #: the native host class that makes the calls (the aoti backend's is AotiHost)
    HOST = "DirectHost"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        from couplescope.backends import native

        self.native = native.module_for_worker()
        calls = [self.native.Call([host_array(self.native, ctx.arrays[n], ctx.spec.layout) for n in c.inputs],
                                  host_array(self.native, ctx.outputs[c.output], ctx.spec.layout))
                 for c in ctx.calls]
        host = getattr(self.native, self.HOST)
        self.host = host(self.model_path(), ctx.device, ctx.spec.grad_mode, calls)
        if not ctx.spec.reload_every_call:
            from couplescope.backends.native.batch import NativeBatchRunner

            self.call_batch = NativeBatchRunner(self.native, self.host, ctx.outputs, self.PHASES,
                                                inputs=ctx.arrays)

    def model_path(self) -> str:
        return self.ctx.torchscript_path

    def load(self) -> None:
        self.host.load()

    def call(self) -> float:
        ctx = self.ctx
        loading = 0.0
        if ctx.spec.reload_every_call:
            with ctx.clock("load"):
                self.load()
            loading = ctx.clock.phases["load"]
        whole, *phases, error = self.host.call(ctx.clock.profiling)
        add_host_phases(ctx.clock.phases, self.PHASES, phases)
        if error:
            self.output_error = error
        return whole + loading


class TorchScriptBackend(Backend):
    name = "torchscript"

    def needs_torchscript(self, spec) -> bool:
        return True

    def open(self, ctx):
        if ctx.spec.task == "train":
            from couplescope.backends.torchscript_training import TorchScriptTraining

            return TorchScriptTraining(ctx)
        return TorchScriptCoupling(ctx)


BACKEND = TorchScriptBackend()
