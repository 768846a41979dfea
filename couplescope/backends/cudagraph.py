"""CUDA Graph replay: the model's forward captured once, replayed every call.

The pattern is PyTorch's own (CUDA semantics notes, "CUDA Graphs"; torch.cuda.graph):
static input buffers on the device; a few eager warm-up runs on a side stream that
first waits for the current stream and is waited on afterwards (so lazy initialisation
such as cuBLAS handles, cuDNN plans and the TorchScript profiling executor's
specialisation never happens inside the capture); one capture with
`torch.cuda.graph(g, stream=side)` on that same side stream (as make_graphed_callables
does), whose outputs become the static output buffers; then, every
call, copy the host inputs into the static inputs, `g.replay()`, and copy the static
output into the host array.

Which module is captured: the TorchScript file (ctx.torchscript_path), not the eager
nn.Module. The presets compare torchscript against cudagraph, and with the same module
on both sides the only difference measured is eager kernel launches versus one graph
launch. It is also what a compiled host could do: libtorch has at::cuda::CUDAGraph, so
a Fortran code coupled through FTorch can capture the very same scripted module, while
an eager module needs a Python interpreter. A user's .pt file is captured as it is.

Each call of the workload (cgdrag makes two: zonal and meridional wind) gets its own
graph, static buffers and (default, private) memory pool: the graphs never share memory
they could corrupt, at the price of a few activations' worth of device memory.

The phases are those of the torchscript backend on a GPU: marshal_in wraps the host
arrays (FTorch strides), h2d fills the static inputs, forward is the replay, d2h writes
the static output into the host array. A capture that fails (a forward that synchronises
with the host, e.g. `.item()` or `.cpu()`, or that needs memory capture forbids) raises
CaptureError naming the model; the engine reports it as the variant's one-line failure
and the run goes on with the other variants.
"""

from __future__ import annotations

from couplescope.backends.base import Backend, Coupling, grad_mode_guard
from couplescope.backends.cudagraph_capture import (CAPTURE_ADVICE, WARMUP_RUNS,  # noqa: F401
                                                    CaptureError, capture_failure, essential_message)
from couplescope.backends.host_memory import HostTensors
from couplescope.protocol.errors import UsageError

class CallGraph:
    """One workload call's captured graph and the device buffers it reads and writes."""

    __slots__ = ("call", "graph", "static_inputs", "static_output", "staging", "shape_error")

    def __init__(self, call) -> None:
        self.call = call
        self.graph = None
        self.static_inputs = []
        self.static_output = None
        self.staging = None
        self.shape_error = None


class CudaGraphCoupling(Coupling):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        import torch

        from couplescope.backends.transfer import DeviceCopies

        self.torch = torch
        self.device = torch.device(ctx.device)
        layout = ctx.spec.layout
        self.wrap = HostTensors({**ctx.arrays, **ctx.outputs}, layout)
        self.copies = DeviceCopies(ctx.device, ctx.spec.pinned)
        self.model_name = getattr(ctx.workload, "name", "") or ctx.spec.model
        self.module = None
        self.graphs: list[CallGraph] = []

    def load(self) -> None:
        """Load the TorchScript module onto the device, warm it up and capture each call."""
        torch = self.torch
        self.graphs = []  # a reload drops the old graphs (and their pools) first
        self.module = torch.jit.load(self.ctx.torchscript_path, map_location=self.device)
        self.module.eval()
        for call in self.ctx.calls:
            self.graphs.append(self.capture(call))

    def capture(self, call) -> CallGraph:
        torch, ctx = self.torch, self.ctx
        cg = CallGraph(call)
        for name in call.inputs:
            host = self.wrap(name, ctx.arrays[name])
            static = self.copies.empty_like_host(host)  # the host's strides: h2d is one memcpy
            static.copy_(host)  # real data for the warm-up runs
            cg.static_inputs.append(static)
        current = torch.cuda.current_stream(self.device)
        side = torch.cuda.Stream(device=self.device)
        side.wait_stream(current)
        try:
            with torch.cuda.stream(side), grad_mode_guard(torch, ctx.spec.grad_mode):
                for _ in range(WARMUP_RUNS):
                    self.module(*cg.static_inputs)
        except Exception as exc:
            raise RuntimeError(f"model {self.model_name} failed in its warm-up on {ctx.device} before "
                               f"CUDA Graph capture: {essential_message(exc)}") from exc
        current.wait_stream(side)
        cg.graph = torch.cuda.CUDAGraph()
        try:
            with grad_mode_guard(torch, ctx.spec.grad_mode):
                with torch.cuda.graph(cg.graph, stream=side):  # the warm-up's stream: its
                    # per-stream library state (cuBLAS workspaces) is already set up
                    output = self.module(*cg.static_inputs)
        except Exception as exc:
            raise capture_failure(self.model_name, exc) from exc
        if not isinstance(output, torch.Tensor):
            raise CaptureError(f"CUDA Graph capture of model {self.model_name}: forward returned "
                               f"{type(output).__name__}, the coupling needs one tensor")
        cg.static_output = output  # lives in the graph's private pool; kept alive with the graph
        host_out = self.wrap(call.output, ctx.outputs[call.output])
        if output.shape != host_out.shape:  # decided once: every replay has the same shapes
            cg.shape_error = (f"model returned shape {tuple(output.shape)}, host expects "
                              f"{tuple(host_out.shape)}")
        cg.staging = self.copies.staging_for(host_out)
        return cg

    def call(self) -> None:
        ctx, clock, copies = self.ctx, self.ctx.clock, self.copies
        if ctx.spec.reload_every_call:
            with clock("load"):
                self.load()
        for cg in self.graphs:
            call = cg.call
            with clock("marshal_in"):
                inputs = [self.wrap(n, ctx.arrays[n]) for n in call.inputs]
                output = self.wrap(call.output, ctx.outputs[call.output])
            with clock("h2d"):
                for static, host in zip(cg.static_inputs, inputs):
                    copies.into(static, host)
            with clock("forward"):
                cg.graph.replay()
            if cg.shape_error:
                self.output_error = cg.shape_error
                continue
            with clock("d2h"):
                copies.to_host(output, cg.static_output, cg.staging)

    def close(self) -> None:
        if self.graphs:
            self.torch.cuda.synchronize(self.device)
        self.graphs = []
        self.module = None


class CudaGraphBackend(Backend):
    name = "cudagraph"
    launches_one_graph = True

    def needs_torchscript(self, spec) -> bool:
        return True

    def unavailable(self, spec=None):
        """"needs a CUDA device: ..." without CUDA; with CUDA, refuses --device cpu.

        A cpu device is refused rather than silently switched to cuda: the spec (and so
        results.json and the variant's label) must say where the run really ran.
        """
        from couplescope.backends.devices import cuda_unavailable_reason

        on_cuda = spec is not None and spec.device.startswith("cuda")
        reason = cuda_unavailable_reason(spec.device if on_cuda else "cuda")
        if reason:
            return reason
        if spec is not None and not on_cuda:
            return (f"needs --device cuda or cuda:N (CUDA Graphs replay on a GPU; this run asks for "
                    f"--device {spec.device})")
        return None

    def open(self, ctx):
        reason = self.unavailable(ctx.spec)  # a spec that skipped validation (library, worker)
        if reason:
            raise UsageError(f"backend 'cudagraph' is unavailable: {reason}")
        if ctx.spec.task == "train":
            from couplescope.backends.cudagraph_training import CudaGraphTraining

            return CudaGraphTraining(ctx)
        return CudaGraphCoupling(ctx)


BACKEND = CudaGraphBackend()
