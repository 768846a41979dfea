"""The measured loop of one variant, run inside the worker (one process, or each MPI rank).

Order of work: set threads, report where we run, build the workload's host arrays and
eager model, compute the expected output, save the TorchScript form when the coupling
needs it, open the backend's coupling, time the model load (a compile on the first load,
aoti's or torch.compile's, is reported on its own), then warm-up, timed and profiled
iterations. Only the coupling's call sits inside the timed region; the output
reset, the check and the event writing happen between iterations. Profiled iterations
come after the timed ones and are never mixed into the statistics (the profiler
perturbs what it measures).

The measured loop itself is couplescope.worker.measure, which the profiled window
(couplescope.worker.profiling) shares. The loop is the same whatever the backend: the backend's Team (couplescope.backends.base)
says how many processes measure together, how their events leave and where they stop
together; its Coupling makes the calls.
"""

from __future__ import annotations

import inspect
import os
import tempfile
from time import perf_counter

import numpy as np

from couplescope.backends import hosts
from couplescope.backends.base import CouplingContext, Team, first_line
from couplescope.backends.clock import PhaseClock
from couplescope.protocol.contract import EXIT_OK
from couplescope.protocol.errors import UsageError
from couplescope.worker import memory_check
from couplescope.worker.measure import Prepared, measure
from couplescope.worker.profiling import profile_window
from couplescope.worker.training_checks import TrainingComplete
from couplescope.workloads import catalogue


# -- building a variant -----------------------------------------------------------------

def prepare(spec, backend, tmpdir: str, rank: int = 0, allreduce=None, report=None) -> Prepared:
    """Everything the timed loop needs, built outside it. Raises UsageError for bad input
    (a size too big for the memory here included, before anything is allocated)."""
    backend.validate(spec)   # a spec that skipped validation is refused the same way
    workload = catalogue.load(spec.model, spec.input_shape, spec.dtype)
    size = spec.size if spec.size is not None else workload.default_size
    dtype = spec.dtype or workload.dtype
    try:
        workload.validate_size(size)
    except ValueError as exc:
        raise UsageError(f"--size {size} for {workload.name}: {exc}") from None
    launch = backend.launcher(spec)
    here = launch.processes(spec) if launch.placement_known(spec) else 1
    memory_check.check(workload, size, dtype, here, spec)
    try:
        return _build(spec, backend, workload, size, dtype, tmpdir, rank, allreduce, report)
    except MemoryError:   # the estimate was overridden, or wrong: still bad input, said plainly
        raise UsageError(f"--size {size} for {workload.name} ran out of memory while building "
                         "the model and its arrays; use a smaller --size") from None
    except RuntimeError as exc:   # torch's allocator says it in words
        if "can't allocate memory" not in str(exc) and "out of memory" not in str(exc):
            raise
        raise UsageError(f"--size {size} for {workload.name} ran out of memory while building "
                         f"the model and its arrays ({first_line(exc)}); use a smaller --size") from None


def _build(spec, backend, workload, size: int, dtype: str, tmpdir: str, rank: int,
           allreduce=None, report=None) -> Prepared:
    arrays = host_arrays(workload, spec, size, dtype, rank)
    calls = workload.calls(size)
    clock = PhaseClock()
    clock.sync = _use_device(spec)   # before the model: a bridge module's initialize may use it
    coupling_backend = backend.coupling_backend(spec)
    eager, handed = _eager(spec, coupling_backend, workload, size, dtype, clock, allreduce)
    if spec.task == "train" and not handed:
        eager = workload.model_for_training(eager)
    expected = _expected(workload, eager, arrays, size, calls, spec.task)
    outputs = {name: np.zeros(e.shape, dtype=e.dtype, order="F") for name, e in expected.items()}
    training = None
    if spec.task == "train":
        from couplescope.worker.training_checks import Training

        training = Training(spec, workload, size, dtype, eager, arrays, outputs, expected, calls, rank,
                            allreduce)
    ts_path = torchscript_file(spec, coupling_backend, workload, eager, arrays, calls, tmpdir)
    arrays, outputs = _pinned(spec, arrays, outputs)
    bridge_module = os.path.abspath(spec.model) if catalogue.kind(spec.model) == "bridge-module" else None
    extra = {"bridge_module": bridge_module, **handed}
    if training is not None:
        extra.update(targets=training.targets, optimizer=training.optimizer, lr=training.lr,
                     allreduce=allreduce)
    ctx = CouplingContext(spec=spec, workload=workload, size=size, dtype=dtype, arrays=arrays,
                          outputs=outputs, calls=calls, torchscript_path=ts_path, clock=clock,
                          eager=eager, device=spec.device, extra=extra,
                          **({"report": report} if report is not None else {}))
    return Prepared(spec=spec, workload=workload, size=size, dtype=dtype, arrays=arrays,
                    outputs=outputs, expected=expected, calls=calls, clock=clock,
                    coupling=hosts.of(spec).open(coupling_backend, ctx), tolerance=workload.tolerance(dtype),
                    training=training)


