"""One training step's shared pieces: its phases, the optimizer, the loss, the state checked.

Every host's and backend's training coupling makes the same step (FTorch's example 11:
zero_grad, forward with grad, loss, backward, step); the ones written in Python take
these from here (couplescope.backends.torchscript_training, the bridge's built-in module
bridge_module.py, cudagraph_training), so every host minimises the same loss with the
same optimizer. The native host makes the same in C++ (native/train_host.cpp).
"""


from __future__ import annotations

from couplescope.protocol.options import FUSED_LOSS_CALLS

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


