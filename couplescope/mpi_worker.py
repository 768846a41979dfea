"""The rank side of the mpi backend: every rank runs this; rank 0 alone writes events.

mpiexec and srun forward every rank's stdout to the parent, so two ranks writing event
lines would interleave them. Instead each rank collects its events locally and, after
every iteration (outside the timed region), all ranks exchange them with one
`allgather`; rank 0 writes them, tagged with the rank. The exchange doubles as the
step's synchronisation point, as a halo exchange is in a simulation, so "iteration k"
means the same step on every rank and the slowest rank is the step time.

Failures: every piece of work runs as a *stage* whose outcome (done, or the rank's
error) travels in the same exchange, so when rank 1 raises, every rank learns it at
the next exchange and they all stop together; rank 0 reports "rank 1: <error>". A rank
that dies outright cannot say so: the launcher ends the job and the parent names the
rank from the launcher's own message (backends/mpi.py). Nothing here waits forever on
a rank that is gone.
"""

from __future__ import annotations

import faulthandler
import inspect
import os
import shutil
import socket
import sys
import tempfile
import traceback
from time import perf_counter

from couplescope import events
from couplescope.errors import UsageError

#: inputs and outputs up to this many values are gathered and printed, as the
#: reference MPI example prints them
SAMPLE_MAX_VALUES = 20


class RankFailure(Exception):
    """One or more ranks failed a stage; every rank raises this at the same exchange."""

    def __init__(self, failures: list[tuple[int, tuple[str, str, str]]], world: int) -> None:
        self.failures = failures
        kinds = {f[1][0] for f in failures}
        self.kind = "usage" if kinds == {"usage"} else "error"
        messages = {f[1][1] for f in failures}
        if len(failures) == world and len(messages) == 1:
            only = messages.pop()
            self.reason = only if self.kind == "usage" else f"all {world} ranks: {only}"
        else:
            self.reason = "; ".join(f"rank {r}: {msg}" for r, (_, msg, _) in failures)
        self.traceback = "".join(f"rank {r}:\n{tb}" for r, (_, _, tb) in failures if tb)
        super().__init__(self.reason)


class RankChannel:
    """Emitter-compatible: `channel("iteration", ...)` collects an event on this rank;
    `exchange()` gathers everyone's; `flush()` writes them on rank 0."""

    def __init__(self, comm, write, variant: str) -> None:
        self.comm = comm
        self.rank = comm.Get_rank()
        self.world = comm.Get_size()
        self._write = write if self.rank == 0 else None
        self.variant = variant
        self.pending: list[dict] = []
        self._gathered: list[dict] = []

    def __call__(self, event: str, **fields) -> None:
        fields.setdefault("rank", self.rank)
        self.pending.append(events.make(event, variant=self.variant, **fields))

    def write(self, event: dict) -> None:
        """For code that writes whole event dicts (the profiler window)."""
        self.pending.append({**event, "rank": event.get("rank", self.rank)})

    def now(self, event: str, **fields) -> None:
        """A variant-level event from rank 0, written at once (other ranks: nothing)."""
        if self._write is not None:
            self._write(events.make(event, variant=self.variant, **fields))

    def exchange(self, value=None, failure=None) -> list:
        """All ranks: swap pending events, a value and a failure. Raises RankFailure when
        any rank failed (after keeping its events for `flush`)."""
        payloads = self.comm.allgather((self.pending, value, failure))
        self.pending = []
        self._gathered.extend(ev for evs, _, _ in payloads for ev in evs)
        failures = [(r, f) for r, (_, _, f) in enumerate(payloads) if f]
        if failures:
            self.flush()
            raise RankFailure(failures, self.world)
        return [v for _, v, _ in payloads]

    def flush(self) -> None:
        if self._write is not None:
            for ev in self._gathered:
                self._write(ev)
        self._gathered = []