def host_arrays(workload, spec, size: int, dtype: str, rank: int) -> dict:
    """The host inputs. Rank 0 (and a single process) sees the spec's own; rank r of a
    multi-process variant its own: base + r for a model whose inputs take an offset
    (SimpleNet, as in the reference MPI example), else a seed derived from (seed, rank).
    The weights are the same on every rank."""
    if rank == 0:
        return workload.host_arrays(size, dtype, spec.seed)
    if "offset" in inspect.signature(workload.host_arrays).parameters:
        return workload.host_arrays(size, dtype, spec.seed, offset=float(rank))
    seed = int(np.random.SeedSequence([spec.seed, rank]).generate_state(1)[0])
    return workload.host_arrays(size, dtype, seed)


def _expected(workload, eager, arrays, size, calls, task: str = "infer") -> dict:
    try:
        if task == "train":
            return workload.expected_for_training(eager, arrays, size)
        return workload.expected(eager, arrays, size)
    except (UsageError, MemoryError):
        raise
    except Exception as exc:
        shapes = ", ".join(str(arrays[n].shape) for n in calls[0].inputs)
        raise UsageError(f"model {workload.name} rejects input shape {shapes}: {first_line(exc)}") from None


def torchscript_file(spec, coupling_backend, workload, eager, arrays, calls, tmpdir) -> str | None:
    """The TorchScript file the coupling loads: the user's own .pt, or the model saved now."""
    if not coupling_backend.needs_torchscript(spec):
        return None
    if catalogue.kind(spec.model) == "torchscript-file":
        return workload.path
    import torch

    example = tuple(torch.from_numpy(np.ascontiguousarray(arrays[n])) for n in calls[0].inputs)
    path = os.path.join(tmpdir, f"{workload.name}.pt")
    if spec.task == "train":   # scripted in train mode: dropout and batch statistics kept
        import copy

        torch.jit.save(workload.script_for_training(copy.deepcopy(eager), example), path)
    else:
        torch.jit.save(workload.script(eager, example), path)
    return path


def _eager(spec, coupling_backend, workload, size: int, dtype: str, clock, allreduce=None):
    """The eager model, and what the coupling is handed with it. A user's bridge module is
    its own model: it is initialised here, once, with the run's config (its reference() may
    need what initialize sets up), and handed to the bridge coupling with the seconds that
    took, which are its load time; the coupling does not import or initialise it again."""
    if getattr(workload, "kind", "") != "bridge module" or not coupling_backend.runs_bridge_modules:
        return workload.build(size, dtype, spec.seed), {}
    from couplescope.backends import bridge_coupling

    lr = spec.lr if spec.lr is not None else workload.train_lr   # what Training will use
    config = bridge_coupling.config(spec, size, dtype, spec.device, clock, None, lr=lr,
                           optimizer=spec.optimizer or workload.train_optimizer, allreduce=allreduce)
    t0 = perf_counter()
    module = workload.build(size, dtype, spec.seed, config)
    seconds = perf_counter() - t0
    clock.reset()   # phases the module timed in initialize belong to no iteration
    return module, {"initialised": (module, seconds)}


def _use_device(spec):
    """The phase clock's sync on a GPU (None on the CPU): this process set up to use it."""
    if not spec.device.startswith("cuda"):
        return None
    from couplescope.backends import devices

    return devices.use_cuda(spec.device)  # current device, no TF32, a synchronise of this device


def _pinned(spec, arrays, outputs):
    """(arrays, outputs): page-locked copies with --pinned on a GPU."""
    if spec.pinned and spec.device.startswith("cuda"):  # the simulation's arrays live in page-locked memory
        from couplescope.backends import devices

        arrays, outputs = devices.page_locked(arrays), devices.page_locked(outputs)
    return arrays, outputs


def _timed_load(prepared: Prepared) -> float:
    """The load time: a compile the coupling made during its first load (and timed itself,
    Coupling.compiled) is reported on its own, so it is taken out; loading done before
    (Coupling.loaded_before: a user's bridge module initialised once) is counted in."""
    t0 = perf_counter()
    prepared.coupling.load()
    seconds = perf_counter() - t0 + prepared.coupling.loaded_before
    compiled = prepared.coupling.compiled
    return seconds - compiled["seconds"] if compiled else seconds


