"""The rank side of the mpi backend: a Team whose ranks step together; rank 0 writes events.

mpiexec and srun forward every rank's stdout to the parent, so two ranks writing event
lines would interleave them. Instead each rank collects its events locally and, after
every iteration (outside the timed region), all ranks exchange them with one
`allgather`; rank 0 writes them, tagged with the rank. The exchange doubles as the
step's synchronisation point, as a halo exchange is in a simulation, so "iteration k"
means the same step on every rank and the slowest rank is the step time.

Failures: the engine runs every piece of work as a *stage*, whose outcome (done, or the
rank's error) travels in the same exchange, so when rank 1 raises, every rank learns it
at the next exchange and they all stop together; rank 0 reports "rank 1: <error>". A
rank that dies outright cannot say so: the launcher ends the job and the parent names
the rank from the launcher's own message (couplescope.backends.mpi). Nothing here waits
forever on a rank that is gone.

The engine (couplescope.worker.engine) runs the same loop for one process and for R
ranks; this module never imports it. It implements the hooks of
couplescope.backends.base.Team.
"""

from __future__ import annotations

import faulthandler
import os
import socket
import sys
import time
import traceback

from couplescope.backends.base import Team, first_line
from couplescope.backends.mpi import node_telemetry, nodes
from couplescope.backends.mpi.constants import INSTALL_HINT, SET_ENV_MARKER
from couplescope.protocol import events
from couplescope.protocol.contract import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE
from couplescope.protocol.errors import UsageError

#: inputs and outputs up to this many values are gathered and printed, as the
#: reference MPI example prints them
SAMPLE_MAX_VALUES = 20
#: how often ranks waiting for the next round look whether rank 0 has its command
WAIT_POLL_SECONDS = 0.002


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


class MpiMissing(Exception):
    """mpi4py cannot be imported in the ranks."""