def stage(channel: RankChannel, work, share: bool = False):
    """Run `work` on every rank, then exchange outcomes; all ranks raise if one failed.
    With share=True every rank gets the list of all ranks' results."""
    value, failure = None, None
    try:
        value = work()
    except (RankFailure, KeyboardInterrupt, SystemExit):
        raise
    except UsageError as exc:
        failure = ("usage", _first_line(exc), "")
    except Exception as exc:
        failure = ("error", f"{type(exc).__name__}: {_first_line(exc)}",
                   "".join(traceback.format_exception(exc)))
    values = channel.exchange(value if share else None, failure)
    channel.flush()
    return values if share else value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def launcher_rank() -> int | None:
    """This process's rank as the launcher announced it, before MPI is initialised."""
    for key in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        if os.environ.get(key, "").isdigit():
            return int(os.environ[key])
    return None


def run_rank(spec, write) -> int:
    """Entry point from worker.main for one rank. Exit codes as the worker's."""
    faulthandler.enable()  # a segfault in a rank leaves its traceback on stderr
    try:
        from mpi4py import MPI
    except Exception as exc:
        if launcher_rank() in (None, 0):
            from couplescope.backends.mpi import INSTALL_HINT

            write(events.make("variant_failed", variant=spec.label, kind="usage", traceback="",
                              reason=f"mpi4py cannot be imported in the ranks ({exc}): {INSTALL_HINT}"))
        return 2
    comm = MPI.COMM_WORLD
    channel = RankChannel(comm, write, spec.label)
    try:
        return _run(spec, channel, MPI)
    except RankFailure as failure:
        channel.now("variant_failed", reason=failure.reason, kind=failure.kind, traceback=failure.traceback)
        return 2 if failure.kind == "usage" else 1
    except KeyboardInterrupt:
        # The parent (Ctrl-C, a stop) or the launcher (a peer died) ended the job. Only the
        # parent knows which, and it reports it; a guess here would be wrong half the time.
        return 130
    except BaseException as exc:  # a bug outside the stages: end the whole job, never hang
        print(f"couplescope rank {channel.rank}: {type(exc).__name__}: {_first_line(exc)}",
              file=sys.stderr, flush=True)
        traceback.print_exc()
        comm.Abort(1)
        return 1


def _run(spec, channel: RankChannel, MPI) -> int:
    from couplescope.engine import environment, measure

    comm, rank, world = channel.comm, channel.rank, channel.world
    if world < 2:
        raise RankFailure([(0, ("usage", "the mpi backend needs at least 2 ranks and this job has 1 "
                                         "(start it through couplescope, which runs mpiexec or srun)", ""))], 1)
    local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
    local_rank, local_size = local.Get_rank(), local.Get_size()
    set_threads(spec)  # before run_started, so its environment says what the rank runs
    if rank == 0:
        import mpi4py

        env = environment()
        env["mpi"] = {"library": MPI.Get_library_version().strip().splitlines()[0],
                      "mpi4py": mpi4py.__version__, "world_size": world, "launcher": spec.launcher}
        channel.now("run_started", spec=spec.to_dict(), environment=env)
    infos = stage(channel, lambda: _setup(spec, channel, local_rank, local_size), share=True)
    if rank == 0:
        for message in oversubscribed_hosts(infos):
            channel.now("diagnostic", level="warning", check="oversubscribed_ranks", message=message,
                        setting="--ranks, --oversubscribe")
    info = infos[rank]
    rank_spec = spec.replace(device=info["device"])
    tmpdir = tempfile.mkdtemp(prefix=f"couplescope-rank{rank}-")
    try:
        prepared = stage(channel, lambda: _prepare(rank_spec, tmpdir, rank))
        prepared.rank, prepared.world_size = rank, world  # the profiler names traces after them

        def load():
            t0 = perf_counter()
            prepared.coupling.load()
            return perf_counter() - t0

        loads = stage(channel, load, share=True)
        if rank == 0:
            channel.now("model_loaded", seconds=max(loads), per_rank_seconds=loads, size=prepared.size,
                        dtype=prepared.dtype, tolerance=prepared.tolerance, backend=spec.backend,
                        inner_backend=spec.inner_backend, ranks=world,
                        inputs={n: list(a.shape) for n, a in prepared.arrays.items()},
                        outputs={n: list(a.shape) for n, a in prepared.outputs.items()})
            _report_set_env(channel)
        step = StepExchange(channel, prepared)
        prepared.after_iteration = step
        stage(channel, lambda: measure(prepared, channel, "warmup", spec.warmup))
        stage(channel, lambda: measure(prepared, channel, "timed", spec.iterations))
        summaries = [{}] * world
        window = _profile_window() if spec.profile_iterations else None
        if window is not None:
            summaries = stage(channel, lambda: window(prepared, channel, spec) or {}, share=True)
        stage(channel, prepared.coupling.close)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    if rank == 0:
        summary = dict(summaries[0])
        if any(summaries[1:]):
            summary["profile_per_rank"] = summaries
        ranks = []
        for r, i in enumerate(infos):
            entry = dict(i)
            entry.update(step.samples.get(r, {}))
            entry["load_seconds"] = loads[r]
            ranks.append(entry)
        summary["ranks"] = ranks
        channel.now("variant_finished", summary=summary)
    return 0


