"""The measured loop of one variant, run inside the worker (one process, or each MPI rank).

Order of work: set threads, report where we run, build the workload's host arrays and
eager model, compute the expected output, save the TorchScript form when the coupling
needs it, open the backend's coupling, time the model load (a compile on the first load,
aoti's or torch.compile's, is reported on its own), then warm-up, timed and profiled
iterations. Only the coupling's call sits inside the timed region; the output
reset, the check and the event writing happen between iterations. Profiled iterations
come after the timed ones and are never mixed into the statistics (the profiler
perturbs what it measures).

The loop is the same whatever the backend: the backend's Team (couplescope.backends.base)
says how many processes measure together, how their events leave and where they stop
together; its Coupling makes the calls.
"""

from __future__ import annotations

import inspect
import os
import signal
import tempfile
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from couplescope.backends.base import Coupling, CouplingContext, error_text, essential_line, first_line
from couplescope.backends.clock import PhaseClock
from couplescope.protocol import events
from couplescope.protocol.contract import EXIT_OK
from couplescope.protocol.errors import UsageError
from couplescope.worker import memory_check
from couplescope.workloads import catalogue


@dataclass
class Prepared:
    """A variant ready to measure: workload, host arrays, expected output, coupling."""

    spec: object
    workload: object
    size: int
    dtype: str
    arrays: dict
    outputs: dict
    expected: dict
    calls: list
    clock: PhaseClock
    coupling: Coupling
    tolerance: float
    #: the batches' runner, made on first use (couplescope.backends.batch)
    runner: object = None

    def check(self, outputs: dict | None = None) -> tuple[float, bool, str | None]:
        """Max relative error and pass/fail of the outputs the last call wrote (or of an
        iteration's snapshot of them, from a batch)."""
        if outputs is None and self.coupling.output_error:
            return float("inf"), False, self.coupling.output_error
        err = self.workload.check(self.outputs if outputs is None else outputs, self.expected, self.arrays)
        passed = bool(np.isfinite(err) and err <= self.tolerance)
        return err, passed, None

    def batch_runner(self):
        """The coupling's own batches (a native host's, in C++), else the python host's
        loop; made once, so what it learnt (batch size, the judged output) carries over."""
        if self.runner is None:
            from couplescope.backends.batch import PythonBatchRunner

            self.runner = self.coupling.call_batch or PythonBatchRunner(self.coupling, self.clock,
                                                                        self.outputs, self.arrays)
        return self.runner

    def poison_outputs(self) -> None:
        """Fill outputs with NaN so a coupling that never writes host memory fails its check."""
        for out in self.outputs.values():
            out.fill(np.nan)
        self.coupling.output_error = None


# -- building a variant -----------------------------------------------------------------

def prepare(spec, backend, tmpdir: str, rank: int = 0) -> Prepared:
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
    here = backend.processes(spec) if backend.placement_known(spec) else 1
    memory_check.check(workload, size, dtype, here)
    try:
        return _build(spec, backend, workload, size, dtype, tmpdir, rank)
    except MemoryError:   # the estimate was overridden, or wrong: still bad input, said plainly
        raise UsageError(f"--size {size} for {workload.name} ran out of memory while building "
                         "the model and its arrays; use a smaller --size") from None
    except RuntimeError as exc:   # torch's allocator says it in words
        if "can't allocate memory" not in str(exc) and "out of memory" not in str(exc):
            raise
        raise UsageError(f"--size {size} for {workload.name} ran out of memory while building "
                         f"the model and its arrays ({first_line(exc)}); use a smaller --size") from None


def _build(spec, backend, workload, size: int, dtype: str, tmpdir: str, rank: int) -> Prepared:
    arrays = host_arrays(workload, spec, size, dtype, rank)
    calls = workload.calls(size)
    eager = workload.build(size, dtype, spec.seed)
    expected = _expected(workload, eager, arrays, size, calls)
    outputs = {name: np.zeros(e.shape, dtype=e.dtype, order="F") for name, e in expected.items()}
    coupling_backend = backend.coupling_backend(spec)
    ts_path = torchscript_file(spec, coupling_backend, workload, eager, arrays, calls, tmpdir)
    clock = PhaseClock()
    arrays, outputs, clock.sync = _on_device(spec, arrays, outputs)
    bridge_module = os.path.abspath(spec.model) if catalogue.kind(spec.model) == "bridge-module" else None
    ctx = CouplingContext(spec=spec, workload=workload, size=size, dtype=dtype, arrays=arrays,
                          outputs=outputs, calls=calls, torchscript_path=ts_path, clock=clock,
                          device=spec.device, extra={"bridge_module": bridge_module})
    return Prepared(spec=spec, workload=workload, size=size, dtype=dtype, arrays=arrays,
                    outputs=outputs, expected=expected, calls=calls, clock=clock,
                    coupling=coupling_backend.open(ctx), tolerance=workload.tolerance(dtype))


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


