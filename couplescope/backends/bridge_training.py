"""Online training through the bridge, as pytorch-fortran's torch_pymodule%train does it.

Each training step the host calls the module's `train(inputs, target)` by name with
no-copy views of its input and target arrays, and reads back the loss: a float, or
`(done, loss)` as pytorch-fortran's `ftn_pytorch_train` returns `(is_completed, loss)`:
a true `done` is honoured as a Fortran caller honours `is_completed`, by calling train no
more (the engine ends the variant's steps there: worker/training_checks.py).
The module does the rest (optimizer, loss, backward, step) in its own Python, which is
why pytorch-fortran offers this path for pipelines TorchScript cannot express. The
module's optional `state()` (its parameters and gradients) lets couplescope check the
first step against eager PyTorch, and `save(path)` keeps the trained model; the built-in
module (bridge_module.py) has both. docs/bridge.md documents the contract.

The python host calls it from the worker's loop (BridgeTraining); the native host from
C++ as forpy does (EmbeddedHost with the loss read back, NativeBridgeTraining).
"""

from __future__ import annotations

from couplescope.backends.bridge_coupling import BridgeCoupling, NativeBridgeCoupling
from couplescope.backends.host_memory import numpy_view
from couplescope.protocol.errors import UsageError

TRAIN_FUNCTION = "train"


def loss_value(result) -> tuple[float, bool]:
    """(loss, done) from what `train` returned: a number, or (done, loss)."""
    if isinstance(result, tuple) and len(result) == 2:
        done, loss = result
        return float(loss), bool(done)
    try:
        return float(result), False
    except (TypeError, ValueError):
        raise TypeError(f"train must return the loss (a float) or (done, loss), not "
                        f"{type(result).__name__}") from None


class TrainingMixin:
    """What both hosts' bridge training couplings share: the function, the losses, the
    `done` the module returned, its optional state() and save()."""

    function = TRAIN_FUNCTION
    _done = False   # a train call said done since the last take_done()

    def take_losses(self) -> float:
        losses, self._losses = self._losses, []
        return sum(losses) / len(losses) if losses else float("nan")

    def take_done(self) -> bool:
        """Whether a train call since the last look returned done = true (read after the
        timed call, with the loss)."""
        done, self._done = self._done, False
        return done

    def state(self):
        getter = getattr(self.module, "state", None)
        return getter() if callable(getter) else None

    def save(self, path: str) -> None:
        saver = getattr(self.module, "save", None)
        if not callable(saver):
            raise UsageError(f"--save-model: bridge module {self.path} has no save(path) function")
        saver(path)


class BridgeTraining(TrainingMixin, BridgeCoupling):
    """The python host: the worker's loop calls train(inputs, target) per call."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.targets = ctx.extra["targets"]
        self._losses: list[float] = []

    def call(self) -> None:
        ctx, clock, layout = self.ctx, self.ctx.clock, self.ctx.spec.layout
        if ctx.spec.reload_every_call:
            with clock("load"):
                self.load()
        train = getattr(self.module, TRAIN_FUNCTION)
        for call in ctx.calls:
            with clock("marshal_in"):
                inputs = tuple(numpy_view(ctx.arrays[n], layout) for n in call.inputs)
                target = numpy_view(self.targets[call.output], layout)
            loss, done = loss_value(train(inputs, target))
            self._losses.append(loss)
            self._done = self._done or done


class NativeBridgeTraining(TrainingMixin, NativeBridgeCoupling):
    """The native host: EmbeddedHost calls train by name with views of the input and
    target arrays, and reads the loss the function returned."""

    returns_loss = True

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.targets = ctx.extra["targets"]
        self._losses: list[float] = []

    def host_calls(self):
        from couplescope.backends.native.host_arrays import host_array

        layout = self.ctx.spec.layout
        return [self.native.Call([host_array(self.native, self.ctx.arrays[n], layout) for n in c.inputs],
                                 host_array(self.native, self.targets[c.output], layout))
                for c in self.ctx.calls]

    def call(self) -> float:
        whole = super().call()
        self._losses.extend(self.host.losses())
        self._done = self._done or self.host.said_done()
        return whole

