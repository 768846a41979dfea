"""What a model learns under --task train: the data a simulation feeds each step, the
target, and the check that it learnt.

FTorch's example 11 trains SimpleNet online: every step the host fills its input array
with new random numbers and its target array with the input shifted by one place, and
after 10 000 steps of SGD the model must map 1..5 to 5,1,2,3,4 within rtol 1e-3. That is
SimpleNet's task here (models/simplenet.py). A model without a task of its own gets
`SyntheticTarget`: its host inputs stay as built and it learns a fixed target (half of
its own first output), which it must end well below its first loss on. Tasks fill the
host arrays in place, in the host's own layout, as a simulation writes its arrays; the
engine calls `fill` between steps, never inside a timed one.

Imports numpy only; `final_check` receives a function that runs the trained model.
"""

from __future__ import annotations

import numpy as np

#: "well below the first loss": the last steps' mean loss must be at most this fraction
#: of the first steps' mean loss
LEARNT_FRACTION = 0.5
#: how many steps each end of the run averages (a single step's loss is noisy when the
#: data changes every step)
ENDS = 5


class LearningTask:
    """The learning task of a workload at a size. Subclasses fill the data and judge."""

    name = "task"
    #: the host fills new data before every step (False: the arrays keep their values)
    fresh_data = False

    def targets(self, arrays: dict, outputs: dict) -> dict:
        """The target host arrays, one per call's output, shaped and laid out as it."""
        raise NotImplementedError

    def fill(self, step: int, arrays: dict, targets: dict) -> None:
        """Write step `step`'s inputs and targets into the host arrays, in place."""

    def final_check(self, predict, losses: "LossHistory") -> dict:
        """{"check", "passed", "max_rel_error" (or None), "tolerance", "message"} once the
        steps are over; `predict(arrays) -> outputs` runs the trained model."""
        return losses.well_below()


class LossHistory:
    """The first and last few losses of a run, and how many steps: all the final check
    needs (every step's loss is in the events; the worker keeps no list of them)."""

    def __init__(self) -> None:
        self.first: list[float] = []
        self.last: list[float] = []
        self.steps = 0

    def add(self, loss: float) -> None:
        self.steps += 1
        if len(self.first) < ENDS:
            self.first.append(loss)
        self.last.append(loss)
        if len(self.last) > ENDS:
            self.last.pop(0)

    def went_down(self) -> dict:
        """The check that needs no model and no reference (a user's own module): the last
        steps' mean loss below the first steps'. How far it must fall is the module's own
        business, so any fall passes; a loss that stayed or rose fails."""
        if self.steps < 2 * ENDS:
            return {"check": "loss went down", "passed": None, "max_rel_error": None, "tolerance": None,
                    "message": f"not judged: {self.steps} steps (the check compares the first "
                               f"{ENDS} with the last {ENDS})"}
        first, last = float(np.mean(self.first)), float(np.mean(self.last))
        passed = bool(np.isfinite(first) and np.isfinite(last) and last < first)
        return {"check": "loss went down", "passed": passed, "max_rel_error": None, "tolerance": None,
                "first_loss": first, "last_loss": last,
                "message": f"mean loss of the last {ENDS} steps {last:.4E}, of the first {ENDS} "
                           f"{first:.4E} ({'lower' if passed else 'not lower'})"}

    def well_below(self) -> dict:
        """The generic check: the last steps' mean loss at most LEARNT_FRACTION of the first's."""
        if self.steps < 2 * ENDS:
            return {"check": "loss decreased", "passed": None, "max_rel_error": None,
                    "tolerance": LEARNT_FRACTION,
                    "message": f"not judged: {self.steps} steps (the check compares the first "
                               f"{ENDS} with the last {ENDS})"}
        first, last = float(np.mean(self.first)), float(np.mean(self.last))
        ratio = last / first if first > 0 else (0.0 if last == 0 else float("inf"))
        passed = bool(np.isfinite(ratio) and ratio <= LEARNT_FRACTION)
        return {"check": "loss decreased", "passed": passed, "max_rel_error": None,
                "tolerance": LEARNT_FRACTION, "first_loss": first, "last_loss": last,
                "message": f"mean loss of the last {ENDS} steps {last:.4E} is {ratio:.3g} of the "
                           f"first {ENDS} steps' {first:.4E} (at most {LEARNT_FRACTION:g} passes)"}


class SyntheticTarget(LearningTask):
    """Fixed inputs, fixed target: the model's own first output with its spread over the
    batch made half as large again (y + 0.5 (y - mean over the batch)), a target every model
    with weights can reach by scaling its last layer. The spread, not the output itself:
    cgdrag's outputs are a fixed offset (its un-standardising means, a buffer no step can
    change) plus drag of 1e-6, and only the latter can be learnt. An output of one row
    has no spread: its target is half of it."""

    name = "fixed synthetic target (the first output's spread made 1.5 times as large)"

    def __init__(self, expected: dict) -> None:
        self.expected = expected

    def targets(self, arrays, outputs):
        out = {}
        for name, array in outputs.items():
            y = np.asarray(self.expected[name], dtype=np.float64)
            if y.ndim >= 2 and y.shape[0] > 1:
                target = y + 0.5 * (y - y.mean(axis=0, keepdims=True))
            else:
                target = 0.5 * y
            out[name] = np.asfortranarray(target).astype(array.dtype, copy=False)
        return out


class RandomTarget(LearningTask):
    """A user's TorchScript file: a fixed random target of its output's shape. No learning
    task is judged (couplescope does not know what the model should learn); the gradient
    check and finite losses are."""

    name = "fixed random target"

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def targets(self, arrays, outputs):
        rng = np.random.default_rng([self.seed, 7])
        return {name: np.asfortranarray(rng.uniform(-1, 1, out.shape)).astype(out.dtype, copy=False)
                for name, out in outputs.items()}

    def final_check(self, predict, losses):
        return {"check": "none", "passed": None, "max_rel_error": None, "tolerance": None,
                "message": "a user's model has no learning task: its gradients and finite losses "
                           "are checked"}


class ModuleRandomTarget(RandomTarget):
    """A user's bridge module without make_targets(inputs): a fixed random target of its
    output's shape (the shape reference(inputs) gives, or, for a module without one, as
    pytorch-fortran's modules are, the shape of its first input). Judged by what needs no
    reference: finite losses and the loss going down."""

    def final_check(self, predict, losses):
        return losses.went_down()


class ModuleTargets(LearningTask):
    """A user's bridge module that defines make_targets(inputs): its targets, fixed (its
    inputs stay as made). Judged by what needs no reference: finite losses and the loss
    going down (the module's task is its own)."""

    name = "the module's make_targets(inputs)"

    def __init__(self, make_targets, calls) -> None:
        self.make_targets = make_targets
        self.calls = calls

    def targets(self, arrays, outputs):
        out = {}
        for call in self.calls:
            made = np.asarray(self.make_targets(tuple(arrays[n] for n in call.inputs)))
            want = outputs[call.output]
            if made.shape != want.shape:
                from couplescope.protocol.errors import UsageError

                raise UsageError(f"make_targets returned shape {made.shape}; the output (and so the "
                                 f"target) is {want.shape}")
            out[call.output] = np.asfortranarray(made).astype(want.dtype, copy=False)
        return out

    def final_check(self, predict, losses):
        return losses.went_down()

