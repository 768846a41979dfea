"""A whole training step captured into one CUDA Graph and replayed every step (GPU only).

PyTorch's pattern for whole-network capture (CUDA semantics notes, "Whole-network
capture"): static input and target buffers on the device; a few eager steps on a side
stream that waits for the current stream (so lazy initialisation, the optimizer's state
and the TorchScript executor's specialisation never happen inside the capture); then
`optimizer.zero_grad(set_to_none=True)` and, inside `torch.cuda.graph`, forward, the
loss, `backward()` and `optimizer.step()`. Adam is made with `capturable=True`, which
keeps its step count on the device so a replay can advance it; SGD needs nothing.

The warm-up steps train the model, so the weights before them are kept and copied back
after the capture, and Adam's state is zeroed: the first replayed step is then the
variant's first step, which the engine checks against eager PyTorch. Every step copies
the host's input and target into the static buffers (h2d) and replays the graph (the
`replay` phase: zero_grad to step, which a graph cannot split); the loss is read from its
static buffer after the timed region.

Each workload call gets its own graph (cgdrag's two calls are two optimizer steps, as on
every host).
"""

from __future__ import annotations

from couplescope.backends.base import Coupling
from couplescope.backends.cudagraph_capture import WARMUP_RUNS, capture_failure
from couplescope.backends.host_memory import HostTensors
from couplescope.backends.training_step import loss_of, parameter_state


class CudaGraphTraining(Coupling):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        import torch

        from couplescope.backends.transfer import DeviceCopies

        self.torch = torch
        self.device = torch.device(ctx.device)
        self.targets = ctx.extra["targets"]
        self.wrap = HostTensors({**ctx.arrays, **self.targets}, ctx.spec.layout)
        self.copies = DeviceCopies(ctx.device, ctx.spec.pinned)
        self.model_name = getattr(ctx.workload, "name", "") or ctx.spec.model
        self.graphs: list = []
        self._losses: list = []

    def load(self) -> None:
        torch, ctx = self.torch, self.ctx
        self.graphs = []
        self.module = torch.jit.load(ctx.torchscript_path, map_location=self.device)
        self.module.train()
        parameters = list(self.module.parameters())
        kind = ctx.extra["optimizer"]
        if kind == "adam":
            self.optimizer = torch.optim.Adam(parameters, lr=ctx.extra["lr"], capturable=True)
        else:
            self.optimizer = torch.optim.SGD(parameters, lr=ctx.extra["lr"])
        before = [p.detach().clone() for p in parameters]
        for call in ctx.calls:
            self.graphs.append(self.capture(call))
        with torch.no_grad():   # undo the warm-up's training: the first replay is step 1
            for p, saved in zip(parameters, before):
                p.copy_(saved)
            for state in self.optimizer.state.values():
                for value in state.values():
                    if isinstance(value, torch.Tensor):
                        value.zero_()

    def capture(self, call) -> dict:
        torch, ctx = self.torch, self.ctx
        static_inputs = []
        for name in call.inputs:
            host = self.wrap(name, ctx.arrays[name])
            static = self.copies.empty_like_host(host)
            static.copy_(host)
            static_inputs.append(static)
        host_target = self.wrap(call.output, self.targets[call.output])
        static_target = self.copies.empty_like_host(host_target)
        static_target.copy_(host_target)
        current = torch.cuda.current_stream(self.device)
        side = torch.cuda.Stream(device=self.device)
        side.wait_stream(current)
        with torch.cuda.stream(side):
            for _ in range(WARMUP_RUNS):
                self.optimizer.zero_grad(set_to_none=True)
                loss = loss_of(self.module(*static_inputs), static_target, ctx.spec.loss, ctx.spec.train_call)
                loss.backward()
                self.optimizer.step()
        current.wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        self.optimizer.zero_grad(set_to_none=True)
        try:
            with torch.cuda.graph(graph, stream=side):
                static_loss = loss_of(self.module(*static_inputs), static_target, ctx.spec.loss, ctx.spec.train_call)
                static_loss.backward()
                self.optimizer.step()
        except Exception as exc:
            raise capture_failure(self.model_name, exc) from exc
        return {"call": call, "graph": graph, "inputs": static_inputs, "target": static_target,
                "loss": static_loss}

    def call(self) -> None:
        ctx, clock, copies = self.ctx, self.ctx.clock, self.copies
        for g in self.graphs:
            call = g["call"]
            with clock("marshal_in"):
                inputs = [self.wrap(n, ctx.arrays[n]) for n in call.inputs]
                target = self.wrap(call.output, self.targets[call.output])
            with clock("h2d"):
                for static, host in zip(g["inputs"], inputs):
                    copies.into(static, host)
                copies.into(g["target"], target)
            with clock("replay"):
                g["graph"].replay()
            self._losses.append(g["loss"].detach().clone())

    def keep_for_probe(self):
        """A replay writes the weights, their gradients and the optimizer's state inside
        the graph, unseen by the dispatcher: they are copied, and copied back in place (the
        graph holds their addresses)."""
        torch = self.torch
        kept = [p for p in self.module.parameters()]
        kept += [p.grad for p in self.module.parameters() if p.grad is not None]
        for state in self.optimizer.state.values():
            kept += [v for v in state.values() if isinstance(v, torch.Tensor)]
        copies = [t.detach().clone() for t in kept]

        def put_back():
            with torch.no_grad():
                for tensor, copy in zip(kept, copies):
                    tensor.copy_(copy)
        return put_back

    def take_losses(self) -> float:
        losses, self._losses = self._losses, []
        return sum(float(v) for v in losses) / len(losses) if losses else float("nan")

    def state(self) -> dict:
        self.torch.cuda.synchronize(self.device)
        return parameter_state(self.module)

    def save(self, path: str) -> None:
        self.module.save(path)

    def close(self) -> None:
        if self.graphs:
            self.torch.cuda.synchronize(self.device)
        self.graphs = []
