"""Online training as a simulation does it, from Python: one optimizer step per call.

A training iteration makes, for each of the workload's calls, what FTorch's example 11
makes per step: `optimizer.zero_grad()`, forward with grad over tensors that wrap the
host's input arrays (no copy, FTorch's strides), the loss from tensor operations against
a tensor over the host's target array, `loss.backward()`, under MPI the gradients
averaged across ranks (`allreduce`), and `optimizer.step()`. Each is a phase. The loss is
read after the timed region (`take_losses`), as a value the simulation would log.

`TorchScriptTraining` is the python host's coupling of the torchscript backend (what a
Python simulation pays); the native host's is couplescope.backends.native.train_host.
The step's shared pieces (optimizer, loss, phases) are couplescope.backends.training_step.
"""

from __future__ import annotations

from couplescope.backends.base import Coupling
from couplescope.backends.host_memory import HostTensors
from couplescope.backends.training_step import TRAIN_PHASES, loss_of, make_optimizer, parameter_state  # noqa: F401


class TorchScriptTraining(Coupling):
    """The python host's training step over the TorchScript file (torch.jit.load,
    train(), the module's parameters into the optimizer)."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        import torch

        self.torch = torch
        self.targets = ctx.extra["targets"]
        self.wrap = HostTensors({**ctx.arrays, **self.targets}, ctx.spec.layout)
        self.device = ctx.device
        self.allreduce = ctx.extra.get("allreduce")
        self.module = self.optimizer = None
        self._losses: list = []

    def load(self) -> None:
        torch, spec = self.torch, self.ctx.spec
        self.module = torch.jit.load(self.ctx.torchscript_path, map_location=self.device)
        self.module.train()
        self.parameters = list(self.module.parameters())
        self.optimizer = make_optimizer(torch, self.parameters, self.ctx.extra["optimizer"],
                                        self.ctx.extra["lr"])

    def call(self) -> None:
        ctx, clock, wrap = self.ctx, self.ctx.clock, self.wrap
        on_device = self.device != "cpu"
        for call in ctx.calls:
            with clock("marshal_in"):
                inputs = [wrap(n, ctx.arrays[n]) for n in call.inputs]
                target = wrap(call.output, self.targets[call.output])
            if on_device:
                with clock("h2d"):
                    inputs = [t.to(self.device) for t in inputs]
                    target = target.to(self.device)
            with clock("zero_grad"):
                self.optimizer.zero_grad()
            with clock("forward"):
                output = self.module(*inputs)
            with clock("loss"):
                loss = loss_of(output, target, ctx.spec.loss, ctx.spec.train_call)
            with clock("backward"):
                loss.backward()
            if self.allreduce is not None:
                with clock("allreduce"):
                    self.allreduce(self.parameters)
            with clock("step"):
                self.optimizer.step()
            self._losses.append(loss.detach())

    def take_losses(self) -> float:
        """The iteration's loss (the mean over its calls' steps), read after the timed call."""
        losses, self._losses = self._losses, []
        return sum(float(v) for v in losses) / len(losses) if losses else float("nan")

    def state(self) -> dict:
        return parameter_state(self.module)

    def save(self, path: str) -> None:
        self.module.save(path)
