"""The operator-count probe: one iteration under a TorchDispatchMode, a training step undone.

Before the profiled window (couplescope.worker.profiling) one unrecorded, unreported
iteration counts the operators an iteration dispatches, stopping at the budget. For
--task train that iteration is an optimizer step: left in place, the model would be trained
by a step no event reports (a run saying "34 steps" would have made 35), and a probe
stopped at the budget would leave a half-made step (some weights updated, others not).
So the probe undoes what it did, whatever host makes the calls:

- every storage an operator writes in place (weights, gradients, optimizer state: what a
  step changes, from Python or from the native host's C++ alike, since both dispatch
  through the same dispatcher) is copied the first time it is written, and written back
  after the probe;
- the random generators' state (dropout) is put back;
- the step's data is not drawn: a training probe runs on the arrays as the last step
  left them, so the next step reads the data it would have read without the probe;
- its loss (and a bridge module's `done`) is read and dropped.

What a step changes unseen by the dispatcher (a CUDA graph's replay, the step count
libtorch's C++ Adam keeps as an integer) the coupling keeps itself:
`Coupling.keep_for_probe()`. Gradients are left as the probe made them: every step starts
with zero_grad. What a user's bridge module keeps
outside tensors (a Python step counter) the probe cannot undo; docs/profiling.md says so.
"""

from __future__ import annotations


class _OverBudget(Exception):
    pass


def count_operators(prepared, limit: int) -> int | None:
    """Operators one iteration dispatches, counted up to limit + 1 (then the probe stops).

    Runs one unrecorded, unreported iteration under a TorchDispatchMode; it sees the ops
    TorchScript and the native host run too. A training step's effects are undone (above).
    None when the probe itself could not run (then no budget applies).
    """
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    training = prepared.training is not None
    kept = _Kept(torch)

    class Counter(TorchDispatchMode):
        count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.count += 1
            if self.count > limit:
                raise _OverBudget()
            if training:
                kept.before_write(func, args, kwargs or {})
            return func(*args, **(kwargs or {}))

    counter = Counter()
    if training:
        put_back = prepared.coupling.keep_for_probe()
        rng = _random_state(torch)
        prepared.coupling.output_error = None
    else:
        prepared.poison_outputs()
    prepared.clock.reset()
    try:
        with counter:
            prepared.coupling.call()
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception:
        if counter.count <= limit:   # the model failed on its own: no estimate
            return None
    finally:
        prepared.clock.reset()
        if training:
            kept.restore()
            if put_back is not None:
                put_back()
            _set_random_state(torch, rng)
            _drop_step_results(prepared.coupling)
    return counter.count


class _Kept:
    """Copies of the storages written in place, taken before their first write."""

    def __init__(self, torch) -> None:
        self.torch = torch
        self.saved: dict = {}   # storage's (device, address) -> (storage, its copy)

    def keep(self, tensor) -> None:
        storage = tensor.untyped_storage()
        key = (str(storage.device), storage.data_ptr())
        if key not in self.saved and storage.nbytes():
            self.saved[key] = (storage, storage.clone())

    def before_write(self, func, args, kwargs) -> None:
        """Keep every tensor the operator's schema marks as written (`Tensor(a!)`)."""
        for position, argument in enumerate(func._schema.arguments):
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            if argument.name in kwargs:
                value = kwargs[argument.name]
            elif position < len(args) and not argument.kwarg_only:
                value = args[position]
            else:
                continue
            for tensor in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(tensor, self.torch.Tensor):
                    self.keep(tensor)

    def restore(self) -> None:
        with self.torch.no_grad():
            for storage, copy in self.saved.values():
                storage.copy_(copy)
        self.saved.clear()


def _random_state(torch):
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def _set_random_state(torch, state) -> None:
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


def _drop_step_results(coupling) -> None:
    """The probe step's loss and `done` are read and dropped: no step reports them."""
    coupling.take_losses()
    take_done = getattr(coupling, "take_done", None)
    if take_done is not None:
        take_done()
