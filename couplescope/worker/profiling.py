"""The profiled window of a variant, run in the worker after its timed iterations.

The profiler perturbs what it measures, so it gets its own iterations (kind
"profiled", never in the statistics) after the timed ones. During the window every
phase is a `record_function` range "couplescope/<phase>" (PhaseClock does that when
`clock.profiling` is on), so the phases stand out in TensorBoard's trace and operator
views. The trace is written by `tensorboard_trace_handler` in the layout the
TensorBoard plugin reads, with the spec and `distributedInfo` in its metadata for
HolisticTraceAnalysis and Perfetto.

Why an operator budget: the profiler's cost is not in the profiled iteration itself
but in turning its events into a trace and summarizing it afterwards, a few hundred
microseconds per operator with shapes and memory on the build machines (StrideNet at
N = 128, about 84 000 operators per iteration, took 14 s and 1.4 GB to write one
iteration's trace; at N = 512, 1.3 million operators, it would be minutes and many GB).
So before the window, one unrecorded probe iteration counts the operators an iteration
dispatches (a TorchDispatchMode that stops at the budget, so the probe stays short; a
training step's effects on the model are undone: couplescope.worker.operator_probe);
the window is shortened to fit the budget, or skipped with a diagnostic when a single
iteration exceeds it. The budget (--profile-max-ops, the spec's profile_max_ops: 10 000
operators over the recorded iterations by default) keeps a trace to a few seconds.

A profiler failure never loses the timings: it is caught, reported in the summary
and as a diagnostic, and the variant still finishes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from time import perf_counter

from couplescope.protocol.contract import TRACE_DIR_ENV, TRACE_SUFFIXES
from couplescope.worker.measure import measure
from couplescope.worker.operator_probe import count_operators

DEFAULT_MAX_OPS = 10_000


def window_shape(iterations: int) -> tuple[int, int]:
    """(profiler warm-up, recorded) iterations for a window of `iterations`.

    The profiler's first step pays its start-up cost, so one iteration warms it up when
    there is room; `--profile-iterations N` is the number of extra iterations run.
    """
    if iterations <= 1:
        return 0, max(iterations, 0)
    return 1, iterations - 1


def max_ops(spec=None) -> int:
    """The operator budget: --profile-max-ops (the spec's field, its one source)."""
    return max(1, getattr(spec, "profile_max_ops", None) or DEFAULT_MAX_OPS)


def rank_info(team) -> dict:
    """distributedInfo for the trace (HolisticTraceAnalysis reads the rank from it)."""
    return {"rank": team.rank, "world_size": team.world, "backend": team.distributed_backend}


def worker_name(spec, info: dict) -> str:
    """The trace file prefix, which the plugin shows as the worker: the variant or the rank.

    Dots would confuse the plugin's file-name pattern, so anything unusual becomes '-'.
    """
    if info["world_size"] > 1:
        return f"rank{info['rank']}"
    return re.sub(r"[^A-Za-z0-9-]+", "-", spec.label).strip("-") or "worker"


def trace_files(directory: str) -> list[str]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if n.endswith(TRACE_SUFFIXES)]


def _profiler(spec, trace_dir: str, name: str, warmup: int, active: int, errors: list):
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    activities = [ProfilerActivity.CPU]
    if spec.device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    write = tensorboard_trace_handler(trace_dir, worker_name=name, use_gzip=True)

    def on_trace_ready(prof):
        try:
            write(prof)
        except Exception as exc:  # reported, not raised: the iterations go on
            errors.append(f"writing the trace failed: {type(exc).__name__}: {exc}")

    return profile(activities=activities, schedule=schedule(wait=0, warmup=warmup, active=active, repeat=1),
                   on_trace_ready=on_trace_ready, record_shapes=True, profile_memory=True,
                   with_stack=False)


def profile_window(prepared, team, spec, after=None) -> dict:
    """Profile a window of iterations; return the variant's summary additions.

    Returns {"profile": {...what ran, status, files...}, "trace_summary": {...}}. Never
    raises for a profiler problem (only KeyboardInterrupt gets through).
    """
    try:
        return _profile_window(prepared, team, spec, after)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        profile = {"requested_iterations": spec.profile_iterations}
        _failed(team.emit, profile, f"{type(exc).__name__}: {exc}")
        return {"profile": profile}