def _report_set_env(channel: RankChannel) -> None:
    set_env = os.environ.get("COUPLESCOPE_MPI_SET_ENV")
    if set_env:
        channel.now("log", message="running as root: couplescope set "
                    + " ".join(f"{k}={os.environ.get(k, '1')}" for k in set_env.split(","))
                    + " so that Open MPI's mpiexec agrees to start the ranks")


def _profile_window():
    try:
        from couplescope.profiling import profile_window
    except ImportError:
        return None
    return profile_window


def _setup(spec, channel: RankChannel, local_rank: int, local_size: int) -> dict:
    """Threads and device for this rank; its rank_info event says what it actually got."""
    import torch

    cores = bound_cores()
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    device = rank_device(spec.device, local_rank, visible)
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    info = {"rank": channel.rank, "world_size": channel.world, "local_rank": local_rank,
            "local_size": local_size, "host": socket.gethostname(), "pid": os.getpid(),
            "cores": cores, "cores_text": cores_text(cores), "host_cores": os.cpu_count(),
            "threads": torch.get_num_threads(),
            "threads_from": "--threads" if spec.threads else "bound cores",
            "interop_threads": torch.get_num_interop_threads(),
            "device": device, "visible_devices": visible}
    channel("rank_info", **info)
    return info


def bound_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def set_threads(spec) -> int:
    """--threads, or one torch thread per core the launcher bound this rank to. (torch's
    own default counts the node's cores and would oversubscribe a bound rank.) Under
    Open MPI's default binding that is one core, so one thread: the reason CPU inference
    can run several times slower under mpirun than outside it."""
    import torch

    threads = spec.threads or max(1, len(bound_cores()) or (os.cpu_count() or 1))
    torch.set_num_threads(threads)
    return threads


def rank_device(requested: str, local_rank: int, visible: int) -> str:
    """cpu stays cpu; "cuda" maps rank r to cuda:(r mod visible devices), counting r within
    its node (on one node that is the global rank); "cuda:N" pins every rank to N."""
    if requested == "cpu":
        return "cpu"
    if visible == 0:
        from couplescope.devices import cuda_unavailable_reason

        reason = cuda_unavailable_reason(requested) or "no CUDA device is visible"
        raise UsageError(f"device '{requested}' is unavailable on the ranks: {reason}; choose: cpu")
    if requested == "cuda":
        return f"cuda:{local_rank % visible}"
    index = int(requested.split(":", 1)[1])
    if index >= visible:
        raise UsageError(f"device '{requested}' is unavailable on the ranks: there are {visible} "
                         f"CUDA devices (cuda:0 to cuda:{visible - 1})")
    return requested


