"""The engine's side of --task train: the data each step reads, and the checks.

A training variant's iteration is one optimizer step per workload call (the coupling
makes it: couplescope.backends.torchscript_training and the native host's TrainHost). Around it, the
engine does what it does for inference, outside the timed region:

- before each step the learning task fills the host's input and target arrays
  (couplescope.workloads.learning_tasks), as a simulation writes its arrays each time step;
- after the variant's first step, the gradients and the updated weights must equal a
  reference step taken in eager PyTorch on the same data (C-ordered copies, so a coupling
  that reads the host memory in the wrong order fails it, as --layout c fails inference);
  the weights alone where the library gives no gradients (pytorch-fortran);
- every step's loss must be finite: the first that is not ends the variant FAILED, naming
  the step (a diverging learning rate);
- under MPI every rank must hold the same weights after each step (the team compares a
  digest of them);
- when the steps are over, the learning task's own check (FTorch's example 11: 1..5 must
  give 5,1,2,3,4), and the trained model is saved if --save-model asked for it.
"""

from __future__ import annotations

import copy
import os
import zlib

import numpy as np

from couplescope.backends.host_memory import flat_memory
from couplescope.protocol import step_words
from couplescope.protocol.errors import UsageError
from couplescope.workloads.base import max_relative_error
from couplescope.workloads.learning_tasks import LossHistory, ModuleRandomTarget, ModuleTargets, RandomTarget

#: the first step's gradients and weights against the eager reference, per dtype: the
#: TorchScript interpreter and eager PyTorch may order a reduction differently, and with
#: a floor of 1e-3 of each tensor's largest value, rounding stays far below these
GRADIENT_RTOL = {"float32": 1e-4, "float64": 1e-9, "float16": 2e-2}
GRADIENT_FLOOR = 1e-3


class LossNotFinite(Exception):
    """A step's loss was NaN or infinite: the variant ends FAILED at that step."""


class TrainingComplete(Exception):
    """A bridge module's train call returned done = true (pytorch-fortran's is_completed):
    no step is made after it, as a Fortran caller stops calling train, and the variant
    finishes (its checks, its saved model) with the steps made."""