def _profile_window(prepared, team, spec, after) -> dict:
    from couplescope.worker.trace_summary import summarize_files

    started = perf_counter()
    warmup, active = window_shape(spec.profile_iterations)
    info = rank_info(team)
    profile = {"status": "ok", "requested_iterations": spec.profile_iterations,
               "warmup_iterations": warmup, "recorded_iterations": active,
               "record_shapes": True, "profile_memory": True,
               "activities": ["cpu", "cuda"] if spec.device.startswith("cuda") else ["cpu"],
               "worker": worker_name(spec, info), "distributed_info": info, "max_ops": max_ops(spec)}
    result = {"profile": profile}
    staging = os.environ.get(TRACE_DIR_ENV)
    trace_dir = staging or tempfile.mkdtemp(prefix="couplescope-trace-")
    try:
        _run_window(prepared, team.emit, spec, profile, trace_dir, warmup, active, info, after)
        files = trace_files(trace_dir)
        # without a staging directory (no --export) the trace is summarized, then deleted
        profile["trace_files"] = [os.path.basename(f) for f in files] if staging else []
        if files and profile["status"] == "ok":
            try:
                t0 = perf_counter()
                result["trace_summary"] = summarize_files(files)
                profile["summary_seconds"] = perf_counter() - t0
            except Exception as exc:  # a summary we cannot compute must not cost the run
                profile["summary_error"] = f"{type(exc).__name__}: {exc}"
    finally:
        if not staging:
            shutil.rmtree(trace_dir, ignore_errors=True)
    profile["seconds"] = perf_counter() - started
    return result


def _run_window(prepared, emit, spec, profile, trace_dir, warmup, active, info, after) -> None:
    """The probe, then the profiled iterations; fills `profile` in place, never raises
    (except KeyboardInterrupt). `after` (the team's step) runs after every iteration too."""
    clock = prepared.clock
    limit = profile["max_ops"]
    unseen = prepared.coupling.not_profiled
    if unseen:   # the calls are made in another process (a library host's driver)
        profile.update(status="skipped", warmup_iterations=0, recorded_iterations=0, reason=unseen)
        emit("diagnostic", level="warning", setting="profile_iterations",
             message=f"profiling skipped: {unseen}; --profile-iterations 0 says so up front")
        return
    t0 = perf_counter()
    try:
        ops = count_operators(prepared, limit)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception:
        ops = None
    profile["probe_seconds"] = perf_counter() - t0
    profile["operators_per_iteration"] = ops if ops is None or ops <= limit else f">{limit}"
    if ops is not None and ops > limit:
        profile.update(status="skipped", warmup_iterations=0, recorded_iterations=0,
                       reason=f"one iteration dispatches more than {limit} operators; its trace would "
                              f"take minutes and gigabytes to write")
        emit("diagnostic", level="warning", setting="profile_iterations",
             message=f"profiling skipped: one iteration dispatches more than {limit} operators "
                     f"(a trace would take minutes and GBs); profile a smaller --size, or raise "
                     f"--profile-max-ops")
        return
    if ops and ops * active > limit:
        fits = max(1, limit // ops)
        profile["reduced_from"] = active
        active = profile["recorded_iterations"] = fits
    errors: list[str] = []
    try:
        os.makedirs(trace_dir, exist_ok=True)
        prof = _profiler(spec, trace_dir, profile["worker"], warmup, active, errors)
        prof.start()
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        # The window's iterations still run (unprofiled): MPI ranks step together, and a
        # rank that ran fewer iterations than the others would leave them waiting.
        errors.append(f"the profiler could not start: {type(exc).__name__}: {exc}")
        prof = None
    if prof is not None:
        try:  # metadata HolisticTraceAnalysis and Perfetto read (added while the profiler runs)
            prof.add_metadata_json("couplescope_spec", json.dumps(spec.to_dict()))
            prof.add_metadata_json("distributedInfo", json.dumps(info))
        except Exception as exc:
            errors.append(f"trace metadata not added: {type(exc).__name__}: {exc}")
    stepping = [prof is not None]

    def step(kind, index):
        if stepping[0]:
            try:
                prof.step()
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as exc:
                stepping[0] = False
                errors.append(f"profiler step failed: {type(exc).__name__}: {exc}")
        if after is not None:
            after(kind, index)

    clock.profiling = prof is not None
    t0 = perf_counter()
    try:
        measure(prepared, emit, "profiled", warmup + active, step)
    finally:
        clock.profiling = False
        if prof is not None:
            try:
                prof.stop()
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as exc:
                errors.append(f"the profiler could not stop: {type(exc).__name__}: {exc}")
        profile["window_seconds"] = perf_counter() - t0   # the iterations and writing the trace
    if errors:
        _failed(emit, profile, "; ".join(errors))
    elif not trace_files(trace_dir):
        _failed(emit, profile, f"the profiler wrote no trace into {trace_dir}")


def _failed(emit, profile: dict, message: str) -> None:
    profile["status"] = "failed"
    profile["error"] = message
    emit("diagnostic", level="warning", setting="profile_iterations",
         message=f"profiling failed (the timings are kept): {message}")
