"""The measured loop of one variant, run inside the worker process.

Order of work: set threads, build the workload's host arrays and eager model, compute
the expected output, save the TorchScript form, open the backend's coupling, time the
model load, then warm-up, timed and profiled iterations. Only the coupling's call sits
inside the timed region; the output reset, the check and the event writing happen
between iterations. Profiled iterations come after the timed ones and are never mixed
into the statistics (the profiler perturbs what it measures).
"""

from __future__ import annotations

import os
import tempfile
import traceback
from time import perf_counter

import numpy as np

from couplescope import events
from couplescope.coupling import CouplingContext, PhaseClock
from couplescope.errors import UsageError


class Emitter:
    """Writes events; the engine calls it only outside timed regions."""

    def __init__(self, write) -> None:
        self.write = write
        self.variant = ""

    def __call__(self, event: str, **fields) -> None:
        self.write(events.make(event, variant=self.variant, **fields))


def environment() -> dict:
    import platform
    import socket
    import time

    import torch

    import couplescope

    cpu_model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:
        allowed = os.cpu_count()
    return {"couplescope": couplescope.__version__, "torch": torch.__version__,
            "numpy": np.__version__, "python": platform.python_version(),
            "torch_threads": torch.get_num_threads(),
            "torch_interop_threads": torch.get_num_interop_threads(),
            "cpu_model": cpu_model, "cores": os.cpu_count(), "cores_allowed": allowed,
            "hostname": socket.gethostname(), "pid": os.getpid(),
            "start_time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "cuda_available": torch.cuda.is_available()}


class Prepared:
    """A variant ready to measure: workload, arrays, expected output, coupling."""

    def __init__(self, spec, tmpdir: str, rank_offset: float = 0.0, input_seed: int | None = None) -> None:
        import torch

        from couplescope import backends, catalogue

        self.spec = spec
        if spec.threads:
            torch.set_num_threads(spec.threads)
        workload = catalogue.load(spec.model, spec.input_shape, spec.dtype)
        size = spec.size if spec.size is not None else workload.default_size
        dtype = spec.dtype or workload.dtype
        try:
            workload.validate_size(size)
        except ValueError as exc:
            raise UsageError(f"--size {size} for {workload.name}: {exc}") from None
        self.workload, self.size, self.dtype = workload, size, dtype
        seed = spec.seed if input_seed is None else input_seed  # MPI: each rank its own inputs
        arrays = (workload.host_arrays(size, dtype, seed, offset=rank_offset) if rank_offset
                  else workload.host_arrays(size, dtype, seed))
        calls = workload.calls(size)
        eager = workload.build(size, dtype, spec.seed)
        try:
            expected = workload.expected(eager, arrays, size)
        except UsageError:
            raise
        except Exception as exc:
            shapes = ", ".join(str(arrays[n].shape) for n in calls[0].inputs)
            raise UsageError(f"model {workload.name} rejects input shape {shapes}: "
                             f"{_first_line(exc)}") from None
        self.arrays, self.expected, self.calls = arrays, expected, calls
        self.outputs = {name: np.zeros(e.shape, dtype=e.dtype, order="F") for name, e in expected.items()}
        self.clock = PhaseClock()
        backend = backends.get(spec.backend if spec.backend != "mpi" else spec.inner_backend)
        ts_path = None
        user_bridge = spec.model.endswith(".py")
        if user_bridge and spec.backend not in ("bridge",) and not (spec.backend == "mpi" and spec.inner_backend == "bridge"):
            raise UsageError(f"{spec.model} is a bridge module: run it with --backend bridge")
        if spec.model.endswith((".pt", ".pth")) and spec.backend == "bridge" and spec.bridge_model == "eager":
            raise UsageError(f"{spec.model} is TorchScript: the bridge runs it with --bridge-model "
                             "torchscript, not eager")
        if not user_bridge and (spec.backend != "bridge" or spec.bridge_model == "torchscript"):
            ts_path = getattr(workload, "path", None) if spec.model.endswith((".pt", ".pth")) else None
            if ts_path is None:
                example = tuple(torch.from_numpy(np.ascontiguousarray(arrays[n])) for n in calls[0].inputs)
                scripted = workload.script(eager, example)
                ts_path = os.path.join(tmpdir, f"{workload.name}.pt")
                torch.jit.save(scripted, ts_path)
        device, sync = spec.device, None
        if device.startswith("cuda"):
            from couplescope import devices

            sync = devices.use_cuda(device)  # current device, no TF32, a synchronise of this device
            if spec.pinned:  # the simulation's arrays live in page-locked memory, both sides
                self.arrays = arrays = devices.page_locked(arrays)
                self.outputs = devices.page_locked(self.outputs)
        self.ctx = CouplingContext(spec=spec, workload=workload, size=size, dtype=dtype,
                                   arrays=arrays, outputs=self.outputs, calls=calls,
                                   torchscript_path=ts_path, clock=self.clock, device=device,
                                   extra={"bridge_module": os.path.abspath(spec.model) if user_bridge else None})
        self.clock.sync = sync  # device-true phases on a GPU (see docs/gpu.md)
        self.coupling = backend.open(self.ctx)
        self.tolerance = workload.tolerance(dtype)
        #: called after each iteration's event, outside the timed region (the profiler
        #: steps its schedule here)
        self.after_iteration = None

    def check(self) -> tuple[float, bool, str | None]:
        """Max relative error and pass/fail of the outputs the last call wrote."""
        if self.coupling.output_error:
            return float("inf"), False, self.coupling.output_error
        err = self.workload.check(self.outputs, self.expected, self.arrays)
        passed = bool(np.isfinite(err) and err <= self.tolerance)
        return err, passed, None

    def poison_outputs(self) -> None:
        """Fill outputs with NaN so a coupling that never writes host memory fails its check."""
        for out in self.outputs.values():
            out.fill(np.nan)
        self.coupling.output_error = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def measure(prepared: Prepared, emit: Emitter, kind: str, count: int) -> list[dict]:
    """Run `count` iterations of one kind, emitting an event after each."""
    coupling, clock = prepared.coupling, prepared.clock
    done = []
    for index in range(1, count + 1):
        prepared.poison_outputs()
        clock.reset()
        error = None
        t0 = perf_counter()
        try:
            coupling.call()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # a failing model is a FAILED check, not a crash
            error = f"{type(exc).__name__}: {_first_line(exc)}"
        seconds = perf_counter() - t0
        phases = clock.reset()
        if error is None:
            err, passed, error = prepared.check()
        else:
            err, passed = float("inf"), False
        record = {"index": index, "kind": kind, "seconds": seconds, "phases": phases,
                  "max_rel_error": err, "passed": passed, "error": error}
        emit("iteration", **record)
        done.append(record)
        if prepared.after_iteration is not None:
            prepared.after_iteration(kind, index)
    return done


def run_variant(spec, emit: Emitter, profile_window=None) -> None:
    """Measure one variant and emit its events. Raises UsageError for bad input."""
    emit.variant = spec.label
    emit("run_started", spec=spec.to_dict(), environment=environment())
    with tempfile.TemporaryDirectory(prefix="couplescope-") as tmpdir:
        prepared = Prepared(spec, tmpdir)
        t0 = perf_counter()
        prepared.coupling.load()
        load_seconds = perf_counter() - t0
        emit("model_loaded", seconds=load_seconds, size=prepared.size, dtype=prepared.dtype,
             tolerance=prepared.tolerance, backend=spec.backend,
             inputs={n: list(a.shape) for n, a in prepared.arrays.items()},
             outputs={n: list(a.shape) for n, a in prepared.outputs.items()})
        measure(prepared, emit, "warmup", spec.warmup)
        measure(prepared, emit, "timed", spec.iterations)
        summary = {}
        if spec.profile_iterations and profile_window is not None:
            summary = profile_window(prepared, emit, spec)
        prepared.coupling.close()
    emit("variant_finished", summary=summary or {})


def failure(emit: Emitter, exc: BaseException, kind: str) -> None:
    emit("variant_failed", reason=_first_line(exc) if kind != "interrupted" else "interrupted",
         kind=kind, traceback="".join(traceback.format_exception(exc)) if kind == "error" else "")