class RankTeam(Team):
    """The ranks of one MPI job measuring a variant together."""

    distributed_backend = "mpi"

    def __init__(self, spec, write) -> None:
        super().__init__(spec, write)
        self.comm = None
        self.MPI = None
        self.local_rank = self.local_size = 0
        self.pending: list[dict] = []
        self._gathered: list[dict] = []
        self.samples: dict[int, dict] = {}   # the reference example's inputs and outputs
        self._sampled = False
        self._arrays = None                  # (inputs, outputs) of this rank, set by the engine
        self.node_sampler = None             # this node's sampler, on the node's first rank

    # -- events: collected per rank, written by rank 0 -------------------------------------
    def emit(self, event: str, **fields) -> None:
        fields.setdefault("rank", self.rank)
        self.pending.append(events.make(event, self.variant, **fields))

    def now(self, event: str, **fields) -> None:
        if self.rank == 0:
            self._write(events.make(event, self.variant, **fields))

    def exchange(self, value=None, failure=None) -> list:
        """All ranks: swap pending events, a value and a failure. Raises RankFailure when
        any rank failed (after keeping its events for `flush_gathered`)."""
        if self.node_sampler is not None:   # this node's samples leave with the rank's events
            self.pending.extend(self.node_sampler.events())
        payloads = self.comm.allgather((self.pending, value, failure))
        self.pending = []
        self._gathered.extend(ev for evs, _, _ in payloads for ev in evs)
        failures = [(r, f) for r, (_, _, f) in enumerate(payloads) if f]
        if failures:
            self.flush_gathered()
            raise RankFailure(failures, self.world)
        return [v for _, v, _ in payloads]

    def flush_gathered(self) -> None:
        if self.rank == 0:
            for ev in self._gathered:
                self._write(ev)
        self._gathered = []

    # -- the loop's fixed points ---------------------------------------------------------
    def begin(self) -> None:
        faulthandler.enable()  # a segfault in a rank leaves its traceback on stderr
        try:
            from mpi4py import MPI
        except Exception as exc:
            raise MpiMissing(f"mpi4py cannot be imported in the ranks ({exc}): {INSTALL_HINT}") from None
        self.MPI, self.comm = MPI, MPI.COMM_WORLD
        self.rank, self.world = self.comm.Get_rank(), self.comm.Get_size()
        if self.world < 2:
            tasks = os.environ.get("SLURM_NTASKS", "")
            if tasks.isdigit() and int(tasks) > 1:   # srun started N tasks; MPI saw N worlds of 1
                message = (f"Slurm started {tasks} tasks but MPI sees a world of 1 in each: srun's PMI "
                           "does not match this MPI; pass --launcher-args=--mpi=pmix (Open MPI 5) or "
                           "--mpi=pmi2 (MPICH, Intel MPI), from what `srun --mpi=list` offers")
            else:
                message = ("the mpi backend needs at least 2 ranks and this job has 1 "
                           "(start it through couplescope, which runs mpiexec or srun)")
            raise RankFailure([(0, ("usage", message, ""))], 1)
        # by node name, as the table groups them (couplescope.backends.mpi.nodes says why)
        self.local_rank, self.local_size = nodes.local_rank(self.comm.allgather(nodes.node_name()), self.rank)
        set_threads(self.spec)  # before run_started, so its environment says what the rank runs

    def environment(self) -> dict:
        import mpi4py

        return {"mpi": {"library": self.MPI.Get_library_version().strip().splitlines()[0],
                        "mpi4py": mpi4py.__version__, "world_size": self.world,
                        "launcher": self.spec.launcher}}

    def stage(self, work, share: bool = False):
        """Run `work` on every rank, then exchange outcomes; all ranks raise if one failed.
        With share=True every rank gets the list of all ranks' results."""
        value, failure = None, None
        try:
            value = work()
        except (RankFailure, KeyboardInterrupt, SystemExit):
            raise
        except UsageError as exc:
            failure = ("usage", first_line(exc), "")
        except Exception as exc:
            failure = ("error", f"{type(exc).__name__}: {first_line(exc)}",
                       "".join(traceback.format_exception(exc)))
        values = self.exchange(value if share else None, failure)
        self.flush_gathered()
        return values if share else value

    def place(self) -> dict:
        """Threads and device for this rank; its rank_info event says what it actually got."""
        import torch

        cores = bound_cores()
        visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
        device = rank_device(self.spec.device, self.local_rank, visible)
        if device.startswith("cuda"):
            torch.cuda.set_device(torch.device(device))
        cpus, cpus_from = nodes.node_cpus()
        info = {"rank": self.rank, "world_size": self.world, "local_rank": self.local_rank,
                "local_size": self.local_size, "host": socket.gethostname(), "pid": os.getpid(),
                "node": nodes.node_name(), "node_cpus": cpus, "node_cpus_from": cpus_from,
                "cores": cores, "cores_text": cores_text(cores), "host_cores": os.cpu_count(),
                "threads": torch.get_num_threads(),
                "threads_from": "--threads" if self.spec.threads else "bound cores",
                "interop_threads": torch.get_num_interop_threads(),
                "device": device, "visible_devices": visible,
                "gpu_slot": nodes.gpu_slot(self.local_rank, visible)}
        self.emit("rank_info", **info)
        return info

    def placed(self, placements: list[dict]) -> None:
        if self.rank == 0:
            for found in nodes.oversubscribed_nodes(placements):
                self.now("diagnostic", level="warning", **found)
        try:
            self.node_sampler = node_telemetry.start(self, placements)
        except Exception as exc:   # telemetry must never stop a measurement
            self.emit("log", message=f"telemetry: the sampler of node {placements[self.rank].get('node')} "
                                     f"did not start ({type(exc).__name__}: {first_line(exc)})")

    def arrays_ready(self, inputs: dict, outputs: dict) -> None:
        self._arrays = (inputs, outputs)   # sampled after the first step

    def loaded(self) -> None:
        if self.node_sampler is not None:
            self.node_sampler.running(None)
        set_env = os.environ.get(SET_ENV_MARKER)
        if set_env:
            self.now("log", message="running as root: couplescope set "
                     + " ".join(f"{k}={os.environ.get(k, '1')}" for k in set_env.split(","))
                     + " so that Open MPI's mpiexec agrees to start the ranks")

    def after_iteration(self, kind: str, index: int) -> None:
        """The step's exchange. After the first, small inputs and outputs travel too and
        rank 0 prints them, as the reference MPI example does. A training step's weight
        digests travel in it as well: ranks that differ fail the step's check."""
        if self.node_sampler is not None:
            self.node_sampler.running(kind, index)
        sample = None
        # a training step writes no output (as in FTorch's example 11): nothing to print of it
        if not self._sampled and self._arrays is not None and self.spec.task != "train":
            self._sampled = True
            sample = small_sample(*self._arrays)
        digest = self.step_digest() if self.step_digest is not None else None
        values = self.exchange((sample, digest))
        samples = [v[0] for v in values]
        if sample is not None and all(v is not None for v in samples):
            self.samples = dict(enumerate(samples))
            self.now("log", verbatim=True, message=reference_lines(samples))
        digests = [v[1] for v in values]
        if digest is not None and any(d != digests[0] for d in digests):
            self._fail_step(kind, index, digests)
        self.flush_gathered()

    def _fail_step(self, kind: str, index: int, digests: list) -> None:
        """The ranks hold different weights after this step: every rank's record of it
        fails, naming the ranks that differ from rank 0."""
        differ = [r for r, d in enumerate(digests) if d != digests[0]]
        message = (f"ranks {', '.join(map(str, differ))} hold different weights from rank 0 after "
                   f"{kind} step {index}: the gradients were not averaged alike")
        for ev in self._gathered:
            if ev.get("event") == "iteration" and ev.get("kind") == kind and ev.get("index") == index:
                ev["passed"], ev["error"] = False, message

    def next_command(self) -> dict | None:
        """Rank 0 reads the parent's command (mpiexec and srun give the launcher's stdin to
        rank 0 only: srun is told so); every rank gets it. The others wait on a non-blocking
        barrier polled with sleeps: a blocking collective spins at 100% of a core in Open MPI,
        which would load the machine the other variants are measured on."""
        self.flush_gathered()
        command, failure = None, None
        if self.rank == 0:
            try:
                command = super().next_command()
            except ValueError as exc:   # not a command: every rank must still hear of it
                failure = str(exc)
        request = self.comm.Ibarrier()
        while not request.Test():
            time.sleep(WAIT_POLL_SECONDS)
        command, failure = self.comm.bcast((command, failure), root=0)
        if failure:
            raise RankFailure([(0, ("error", failure, ""))], self.world)
        return command

    def gradient_reducer(self):
        """Data-parallel training as a simulation with MPI_Allreduce does it: after backward,
        each gradient summed over the ranks in place (one Allreduce per parameter, on the
        memory torch holds it in) and divided by the ranks. The optimizer step then applies
        the same average on every rank."""
        comm, MPI, world = self.comm, self.MPI, self.world

        def allreduce(parameters) -> None:
            for p in parameters:
                grad = p.grad
                if grad is None:
                    continue
                if grad.device.type == "cpu":
                    comm.Allreduce(MPI.IN_PLACE, grad.numpy(), op=MPI.SUM)
                else:   # through host memory: mpi4py without a CUDA-aware MPI
                    host = grad.cpu().numpy()
                    comm.Allreduce(MPI.IN_PLACE, host, op=MPI.SUM)
                    grad.copy_(grad.new_tensor(host))
                grad.div_(world)
        return allreduce

    def summary(self, summaries: list[dict], placements: list[dict], loads: list[float]) -> dict:
        self._last_samples()
        summary = dict(summaries[0])
        if any(summaries[1:]):
            summary["profile_per_rank"] = summaries
        ranks = []
        for r, placement in enumerate(placements):
            entry = dict(placement)
            entry.update(self.samples.get(r, {}))
            entry["load_seconds"] = loads[r]
            ranks.append(entry)
        summary["ranks"] = ranks
        return summary

    def _last_samples(self) -> None:
        """Every rank, at the end of a variant: one more exchange, which carries the node
        samplers' last samples (and the first, on a run shorter than a sampler's start)."""
        sampler, self.node_sampler = self.node_sampler, None
        if sampler is not None:
            self.pending.extend(sampler.last_events())
        self.exchange()
        self.flush_gathered()

    def flush(self) -> None:
        self.stop_node_sampler()
        self._write.flush()

    def stop_node_sampler(self) -> None:
        """The run is over on this rank: its node's sampler ends. What it sent since the
        last exchange (a sampling period at most) is dropped: the variant has ended."""
        sampler, self.node_sampler = self.node_sampler, None
        if sampler is not None:
            sampler.stop()

    def failed(self, exc: BaseException) -> int:
        if isinstance(exc, MpiMissing):
            if launcher_rank() in (None, 0):
                self._write(events.make("variant_failed", self.variant, kind="usage", traceback="",
                                        reason=str(exc)))
            return EXIT_USAGE
        if isinstance(exc, RankFailure):
            self.now("variant_failed", reason=exc.reason, kind=exc.kind, traceback=exc.traceback)
            return EXIT_USAGE if exc.kind == "usage" else EXIT_FAILED
        if isinstance(exc, KeyboardInterrupt):
            # The parent (Ctrl-C, a stop) or the launcher (a peer died) ended the job. Only the
            # parent knows which, and it reports it; a guess here would be wrong half the time.
            return EXIT_INTERRUPTED
        # a bug outside the stages: end the whole job, never hang
        print(f"couplescope rank {self.rank}: {type(exc).__name__}: {first_line(exc)}",
              file=sys.stderr, flush=True)
        traceback.print_exception(exc)
        if self.comm is not None:
            self.comm.Abort(1)
        return EXIT_FAILED


def launcher_rank() -> int | None:
    """This process's rank as the launcher announced it, before MPI is initialised."""
    for key in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        if os.environ.get(key, "").isdigit():
            return int(os.environ[key])
    return None


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
        from couplescope.backends.devices import cuda_unavailable_reason

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


def small_sample(inputs: dict, outputs: dict) -> dict | None:
    arrays = {**{f"in:{k}": v for k, v in inputs.items()}, **{f"out:{k}": v for k, v in outputs.items()}}
    if any(a.size > SAMPLE_MAX_VALUES for a in arrays.values()):
        return None
    return {"input": {k: v.tolist() for k, v in inputs.items()},
            "output": {k: v.tolist() for k, v in outputs.items()}}


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
