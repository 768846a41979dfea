"""Direct coupling as FTorch does it.

The TorchScript file is loaded once with torch.jit.load (libtorch's loader). Each call
wraps the host arrays as tensors without copying, with strides from FTorch's layout rule
(couplescope.layout), runs forward under inference mode, and copies the result into a
tensor wrapping the preallocated host output array. On a CUDA device the inputs are
moved to the device (h2d) and the result is copied straight into the tensor wrapping the
host output (d2h, FTorch's `copy_`), so there is no marshal_out phase on a GPU; see
couplescope.transfer and docs/gpu.md.
"""

from __future__ import annotations

from couplescope.backends.base import Backend, Coupling
from couplescope.backends.host_memory import HostTensors


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

    def load(self) -> None:
        self.module = self.torch.jit.load(self.ctx.torchscript_path, map_location=self.ctx.device)
        self.module.eval()

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
                with torch.inference_mode():
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
            with torch.inference_mode():
                result = self.module(*inputs)
        if not isinstance(result, torch.Tensor) or result.shape != output.shape:
            got = tuple(result.shape) if isinstance(result, torch.Tensor) else type(result).__name__
            self.output_error = f"model returned {got}, host expects {tuple(output.shape)}"
            return
        with clock("d2h"):
            copies.to_host(output, result, self.staging[call.output])


class TorchScriptBackend(Backend):
    name = "torchscript"
    summary = "direct coupling as FTorch does it"

    def needs_torchscript(self, spec) -> bool:
        return True

    def open(self, ctx):
        return TorchScriptCoupling(ctx)


BACKEND = TorchScriptBackend()