def loaded_fields(spec, backend, prepared: Prepared, loads: list[float]) -> dict:
    """model_loaded's fields (the slowest rank's load time heads them)."""
    fields = {"seconds": max(loads), "size": prepared.size, "dtype": prepared.dtype,
              "tolerance": prepared.tolerance, "backend": spec.backend,
              "inputs": {n: list(a.shape) for n, a in prepared.arrays.items()},
              "outputs": {n: list(a.shape) for n, a in prepared.outputs.items()},
              "torchscript": bool(prepared.coupling.ctx.torchscript_path)}
    training = prepared.training
    if training is not None:
        fields["training"] = {"task": training.task.name, "optimizer": training.optimizer,
                              "lr": training.lr, "loss": spec.loss, "train_call": spec.train_call,
                              # None: no gradient check (a user's module: no model to step)
                              "gradient_tolerance": training.tolerance if training.initial is not None else None,
                              "targets": {n: list(a.shape) for n, a in training.targets.items()}}
    if len(loads) > 1:
        fields.update(ranks=len(loads), per_rank_seconds=loads,
                      inner_backend=backend.coupling_backend(spec).name)
    return fields


def run_variant(spec, backend, team, paced: bool = False) -> None:
    """Measure one variant and emit its events. Raises for what ends it early. `paced`
    (--rounds): the timed iterations come in rounds, each on the parent's command
    (`timed_rounds`); everything else is as in one go."""
    team.begin()
    from couplescope.worker.environment import environment

    host = hosts.of(spec).environment(spec)
    team.now("run_started", spec=spec.to_dict(),
             environment={**environment(), **team.environment(), **({"host": host} if host else {})},
             coupling=", ".join([spec.backend, *backend.describe(spec), *host_words(spec)]),
             label_parts=backend.label_parts(spec))
    placements = team.stage(team.place, share=True)
    team.placed(placements)
    here = spec.replace(device=placements[team.rank]["device"])
    # a call per iteration to a team that does nothing after one (one process) is skipped
    after = None if type(team).after_iteration is Team.after_iteration else team.after_iteration
    with tempfile.TemporaryDirectory(prefix="couplescope-") as tmpdir:
        prepared = team.stage(lambda: prepare(here, backend, tmpdir, team.rank, team.gradient_reducer(),
                                              report=team.now))
        team.arrays_ready(prepared.arrays, prepared.outputs)
        loads = team.stage(lambda: _timed_load(prepared), share=True)
        if prepared.coupling.compiled:
            team.now("model_compiled", **prepared.coupling.compiled)
        team.now("model_loaded", **loaded_fields(spec, backend, prepared, loads))
        team.loaded()
        batch = team.world == 1   # ranks step together, one call at a time
        if prepared.training is not None:
            if team.world > 1:   # every rank's weights compared after each step
                team.step_digest = lambda: prepared.training.weights_digest(prepared.coupling)
                prepared.training.honours_done = False
            seed_steps(spec)
        summaries = [{}] * team.world
        try:
            team.stage(lambda: measure(prepared, team.emit, "warmup", spec.warmup, after, batch))
            if paced:
                timed_rounds(prepared, team, after, batch)
            else:
                team.stage(lambda: measure(prepared, team.emit, "timed", spec.iterations, after, batch))
            if spec.profile_iterations:
                summaries = team.stage(lambda: profile_window(prepared, team, spec, after) or {}, share=True)
        except TrainingComplete:   # the module said done: no step after it (not even profiled)
            team.flush()
        trained = None
        if prepared.training is not None:
            trained = team.stage(lambda: prepared.training.finish(prepared.coupling)
                                 if team.rank == 0 else None)
        team.stage(prepared.coupling.close)
    summary = team.summary(summaries, placements, loads)
    if trained is not None:
        summary["training"] = trained
    team.now("variant_finished", summary=summary)


def timed_rounds(prepared: Prepared, team, after, batch: bool) -> int:
    """The timed iterations in rounds, as the parent paces them: wait (model loaded, warmed
    up, nothing running) for a command, make the round's iterations, numbered on from the
    last round's, say round_finished, wait again; until the parent says the rounds are over.
    The end of the parent's commands (it went away) ends the variant as an interrupt does.
    Returns how many timed iterations were made."""
    done = 0
    while True:
        command = team.next_command()
        if command is None:
            raise KeyboardInterrupt
        if command.get("finish"):
            return done
        count, first = command["iterations"], done + 1
        team.stage(lambda: measure(prepared, team.emit, "timed", count, after, batch, first=first))
        done += count
        team.now("round_finished", round=command["round"], iterations=count)
        team.flush()


def seed_steps(spec) -> None:
    """The generator a step's random ops draw from (dropout) seeded as the eager reference
    step seeds it, so the first step's check compares like with like."""
    import torch

    torch.manual_seed(spec.seed)


def host_words(spec) -> list[str]:
    """How the heading says who makes the calls: "native host", "python host, inference mode"."""
    words = [f"{hosts.of(spec).name} host"]
    if spec.task == "train":
        words.append("training")
    elif spec.grad_mode != "no_grad":
        words.append(f"{spec.grad_mode} mode")
    return words


def run(spec, backend, team, paced: bool = False) -> int:
    """Run the variant; report what ends it early through the team; the exit code."""
    try:
        run_variant(spec, backend, team, paced)
        return EXIT_OK
    except BaseException as exc:
        return team.failed(exc)
    finally:
        team.flush()