def cores_text(cores: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    if not cores:
        return "?"
    parts, start, prev = [], cores[0], cores[0]
    for c in cores[1:] + [None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if c is not None:
            start = prev = c
    return ",".join(parts)


def _prepare(spec, tmpdir: str, rank: int):
    """The variant on this rank, with the rank's own inputs and the shared weights: for a
    model whose inputs take an offset (SimpleNet) rank r's input is base + r, as in the
    reference MPI example; for the others a seed derived from (seed, rank). Rank 0 sees
    exactly the inputs a single-process run sees."""
    import numpy as np

    from couplescope import catalogue
    from couplescope.engine import Prepared

    workload = catalogue.load(spec.model, spec.input_shape, spec.dtype)
    if "offset" in inspect.signature(workload.host_arrays).parameters:
        return Prepared(spec, tmpdir, rank_offset=float(rank))
    seed = spec.seed if rank == 0 else int(np.random.SeedSequence([spec.seed, rank]).generate_state(1)[0])
    return Prepared(spec, tmpdir, input_seed=seed)


class StepExchange:
    """Called after every iteration (outside the timed region): the step's exchange.
    After the first, small inputs and outputs travel too and rank 0 prints them."""

    def __init__(self, channel: RankChannel, prepared) -> None:
        self.channel = channel
        self.prepared = prepared
        self.samples: dict[int, dict] = {}
        self._sampled = False

    def __call__(self, kind: str, index: int) -> None:
        sample = None
        if not self._sampled:
            self._sampled = True
            sample = small_sample(self.prepared)
        values = self.channel.exchange(sample)
        if sample is not None and all(v is not None for v in values):
            self.samples = dict(enumerate(values))
            self.channel.now("log", verbatim=True, message=reference_lines(values))
        self.channel.flush()


def small_sample(prepared) -> dict | None:
    arrays = {**{f"in:{k}": v for k, v in prepared.arrays.items()},
              **{f"out:{k}": v for k, v in prepared.outputs.items()}}
    if any(a.size > SAMPLE_MAX_VALUES for a in arrays.values()):
        return None
    return {"input": {k: v.tolist() for k, v in prepared.arrays.items()},
            "output": {k: v.tolist() for k, v in prepared.outputs.items()}}


def reference_lines(samples: list[dict]) -> str:
    """The reference MPI example's lines: `input on rank 0: [  0.0,  1.0, ...]`."""
    lines = []
    for what in ("input", "output"):
        for r, s in enumerate(samples):
            for name, values in s[what].items():
                label = what if len(s[what]) == 1 else f"{what} {name}"
                lines.append(f"{label} on rank {r}: {format_values(values)}")
    return "\n".join(lines)


def format_values(values) -> str:
    """Fortran's (f5.1) as the reference prints; other numbers keep 4 significant digits."""
    if isinstance(values, list) and values and isinstance(values[0], list):
        return "[" + ", ".join(format_values(v) for v in values) + "]"
    if not isinstance(values, list):
        values = [values]
    simple = all(float(v).is_integer() and abs(v) < 1000 for v in values)
    return "[" + ",".join(f"{v:5.1f}" if simple else f"{v:11.4g}" for v in values) + "]"


def oversubscribed_hosts(infos: list[dict]) -> list[str]:
    """More ranks than cores on a node (only possible with --oversubscribe or a launcher
    that allows it): said from the ranks' own reports, so it holds with telemetry off."""
    by_host: dict[str, list[dict]] = {}
    for i in infos:
        by_host.setdefault(i["host"], []).append(i)
    return [f"{len(group)} ranks on the {group[0]['host_cores']} cores of {host}: the ranks time-share "
            "cores, so step times include waiting for one; use fewer --ranks for step times a "
            "simulation with a core per rank would see"
            for host, group in by_host.items() if group[0]["host_cores"] and len(group) > group[0]["host_cores"]]
