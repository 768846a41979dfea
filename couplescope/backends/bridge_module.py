"""The bridge module couplescope's built-in models are called through (forpy's side).

It follows the bridge contract (docs/bridge.md) and doubles as its example: the host
imports this file by path, calls `initialize(config)` once and `compute(inputs, output)`
by name every call, with no-copy, Fortran-ordered numpy views of its memory. The phases
are timed with `config["phase"]`, a context manager factory that the host supplies.
Under --task train the host calls `train(inputs, target)` instead, which makes one
optimizer step and returns the loss (pytorch-fortran's `ftn_pytorch_train` contract);
`state()` and `save(path)` let couplescope check the step and keep the trained model.

This file is imported by path, so it must not rely on being part of a package.
"""

from time import perf_counter as _now

import torch

_model = None
_phase = None
_device = "cpu"
_grad = torch.no_grad
_optimizer = None
_loss_kind = "mse"
_train_call = "ftorch-operators"
_allreduce = None


def initialize(config):
    """Build the eager model ("Python runtime"), load the TorchScript file, or build the
    eager model and wrap it in torch.compile ("compiled": it compiles on its first call,
    which the host makes during its load and reports as compile time), once."""
    global _model, _phase, _device, _grad, _optimizer, _loss_kind, _train_call, _allreduce
    _phase = config["phase"]
    _device = config["device"]
    # no_grad, as a forpy module would; inference mode when the run asks for the what-if
    _grad = torch.inference_mode if config.get("grad_mode") == "inference" else torch.no_grad
    if config["threads"]:
        torch.set_num_threads(int(config["threads"]))
    if config["bridge_model"] == "torchscript":
        _model = torch.jit.load(config["torchscript_path"], map_location=_device)
    else:
        from couplescope.workloads import catalogue

        workload = catalogue.load(config["model"])
        _model = workload.build(config["size"], config["dtype"], config["seed"]).to(_device)
        if config["bridge_model"] == "compiled":
            _model = _compiled(workload, _model.eval(), config)
    _model.eval()
    if config.get("task") == "train":
        from couplescope.backends.training_step import make_optimizer

        _model.train()
        _optimizer = make_optimizer(torch, _model.parameters(), config["optimizer"], config["lr"])
        _loss_kind = config["loss"]
        _train_call = config.get("train_call", "ftorch-operators")
        _allreduce = config.get("allreduce")   # data-parallel under MPI: average the gradients


def train(inputs, target):
    """One online-training step, as a forpy module would write it: tensors over the host
    views, zero_grad, forward, the loss, backward, step; returns the loss as a float."""
    from couplescope.backends.training_step import loss_of

    if not _phase.plain:
        return _train_in_blocks(inputs, target, loss_of)
    t0 = _now()
    tensors = [torch.from_numpy(a) for a in inputs]
    wanted = torch.from_numpy(target)
    if _device != "cpu":
        tensors = [t.to(_device) for t in tensors]
        wanted = wanted.to(_device)
    t1 = _now()
    _optimizer.zero_grad()
    t2 = _now()
    output = _model(*tensors)
    t3 = _now()
    loss = loss_of(output, wanted, _loss_kind, _train_call)
    t4 = _now()
    loss.backward()
    t5 = ta = _now()
    if _allreduce is not None:
        _allreduce(_parameters())
        ta = _now()
    _optimizer.step()
    t6 = _now()
    value = loss.item()   # the float the host receives, as ftn_pytorch_train returns it
    t7 = _now()
    for name, a, b in (("marshal_in", t0, t1), ("zero_grad", t1, t2), ("forward", t2, t3),
                       ("loss", t3, t4), ("backward", t4, t5), ("allreduce", t5, ta),
                       ("step", ta, t6), ("marshal_out", t6, t7)):
        if b > a or name != "allreduce":
            _phase.add(name, b - a)
    return value


def _train_in_blocks(inputs, target, loss_of):
    """The same step with a `with` block per phase: profiler ranges, device synchronisation."""
    with _phase("marshal_in"):
        tensors = [torch.from_numpy(a) for a in inputs]
        wanted = torch.from_numpy(target)
    if _device != "cpu":
        with _phase("h2d"):
            tensors = [t.to(_device) for t in tensors]
            wanted = wanted.to(_device)
    with _phase("zero_grad"):
        _optimizer.zero_grad()
    with _phase("forward"):
        output = _model(*tensors)
    with _phase("loss"):
        loss = loss_of(output, wanted, _loss_kind, _train_call)
    with _phase("backward"):
        loss.backward()
    if _allreduce is not None:
        with _phase("allreduce"):
            _allreduce(_parameters())
    with _phase("step"):
        _optimizer.step()
    with _phase("marshal_out"):
        return loss.item()


def _parameters():
    return [p for group in _optimizer.param_groups for p in group["params"]]


def state():
    """{name: (weight, grad)} as numpy copies: what couplescope compares with eager PyTorch."""
    from couplescope.backends.training_step import parameter_state

    return parameter_state(_model)


def save(path):
    """The trained model as TorchScript (pytorch-fortran's save)."""
    model = _model if isinstance(_model, torch.jit.ScriptModule) else torch.jit.script(_model)
    model.save(path)


def _compiled(workload, model, config):
    """torch.compile of the eager model, as a Python simulation would wrap it; a model whose
    forward loops in Python over its input's elements is refused first (Dynamo would unroll
    the loop into the graph, as torch.export does: couplescope.backends.aoti_package)."""
    import numpy as np

    from couplescope.backends.aoti_package import refuse_unrollable

    size, dtype, seed = config["size"], config["dtype"], config["seed"]
    arrays = workload.host_arrays(size, dtype, seed)
    example = [torch.from_numpy(np.ascontiguousarray(arrays[n])).to(_device)
               for n in workload.calls(size)[0].inputs]
    refuse_unrollable(workload.name, model, example)
    return torch.compile(model)


def compute(inputs, output):
    """Convert the host views to tensors, run the model, assign into the host view.

    Timed with perf_counter readings and `add` when the phases are plain intervals: three
    `with` blocks cost about 1.5 us a call (SimpleNet through forpy is about 13 us), which a
    forpy module that does not time itself never pays; with profiling or a GPU, the blocks
    (profiler ranges, device synchronisation)."""
    if not _phase.plain:
        return _compute_in_blocks(inputs, output)
    t0 = _now()
    tensors = [torch.from_numpy(a) for a in inputs]
    t1 = _now()
    with _grad():
        result = _model(*tensors)
    t2 = _now()
    output[...] = result.numpy()  # in place: a rebinding would never reach host memory
    t3 = _now()
    _phase.add("marshal_in", t1 - t0)
    _phase.add("forward", t2 - t1)
    _phase.add("marshal_out", t3 - t2)


def _compute_in_blocks(inputs, output):
    with _phase("marshal_in"):
        tensors = [torch.from_numpy(a) for a in inputs]
    if _device != "cpu":
        with _phase("h2d"):
            tensors = [t.to(_device) for t in tensors]
    with _phase("forward"):
        with _grad():
            result = _model(*tensors)
    if _device != "cpu":
        with _phase("d2h"):
            result = result.cpu()
    with _phase("marshal_out"):
        output[...] = result.numpy()  # in place: a rebinding would never reach host memory
