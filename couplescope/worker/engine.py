"""The measured loop of one variant, run inside the worker (one process, or each MPI rank).

Order of work: set threads, report where we run, build the workload's host arrays and
eager model, compute the expected output, save the TorchScript form when the coupling
needs it, open the backend's coupling, time the model load, then warm-up, timed and
profiled iterations. Only the coupling's call sits inside the timed region; the output
reset, the check and the event writing happen between iterations. Profiled iterations
come after the timed ones and are never mixed into the statistics (the profiler
perturbs what it measures).

The loop is the same whatever the backend: the backend's Team (couplescope.backends.base)
says how many processes measure together, how their events leave and where they stop
together; its Coupling makes the calls.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from couplescope.backends.base import Coupling, CouplingContext, error_text, essential_line, first_line
from couplescope.backends.clock import PhaseClock
from couplescope.protocol import scratch
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

    def check(self, outputs: dict | None = None) -> tuple[float, bool, str | None]:
        """Max relative error and pass/fail of the outputs the last call wrote (or of an
        iteration's snapshot of them, from a batch)."""
        if outputs is None and self.coupling.output_error:
            return float("inf"), False, self.coupling.output_error
        err = self.workload.check(self.outputs if outputs is None else outputs, self.expected, self.arrays)
        passed = bool(np.isfinite(err) and err <= self.tolerance)
        return err, passed, None

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
    runs after every event, outside the timed region. With `batch` (one process, a coupling
    that can), the calls run in batches on the host (couplescope.backends.native.batch).
    Returns how many ran. Nothing is kept per iteration here (the parent keeps the events):
    a list of records grew the worker by about 1 KB a call, which the leak diagnostic saw
    as the coupling's memory growing."""
    runner = prepared.coupling.call_batch if batch else None
    if runner is not None:
        return _measure_batched(prepared, runner, emit, kind, count, after)
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


def _measure_batched(prepared: Prepared, runner, emit, kind: str, count: int, after) -> int:
    """The same iterations, their calls made back to back by the host: each iteration's
    outputs come back as a snapshot and are checked here, after the batch."""
    index = 0
    while index < count:
        records, failure = runner.run(runner.size(count - index))
        for seconds, phases, output_error, outputs in records:
            index += 1
            if output_error:
                err, passed, error = float("inf"), False, output_error
            else:
                err, passed, error = prepared.check(outputs)
            _record(emit, index, kind, seconds, phases, err, passed, error, after)
        if failure is not None and index < count:   # the call that raised: a FAILED iteration
            message, seconds = failure
            index += 1
            prepared.clock.reset()
            _record(emit, index, kind, seconds, {}, float("inf"), False, first_line_of(message), after)
    return index


def first_line_of(text: str) -> str:
    return essential_line(text) or "the call failed"


def _record(emit, index, kind, seconds, phases, err, passed, error, after) -> None:
    emit("iteration", index=index, kind=kind, seconds=seconds, phases=phases,
         max_rel_error=err, passed=passed, error=error)
    if after is not None:
        after(kind, index)


def _timed_load(prepared: Prepared) -> float:
    t0 = perf_counter()
    prepared.coupling.load()
    return perf_counter() - t0


def loaded_fields(spec, backend, prepared: Prepared, loads: list[float]) -> dict:
    """model_loaded's fields (the slowest rank's load time heads them)."""
    fields = {"seconds": max(loads), "size": prepared.size, "dtype": prepared.dtype,
              "tolerance": prepared.tolerance, "backend": spec.backend,
              "inputs": {n: list(a.shape) for n, a in prepared.arrays.items()},
              "outputs": {n: list(a.shape) for n, a in prepared.outputs.items()}}
    if len(loads) > 1:
        fields.update(ranks=len(loads), per_rank_seconds=loads,
                      inner_backend=backend.coupling_backend(spec).name)
    return fields


def run_variant(spec, backend, team, tmpdir: str | None = None) -> None:
    """Measure one variant and emit its events. Raises for what ends it early. `tmpdir`:
    where the worker may write (the saved TorchScript file); a private one if None."""
    team.begin()
    from couplescope.worker.environment import environment

    team.now("run_started", spec=spec.to_dict(), environment={**environment(), **team.environment()},
             coupling=", ".join([spec.backend, *backend.describe(spec), *host_words(spec)]))
    placements = team.stage(team.place, share=True)
    team.placed(placements)
    here = spec.replace(device=placements[team.rank]["device"])
    after = team.after_iteration
    with contextlib.nullcontext(tmpdir or scratch.make("model")) as tmpdir:
        prepared = team.stage(lambda: prepare(here, backend, tmpdir, team.rank))
        team.arrays_ready(prepared.arrays, prepared.outputs)
        loads = team.stage(lambda: _timed_load(prepared), share=True)
        team.now("model_loaded", **loaded_fields(spec, backend, prepared, loads))
        team.loaded()
        batch = team.world == 1   # ranks step together, one call at a time
        team.stage(lambda: measure(prepared, team.emit, "warmup", spec.warmup, after, batch))
        # the warm-up's events leave now, not up to 50 ms later: a model that ends the
        # process itself (os._exit) in its first timed call still shows its warm-up
        team.flush()
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


def run(spec, backend, team, tmpdir: str | None = None) -> int:
    """Run the variant; report what ends it early through the team; the exit code."""
    try:
        run_variant(spec, backend, team, tmpdir)
        return EXIT_OK
    except BaseException as exc:
        return team.failed(exc)
    finally:
        team.flush()