class Training:
    """What the engine needs to train one variant: data, reference, checks, history."""

    def __init__(self, spec, workload, size: int, dtype: str, eager, arrays: dict,
                 outputs: dict, expected: dict, calls: list, rank: int = 0, allreduce=None) -> None:
        if workload.untrainable:
            raise UsageError(f"--task train --model {workload.name}: {workload.untrainable}")
        self.spec, self.dtype, self.calls = spec, dtype, calls
        self.optimizer = spec.optimizer or workload.train_optimizer
        self.lr = spec.lr if spec.lr is not None else workload.train_lr
        from couplescope.workloads import catalogue

        user_file = catalogue.is_user_model(spec.model)
        # each rank of a data-parallel run learns from data of its own
        seed = spec.seed if rank == 0 else int(np.random.SeedSequence([spec.seed, rank]).generate_state(1)[0])
        if user_file and catalogue.kind(spec.model) == "bridge-module":
            maker = getattr(eager, "make_targets", None)   # a user's bridge module may define it
            self.task = ModuleTargets(maker, calls) if callable(maker) else ModuleRandomTarget(seed)
        elif user_file:
            self.task = RandomTarget(seed)
        else:
            self.task = workload.learning_task(size, dtype, seed, expected)
        #: the steps the learning task needs before its check is judged (None: any number)
        self.steps_needed = None if user_file else workload.train_steps
        self.arrays = arrays
        self.targets = self.task.targets(arrays, outputs)
        self.initial = initial_model(eager)
        self.tolerance = GRADIENT_RTOL.get(dtype, 1e-4)
        self.losses = LossHistory()
        #: the steps judged so far by kind (timed, warmup, profiled): every one trains the
        #: model and counts for its learning task (protocol.step_words)
        self.made: dict[str, int] = {}
        #: the team's gradient averaging (MPI): the reference step averages as the ranks do
        self.allreduce = allreduce
        #: the step whose train call first said training is complete ({"kind", "index"})
        self.done_at: dict | None = None
        #: whether done ends the steps: one process, yes; ranks that step together go on
        #: (one rank's module saying done cannot stop the others' collectives)
        self.honours_done = True
        self.steps = 0             # steps filled so far (the next fill is step steps + 1)
        #: steps filled ahead for a native batch that ended before making them: each one's
        #: data, {host array key: its bytes}, which the next fills give back (`unfill`)
        self._ahead: list[dict] = []
        self._batch_rows: dict = {}   # the last fill_rows' rows, {key: rows of bytes}
        self.first_data = None     # step 1's inputs and targets, for the reference step
        self.gradient_check: dict | None = None

    # -- data, before each step (outside the timed region) ------------------------------------
    def fill_next(self) -> None:
        self.steps += 1
        if self._ahead:   # a step filled before and not made: the same data again
            fed = self._fed_arrays()
            for key, row in self._ahead.pop(0).items():
                flat_memory(fed[key]).view(np.uint8)[...] = row
        else:
            self.task.fill(self.steps, self.arrays, self.targets)
        if self.steps == 1:
            self.first_data = ({n: a.copy() for n, a in self.arrays.items()},
                               {n: t.copy() for n, t in self.targets.items()})

    def unfill(self, count: int) -> None:
        """The last `count` steps filled ahead (a native batch) were not made: the next fills
        give their numbers the very data they had. A task draws its data from a generator
        that has moved on, so filling them anew would give those steps other data than one
        fill per step gives, and a run's training would depend on where its batches ended
        (their time budget)."""
        self.steps -= count
        if count and self._batch_rows:
            made = len(next(iter(self._batch_rows.values()))) - count
            self._ahead[:0] = [{key: rows[i].copy() for key, rows in self._batch_rows.items()}
                               for i in range(made, made + count)]
        self._batch_rows = {}

    def _fed_arrays(self) -> dict:
        """The host arrays a step's data is written into, by the keys of `fill_rows`."""
        return {**{f"in:{n}": a for n, a in self.arrays.items()},
                **{f"target:{n}": t for n, t in self.targets.items()}}

    def fill_rows(self, count: int) -> dict:
        """The next `count` steps' data as rows of bytes per host array (a native batch
        copies row i into the host arrays before step i): {name: (array, rows)}. Only the
        arrays the task changes; nothing when its data stays."""
        self._batch_rows = {}
        if not self.task.fresh_data:
            for _ in range(count):
                self.fill_next()
            return {}
        rows = {key: (a, np.empty((count, a.nbytes), dtype=np.uint8)) for key, a in self._fed_arrays().items()}
        for i in range(count):
            self.fill_next()
            for array, buffer in rows.values():
                buffer[i] = flat_memory(array).view(np.uint8)
        self._batch_rows = {key: buffer for key, (_, buffer) in rows.items()}
        return rows

    def said_done(self, kind: str, index: int) -> None:
        """The module's train call at this step said training is complete: recorded, and
        honoured (TrainingComplete) unless the steps are a team's."""
        if self.done_at is None:
            self.done_at = {"kind": kind, "index": index}
        if self.honours_done:
            raise TrainingComplete(f"{kind} step {index}")

    # -- checks, after each step --------------------------------------------------------
    def judge(self, loss: float, kind: str, index: int, coupling) -> tuple[float, bool, str | None]:
        """(max_rel_error, passed, error) of a step: the gradient check on the variant's
        first step, a finite loss on every step."""
        self.losses.add(loss)
        self.made[kind] = self.made.get(kind, 0) + 1
        err, passed, error = 0.0, True, None
        if self.gradient_check is None:
            self.gradient_check = self.check_first_step(coupling)
            check = self.gradient_check
            if check["passed"] is not None:   # None: not made, which fails nothing
                err, passed = check["max_rel_error"], check["passed"]
            if passed is False:
                error = check["message"]
        if not np.isfinite(loss):
            return float("inf"), False, f"the loss is {loss} at {kind} step {index}: training diverged"
        return err, passed, error

    def check_first_step(self, coupling) -> dict:
        """The coupling's gradients and weights after its first step against the same
        step(s) taken in eager PyTorch on the same data."""
        state = coupling.state() if hasattr(coupling, "state") else None
        if self.initial is None:   # a user's bridge module: couplescope has no model of it
            return {"check": "gradients", "passed": None, "max_rel_error": None, "tolerance": self.tolerance,
                    "message": "not made: it needs a reference, the same first step taken in eager "
                               "PyTorch on the module's model, and couplescope has no model of a "
                               "user's module (docs/bridge.md)"}
        if state is None:
            return {"check": "gradients", "passed": None, "max_rel_error": None, "tolerance": self.tolerance,
                    "message": "not made: the coupling does not expose its parameters"}
        reference = reference_step(self.initial, self.first_data, self.calls, self.spec,
                                   self.optimizer, self.lr, self.allreduce)
        # a coupling whose library has no call that reads a gradient (pytorch-fortran's
        # torch_module) says why; its updated weights are compared alone
        no_gradients = getattr(coupling, "no_gradients", None)
        compared = "weights" if no_gradients else "gradients and weights"
        worst, where = 0.0, "every tensor"
        for name, (weight, grad) in reference.items():
            if name not in state:
                return {"check": "gradients", "passed": False, "max_rel_error": float("inf"),
                        "tolerance": self.tolerance, "message": f"parameter {name} is missing"}
            got_weight, got_grad = state[name]
            for what, got, want in (("gradient", got_grad, grad), ("weight", got_weight, weight)):
                if want is None or (got is None and what == "gradient" and no_gradients):
                    continue
                if got is None:
                    return {"check": "gradients", "passed": False, "max_rel_error": float("inf"),
                            "tolerance": self.tolerance, "message": f"{name} has no {what}"}
                floor = GRADIENT_FLOOR * float(np.max(np.abs(want))) if want.size else 0.0
                err = max_relative_error(got, want, floor)
                if not np.isfinite(err) or err > worst:
                    worst, where = err, f"{what} of {name}"
                if not np.isfinite(err):
                    break
        passed = bool(np.isfinite(worst) and worst <= self.tolerance)
        message = ((f"the first step's {compared} equal eager PyTorch's exactly" if worst == 0
                    else f"the first step's {compared} equal eager PyTorch's (worst: {where}, "
                         f"{worst:.4E})") if passed else
                   f"the first step's {where} differs from eager PyTorch's by {worst:.4E} "
                   f"(tolerance {self.tolerance:g})")
        if no_gradients:
            message += f"; gradients not compared: {no_gradients}"
        return {"check": "gradients", "passed": passed, "max_rel_error": worst,
                "tolerance": self.tolerance, "message": message}

    # -- at the end --------------------------------------------------------------------
    def finish(self, coupling) -> dict:
        """The learning task's check and the summary results.json keeps under "training"."""
        final = self.not_judged()
        if final is None:
            predict = self.predictor(coupling)
            final = self.task.final_check(predict, self.losses) if predict is not None or \
                isinstance(self.task, RandomTarget) else self.losses.well_below()
        saved = self.save(coupling)
        return {"task": self.task.name, "optimizer": self.optimizer, "lr": self.lr,
                "loss": self.spec.loss, "train_call": self.spec.train_call, "steps": self.losses.steps,
                "gradient_check": self.gradient_check, "final_check": final,
                **({"done_at": {**self.done_at, "honoured": self.honours_done}} if self.done_at else {}),
                **({"saved_model": saved} if saved else {})}

    def not_judged(self) -> dict | None:
        """The final check's result when fewer steps were made than the learning task
        needs (`--iterations 10` of SimpleNet's 10 000): not judged, and what to do about
        it, rather than FAILED for steps the user never asked to be enough."""
        needed, made = self.steps_needed, self.losses.steps
        if not needed or made >= needed:
            return None
        return {"check": "learning task", "passed": None, "max_rel_error": None, "tolerance": None,
                "steps_needed": needed,
                "message": f"{step_words.not_judged(self.made, needed)}; use --iterations {needed}"}

    def predictor(self, coupling):
        """A function running the trained model (the coupling's weights in a copy of the
        eager model), or None when the coupling does not expose its weights."""
        state = coupling.state() if hasattr(coupling, "state") else None
        if state is None or self.initial is None:
            return None
        import torch

        model = model_copy(self.initial)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name in state:
                    p.copy_(torch.from_numpy(np.ascontiguousarray(state[name][0])))

        def predict(*inputs):
            with torch.no_grad():
                tensors = [torch.from_numpy(np.ascontiguousarray(x)).to(next(model.parameters()).dtype)
                           for x in inputs]
                return model(*tensors).numpy()
        return predict

    def save(self, coupling) -> str | None:
        path = self.spec.save_model
        if not path:
            return None
        if not hasattr(coupling, "save"):
            raise UsageError(f"--save-model: the {self.spec.backend} coupling cannot save its model")
        path = os.path.abspath(os.path.expanduser(path))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        coupling.save(path)
        return path

    def weights_digest(self, coupling) -> int:
        """A CRC of every weight's bytes: equal on every rank after each step, or the ranks
        diverged (the MPI check)."""
        state = coupling.state()
        digest = 0
        for name in sorted(state):
            digest = zlib.crc32(np.ascontiguousarray(state[name][0]).tobytes(), digest)
        return digest