def _expected(workload, eager, arrays, size, calls) -> dict:
    try:
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
    torch.jit.save(workload.script(eager, example), path)
    return path


def _on_device(spec, arrays, outputs):
    """(arrays, outputs, the phase clock's sync): page-locked copies with --pinned on a GPU."""
    if not spec.device.startswith("cuda"):
        return arrays, outputs, None
    from couplescope.backends import devices

    sync = devices.use_cuda(spec.device)  # current device, no TF32, a synchronise of this device
    if spec.pinned:  # the simulation's arrays live in page-locked memory, both sides
        arrays, outputs = devices.page_locked(arrays), devices.page_locked(outputs)
    return arrays, outputs, sync


# -- the measured loop ------------------------------------------------------------------

def measure(prepared: Prepared, emit, kind: str, count: int, after=None, batch: bool = False) -> int:
    """Run `count` iterations of one kind, emitting an event after each; `after(kind, index)`
    runs after every event, outside the timed region. With `batch` (one process), the calls
    run in batches with nothing of the engine between them (couplescope.backends.batch).
    Returns how many ran. Nothing is kept here: the events are the record (a list of every
    iteration grew the worker by ~30 MiB over 50 000 calls and looked like a leak)."""
    if batch:
        return _measure_batched(prepared, prepared.batch_runner(), emit, kind, count, after)
    coupling, clock = prepared.coupling, prepared.clock
    for index in range(1, count + 1):
        prepared.poison_outputs()
        clock.reset()
        error = None
        hosted = None
        t0 = perf_counter()
        try:
            hosted = coupling.call()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # a failing model is a FAILED check, not a crash
            error = error_text(exc)
        seconds = perf_counter() - t0
        if hosted is not None:   # timed by the host itself (native: in C++)
            seconds = hosted
        phases = clock.reset()
        if error is None:
            err, passed, error = prepared.check()
        else:
            err, passed = float("inf"), False
        _record(emit, index, kind, seconds, phases, err, passed, error, after)
    return count


#: the signals that end a run; while a batch of several calls runs they only take note,
#: and act once the batch is reported
_ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                        if hasattr(signal, name))


@contextmanager
def signals_noted():
    """Yields a list that the ending signals append to instead of acting; on leaving, the
    first one noted is raised again with the handlers it found. A batch of short calls then
    loses none of the calls it made (they are checked and reported first), and acts on a
    signal within one batch (about 0.1 s)."""
    noted: list[int] = []
    previous = {}
    for sig in _ENDING_SIGNALS:
        try:
            previous[sig] = signal.signal(sig, lambda signum, frame: noted.append(signum))
        except (ValueError, OSError):   # not the main thread: nothing is deferred
            pass
    try:
        yield noted
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if noted:
            signal.raise_signal(noted[0])


def _measure_batched(prepared: Prepared, runner, emit, kind: str, count: int, after) -> int:
    """The same iterations, their calls made back to back by the host: each iteration's
    outputs come back as a snapshot and are checked here, after the batch, and the batch
    is reported as one `iterations` event (columns; a JSON object per call would cost the
    worker and the parent more than a small model's call). A batch of one call (a slow
    model) stays interruptible in the middle of its call, as the one-call loop is."""
    index = 0
    while index < count:
        size = runner.size(count - index)
        with (signals_noted() if size > 1 else nullcontext([])) as noted:
            index = _one_batch(prepared, runner, emit, kind, index, count, size, after,
                               stop=lambda: bool(noted))
    return index


