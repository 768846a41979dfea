"""Online training as a simulation does it, from Python: one optimizer step per call.

A training iteration makes, for each of the workload's calls, what FTorch's example 11
makes per step: `optimizer.zero_grad()`, forward with grad over tensors that wrap the
host's input arrays (no copy, FTorch's strides), the loss from tensor operations against
a tensor over the host's target array, `loss.backward()`, under MPI the gradients
averaged across ranks (`allreduce`), and `optimizer.step()`. Each is a phase. The loss is
read after the timed region (`take_losses`), as a value the simulation would log.

`TorchScriptTraining` is the python host's coupling of the torchscript backend (what a
Python simulation pays); the native host's is couplescope.backends.native_training; the
bridge's built-in module (bridge_module.py) uses `make_optimizer` and `loss_of` too, so
every host minimises the same loss with the same optimizer.
"""

from __future__ import annotations

from couplescope.backends.base import Coupling
from couplescope.protocol.options import FUSED_LOSS_CALLS
from couplescope.backends.host_memory import HostTensors

#: a training step's phases, in the order they happen
TRAIN_PHASES = ("marshal_in", "zero_grad", "forward", "loss", "backward", "allreduce", "step")


def make_optimizer(torch, parameters, name: str, lr: float):
    """libtorch's optimizer of that name over the parameters: SGD (plain, as FTorch's and
    pytorch-fortran's examples) or Adam (torch's defaults, betas 0.9/0.999)."""
    parameters = list(parameters)
    if name == "adam":
        return torch.optim.Adam(parameters, lr=lr)
    return torch.optim.SGD(parameters, lr=lr)


def loss_of(output, target, kind: str, call: str = "ftorch-operators"):
    """The loss. From tensor operations, as FTorch's example 11 writes it in Fortran:
    mean((output - target)**2) for mse, mean(|output - target|) for l1; or, for the train
    calls that make it in one call (FTorch's torch_loss_mse, pytorch-fortran's train),
    torch.nn.functional.mse_loss or l1_loss. It runs inside the timed loss phase: the
    form's test is a tuple lookup, and the fused forms' import finds the loaded module."""
    if call in FUSED_LOSS_CALLS:
        import torch.nn.functional as F

        return F.l1_loss(output, target) if kind == "l1" else F.mse_loss(output, target)
    difference = output - target
    if kind == "l1":
        return difference.abs().mean()
    return (difference ** 2).mean()


def parameter_state(module) -> dict:
    """{name: (weight, grad or None)} as numpy copies: what the checks compare."""
    out = {}
    for name, p in module.named_parameters():
        grad = None if p.grad is None else p.grad.detach().cpu().numpy().copy()
        out[name] = (p.detach().cpu().numpy().copy(), grad)
    return out


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