def initial_model(eager):
    """A copy of the model before any step, in train mode, for the reference step and the
    final check; None for a user's bridge module (couplescope has no model of it)."""
    import torch

    if not isinstance(eager, torch.nn.Module):
        return None
    return model_copy(eager).train()


def model_copy(module):
    """A deep copy of a model whose parameters are leaves, as the original's are. A
    TorchScript module (a user's .pt) is copied by torch.jit's ScriptModule.__deepcopy__,
    which copies the C++ module and clones each tensor under the grad mode it runs in:
    with grad on, every copied parameter is the output of a CloneBackward node, not a
    leaf, and an optimizer over them refuses it ("can't optimize a non-leaf Tensor"),
    though the file's own parameters are leaves (FTorch-benchmarks' cgdrag file failed so
    on both hosts). Copied under no_grad, the clones are leaves; they take the originals'
    requires_grad back."""
    import torch

    with torch.no_grad():
        copied = copy.deepcopy(module)
    for original, clone in zip(module.parameters(), copied.parameters()):
        clone.requires_grad_(original.requires_grad)
    return copied


def reference_step(initial, data, calls, spec, optimizer_name: str, lr: float, allreduce=None) -> dict:
    """The first iteration's steps in eager PyTorch: {name: (weight after, grad)}. Under MPI
    every rank takes it on its own data at the same moment, and the gradients are averaged
    across the ranks as the coupling's are (`allreduce`, a collective)."""
    import torch

    from couplescope.backends.training_step import loss_of, make_optimizer

    inputs, targets = data
    model = model_copy(initial).train()
    optimizer = make_optimizer(torch, model.parameters(), optimizer_name, lr)
    torch.manual_seed(spec.seed)
    for call in calls:
        optimizer.zero_grad()
        tensors = [torch.from_numpy(np.ascontiguousarray(inputs[n])) for n in call.inputs]
        output = model(*tensors)
        loss = loss_of(output, torch.from_numpy(np.ascontiguousarray(targets[call.output])), spec.loss, spec.train_call)
        loss.backward()
        if allreduce is not None:
            allreduce(list(model.parameters()))
        optimizer.step()
    return {name: (p.detach().numpy().copy(), None if p.grad is None else p.grad.detach().numpy().copy())
            for name, p in model.named_parameters()}
