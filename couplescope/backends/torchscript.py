"""Direct coupling as FTorch does it.

The TorchScript file is loaded once with torch.jit.load (libtorch's loader). Each call
wraps the host arrays as tensors without copying, with strides from FTorch's layout rule
(couplescope.layout), runs forward under inference mode, and copies the result into a
tensor wrapping the preallocated host output array. On a CUDA device the inputs are
moved to the device (h2d) and the output comes back (d2h) before it is written.
"""

from __future__ import annotations

from couplescope.coupling import BackendBase, Coupling
from couplescope.layout import flat_memory, strides_for


class TorchScriptCoupling(Coupling):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        import torch

        self.torch = torch
        layout = ctx.spec.layout
        # Strides depend only on shapes: compute them once, as a host code would.
        self.strides = {name: strides_for(a, layout) for name, a in {**ctx.arrays, **ctx.outputs}.items()}
        self.on_gpu = ctx.device.startswith("cuda")
        self.pinned = {}
        if self.on_gpu and ctx.spec.pinned:
            self.pinned = {n: torch.empty(a.shape, dtype=torch.from_numpy(a[:0]).dtype).pin_memory()
                           for n, a in ctx.outputs.items()}
        self.module = None

    def wrap(self, name, array):
        """A tensor over the host memory of `array`: no copy, FTorch strides."""
        return self.torch.from_numpy(flat_memory(array)).as_strided(array.shape, self.strides[name])

    def load(self) -> None:
        self.module = self.torch.jit.load(self.ctx.torchscript_path, map_location=self.ctx.device)
        self.module.eval()

    def call(self) -> None:
        ctx, clock, torch = self.ctx, self.ctx.clock, self.torch
        if ctx.spec.reload_every_call:
            with clock("load"):
                self.load()
        for call in ctx.calls:
            with clock("marshal_in"):
                inputs = [self.wrap(n, ctx.arrays[n]) for n in call.inputs]
            if self.on_gpu:
                with clock("h2d"):
                    inputs = [t.to(ctx.device, non_blocking=ctx.spec.pinned) for t in inputs]
            with clock("forward"):
                with torch.inference_mode():
                    result = self.module(*inputs)
            if self.on_gpu:
                with clock("d2h"):
                    staging = self.pinned.get(call.output)
                    result = staging.copy_(result, non_blocking=True) if staging is not None else result.cpu()
            with clock("marshal_out"):
                host = ctx.outputs[call.output]
                if tuple(result.shape) != host.shape:
                    self.output_error = (f"model returned shape {tuple(result.shape)}, "
                                         f"host expects {host.shape}")
                else:
                    self.wrap(call.output, host).copy_(result)


class TorchScriptBackend(BackendBase):
    name = "torchscript"
    summary = "direct coupling as FTorch does it"
    needs_torchscript = True

    def open(self, ctx):
        return TorchScriptCoupling(ctx)


BACKEND = TorchScriptBackend()