def _one_batch(prepared, runner, emit, kind, index, count, size, after, stop) -> int:
    records, failure = runner.run(size, stop)
    judged = runner.judged_result   # what `same` refers to (judge() below replaces it)
    batch = []
    for position, (seconds, phases, output_error, outputs, same) in enumerate(records):
        if output_error:
            err, passed, error = float("inf"), False, output_error
        elif same:   # byte-identical to outputs already judged (backends/batch.py says why)
            err, passed, error = judged
        else:
            err, passed, error = prepared.check(outputs)
            runner.judge(position, (err, passed, error))
        batch.append({"index": index + len(batch) + 1, "kind": kind, "seconds": seconds,
                      "phases": phases, "max_rel_error": err, "passed": passed, "error": error})
    if failure is not None and index + len(batch) < count:   # the call that raised: FAILED
        message, seconds = failure
        prepared.clock.reset()
        batch.append({"index": index + len(batch) + 1, "kind": kind, "seconds": seconds,
                      "phases": {}, "max_rel_error": float("inf"), "passed": False,
                      "error": first_line_of(message)})
    if batch:
        emit("iterations", **events.iteration_columns(kind, index + 1, batch))
    for record in batch:
        if after is not None:
            after(kind, record["index"])
    return index + len(batch)


def first_line_of(text: str) -> str:
    return essential_line(text) or "the call failed"


def _record(emit, index, kind, seconds, phases, err, passed, error, after) -> None:
    emit("iteration", index=index, kind=kind, seconds=seconds, phases=phases,
         max_rel_error=err, passed=passed, error=error)
    if after is not None:
        after(kind, index)


def _timed_load(prepared: Prepared) -> float:
    """The load time: a compile the coupling made during its first load (and timed itself,
    Coupling.compiled) is reported on its own, so it is taken out."""
    t0 = perf_counter()
    prepared.coupling.load()
    seconds = perf_counter() - t0
    compiled = prepared.coupling.compiled
    return seconds - compiled["seconds"] if compiled else seconds


def loaded_fields(spec, backend, prepared: Prepared, loads: list[float]) -> dict:
    """model_loaded's fields (the slowest rank's load time heads them)."""
    fields = {"seconds": max(loads), "size": prepared.size, "dtype": prepared.dtype,
              "tolerance": prepared.tolerance, "backend": spec.backend,
              "inputs": {n: list(a.shape) for n, a in prepared.arrays.items()},
              "outputs": {n: list(a.shape) for n, a in prepared.outputs.items()},
              "torchscript": bool(prepared.coupling.ctx.torchscript_path)}
    if len(loads) > 1:
        fields.update(ranks=len(loads), per_rank_seconds=loads,
                      inner_backend=backend.coupling_backend(spec).name)
    return fields


def run_variant(spec, backend, team) -> None:
    """Measure one variant and emit its events. Raises for what ends it early."""
    team.begin()
    from couplescope.worker.environment import environment

    team.now("run_started", spec=spec.to_dict(), environment={**environment(), **team.environment()},
             coupling=", ".join([spec.backend, *backend.describe(spec), *host_words(spec)]))
    placements = team.stage(team.place, share=True)
    team.placed(placements)
    here = spec.replace(device=placements[team.rank]["device"])
    after = team.after_iteration
    with tempfile.TemporaryDirectory(prefix="couplescope-") as tmpdir:
        prepared = team.stage(lambda: prepare(here, backend, tmpdir, team.rank))
        team.arrays_ready(prepared.arrays, prepared.outputs)
        loads = team.stage(lambda: _timed_load(prepared), share=True)
        if prepared.coupling.compiled:
            team.now("model_compiled", **prepared.coupling.compiled)
        team.now("model_loaded", **loaded_fields(spec, backend, prepared, loads))
        team.loaded()
        batch = team.world == 1   # ranks step together, one call at a time
        team.stage(lambda: measure(prepared, team.emit, "warmup", spec.warmup, after, batch))
        team.stage(lambda: measure(prepared, team.emit, "timed", spec.iterations, after, batch))
        summaries = [{}] * team.world
        if spec.profile_iterations:
            from couplescope.worker.profiling import profile_window

            summaries = team.stage(lambda: profile_window(prepared, team, spec, after) or {}, share=True)
        team.stage(prepared.coupling.close)
    team.now("variant_finished", summary=team.summary(summaries, placements, loads))


def host_words(spec) -> list[str]:
    """How the heading says who makes the calls: "native host", "python host, inference mode"."""
    words = [f"{spec.host or 'python'} host"]
    if spec.grad_mode != "no_grad":
        words.append(f"{spec.grad_mode} mode")
    return words


def run(spec, backend, team) -> int:
    """Run the variant; report what ends it early through the team; the exit code."""
    try:
        run_variant(spec, backend, team)
        return EXIT_OK
    except BaseException as exc:
        return team.failed(exc)
    finally:
        team.flush()
