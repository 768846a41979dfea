"""The bridge module couplescope's built-in models are called through (forpy's side).

It follows the bridge contract (docs/bridge.md) and doubles as its example: the host
imports this file by path, calls `initialize(config)` once and `compute(inputs, output)`
by name every call, with no-copy, Fortran-ordered numpy views of its memory. The phases
are timed with `config["phase"]`, a context manager factory that the host supplies.

This file is imported by path, so it must not rely on being part of a package.
"""

from time import perf_counter as _now

import torch

_model = None
_phase = None
_device = "cpu"
_grad = torch.no_grad


def initialize(config):
    """Build the eager model ("Python runtime"), load the TorchScript file, or build the
    eager model and wrap it in torch.compile ("compiled": it compiles on its first call,
    which the host makes during its load and reports as compile time), once."""
    global _model, _phase, _device, _grad
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
