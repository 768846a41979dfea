"""The backend contract: every hook a backend may implement, with the defaults.

A backend is one module in couplescope/backends/ defining `BACKEND`, an instance of a
`Backend` subclass, plus one line in `couplescope.backends.REGISTRY` (and its options,
if it has any, declared in couplescope/protocol/options.py). The same object serves both
sides of a run; its hooks come in four groups:

  what it is (naming and what it runs; cheap: no torch, so --list stays fast)
    name, model_kinds, tasks (and tasks_why), label_parts, describe, compiles_on_load,
    runs_bridge_modules, launches_one_graph, runs_inner_backend
    (which hosts make its calls is the hosts' declaration: couplescope.backends.hosts)
  may it run (the parent, before anything starts)
    unavailable, validate, check_device
  how its processes start (the parent)
    launcher(spec): a couplescope.backends.launcher.Launcher (command, env, processes,
    placement, the launcher's words about a crash or a lost node, cleanup)
  the worker side
    coupling_backend, needs_torchscript
    team   the processes that measure a variant together (one by default; mpi: ranks)
    open   the Coupling that makes one iteration's calls

The engine owns the loop, the checks and the events; a Coupling only knows how to
load the model once and make one iteration's calls, timing each phase with the phase
clock (couplescope.backends.clock). Nothing outside a backend's module asks which
backend it is: where behaviour differs, there is a hook here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from couplescope.protocol import events
from couplescope.protocol.contract import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE
from couplescope.protocol.errors import UsageError


@dataclass
class CouplingContext:
    """Everything a backend needs to build its Coupling in the worker."""

    spec: object                      # RunSpec
    workload: object                  # Workload
    size: int
    dtype: str
    arrays: dict                      # host inputs by name: numpy arrays, column-major
    outputs: dict                     # host outputs by name, preallocated, column-major
    calls: list                       # list[Call]: what each iteration calls
    torchscript_path: str | None      # the saved TorchScript file (None if not needed)
    clock: object                     # PhaseClock
    #: the eager model the engine built (the reference, and what is scripted or exported)
    eager: object = None
    #: report(event, **fields): an event of the variant, outside any timed region (a
    #: library host's driver build says how it goes with host_build events)
    report: object = lambda event, **fields: None
    device: str = "cpu"
    extra: dict = field(default_factory=dict)


class Coupling:
    """One backend's way of calling the model. Subclasses implement load() and call()."""

    def __init__(self, ctx: CouplingContext) -> None:
        self.ctx = ctx
        #: set by call() when the model's output could not be written (wrong shape ...)
        self.output_error: str | None = None

    def load(self) -> None:
        """Load the model once (timed as load_seconds; inside every call with reload)."""
        raise NotImplementedError

    def call(self) -> float | None:
        """Make one iteration's calls, writing into ctx.outputs and timing phases.

        Return None and the engine times the call around it; a host that times the call
        itself (the native host, in C++) returns the seconds it measured, so the step
        from Python into it stays outside the timed region."""
        raise NotImplementedError

    #: a Coupling that can make several iterations' calls back to back without Python in
    #: between (the native host) sets this to a callable; see couplescope.backends.native.batch
    call_batch = None

    #: set by a Coupling that compiles the model on its first load() (aoti's export and
    #: AOTInductor, the bridge's torch.compile) to the model_compiled event's fields:
    #: {"status": "compiled" or "cached", "seconds": what it timed, "compiler": ...}. The
    #: engine reports it on its own and takes its seconds out of the load time.
    compiled: dict | None = None

    #: seconds of loading done before load() and counted in the load time: a user's bridge
    #: module initialised once while the variant was built, so its reference() could run
    loaded_before: float = 0.0

    #: why torch.profiler in the worker cannot see the calls (they are made in another
    #: process: a library host's driver), or None; the profiled window is skipped saying so
    not_profiled: str | None = None

    def keep_for_probe(self):
        """What a training step changes that the operator probe's dispatch mode cannot see
        written (a CUDA graph's replay, a C++ optimizer's step count), kept before the probe:
        returns the function that puts it back after it, or None (everything a step writes
        goes through the dispatcher). couplescope.worker.operator_probe."""
        return None

    def close(self) -> None:
        pass


class Team:
    """The processes that measure one variant together, and how their events leave.

    This default is one process: events go straight to the event stream and a stage is
    just a call. A backend that starts several processes (mpi) returns a subclass whose
    ranks exchange events and outcomes at every stage, so that they all stop together
    when one fails. The engine calls these hooks at fixed points of its one loop and
    knows nothing more of the processes than `rank` and `world`.
    """

    rank = 0
    world = 1
    #: a training variant's digest of this process's weights, read after every step; a team
    #: of several processes fails the step when they differ (data-parallel training)
    step_digest = None
    #: distributedInfo's "backend" in traces (HolisticTraceAnalysis reads it)
    distributed_backend = "none"

    def __init__(self, spec, write) -> None:
        self.spec = spec
        self._write = write
        self.variant = spec.label

    # -- events ------------------------------------------------------------------------
    def emit(self, event: str, **fields) -> None:
        """An event of this process (iterations, its diagnostics)."""
        self._write(events.make(event, self.variant, **fields))

    def now(self, event: str, **fields) -> None:
        """An event of the variant as a whole, written once."""
        self._write(events.make(event, self.variant, **fields))

    def flush(self) -> None:
        """Write whatever events are still buffered (the run is ending)."""
        self._write.flush()

    # -- the loop's fixed points ---------------------------------------------------------
    def begin(self) -> None:
        """Before anything is reported: set torch's threads."""
        if self.spec.threads:
            import torch

            torch.set_num_threads(self.spec.threads)

    def environment(self) -> dict:
        """What run_started's environment adds for this kind of team."""
        return {}

    def stage(self, work, share: bool = False):
        """Run `work` (on every process); with share=True return every process's result."""
        value = work()
        return [value] if share else value

    def place(self) -> dict:
        """Where this process runs: at least {"device": ...} (the spec's device here)."""
        return {"device": self.spec.device}

    def placed(self, placements: list[dict]) -> None:
        """Every process's placement is known (a team may warn about it)."""

    def arrays_ready(self, inputs: dict, outputs: dict) -> None:
        """This process's host arrays exist (the arrays the coupling reads and writes)."""

    def loaded(self) -> None:
        """The model is loaded everywhere and model_loaded was written."""

    def after_iteration(self, kind: str, index: int) -> None:
        """Called after every iteration's event, outside the timed region."""

    def next_command(self) -> dict | None:
        """A variant measured in rounds (the worker started paced): the parent's next
        command, read from stdin (couplescope.protocol.contract: a round's iterations, or
        finish); None when the parent has gone. Blocks without using the CPU: the other
        variants are being measured meanwhile."""
        import sys

        from couplescope.protocol.contract import parse_command

        return parse_command(sys.stdin.readline())

    def gradient_reducer(self):
        """A training step's gradient averaging across processes (a callable taking the
        model's parameters, timed as the allreduce phase); None for one process."""
        return None


    def summary(self, summaries: list[dict], placements: list[dict], loads: list[float]) -> dict:
        """variant_finished's summary from every process's own."""
        return dict(summaries[0])

    def failed(self, exc: BaseException) -> int:
        """Report what ended the variant early; return the worker's exit code."""
        if isinstance(exc, UsageError):
            self.now("variant_failed", reason=first_line(exc), kind="usage", traceback="")
            return EXIT_USAGE
        if isinstance(exc, KeyboardInterrupt):
            self.now("variant_failed", reason="interrupted", kind="interrupted", traceback="")
            return EXIT_INTERRUPTED
        if isinstance(exc, Exception):
            import traceback

            # the type too: "bad config" alone does not say a user module raised ValueError
            self.now("variant_failed", reason=error_text(exc), kind="error",
                     traceback="".join(traceback.format_exception(exc)))
            return EXIT_FAILED
        raise exc


def grad_mode_guard(torch, grad_mode: str):
    """The context manager of a grad mode: no_grad (FTorch's AutoGradMode(false)) or
    inference_mode (the what-if)."""
    return torch.inference_mode() if grad_mode == "inference" else torch.no_grad()


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return essential_line(text) if text else type(exc).__name__


def error_text(exc: BaseException) -> str:
    """"Type: the essential line", the type said once (a TorchScript error's essential
    line already starts with its own)."""
    line = first_line(exc)
    return line if _SCRIPT_ERROR.match(line) else f"{type(exc).__name__}: {line}"


#: the error line at the end of a TorchScript interpreter traceback ("RuntimeError: ...")
_SCRIPT_ERROR = re.compile(r"^\s*(\w*(?:Error|Exception)): (.+)$")
_SCRIPT_HEADER = "The following operation failed in the TorchScript interpreter"
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
_HERE = "<--- HERE"


def essential_line(text: str) -> str:
    """The one line that says what went wrong. Most messages lead with it; a TorchScript
    interpreter error leads with "The following operation failed in the TorchScript
    interpreter." (after "RuntimeError: " when it came through the embedded host) and a
    traceback, and ends with the line that matters ("RuntimeError: mat1 and mat2 shapes
    cannot be multiplied (8x3 and 16x4)"), to which the operation that failed is added
    (script_operation); libtorch's C++ backtrace is never the line."""
    raw = text.strip().splitlines()
    lines = [line.strip() for line in raw if line.strip()]
    if not lines:
        return ""
    first = _SCRIPT_ERROR.match(lines[0])
    if (first.group(2) if first else lines[0]).startswith(_SCRIPT_HEADER):
        errors = [m.group(0).strip() for m in map(_SCRIPT_ERROR.match, lines[1:]) if m]
        if errors:
            where = script_operation(raw)
            return f"{errors[-1]} (at {where})" if where else errors[-1]
    return lines[0]


def script_operation(lines: list[str]) -> str | None:
    """Where a TorchScript error happened: "file:line: the code", from the traceback's
    innermost frame of the original code outside torch itself (the model's own line, not
    torch's nn/functional.py), else of the serialized code."""
    sections: list[list] = [[]]   # per traceback: [file, line, code line], innermost last
    for i, line in enumerate(lines):
        if line.startswith("Traceback of TorchScript"):
            sections.append([])
            continue
        frame = _FRAME.match(line)
        if frame:
            sections[-1].append([frame.group(1), frame.group(2), None])
        elif _HERE in line and sections[-1] and i > 0:
            sections[-1][-1][2] = lines[i - 1].strip()
    for section in reversed(sections):   # the original code's section comes last
        frames = [f for f in section if f[2]]
        if not frames:
            continue
        own = [f for f in frames if f"{os.sep}torch{os.sep}" not in f[0]] or frames
        path, number, code = own[-1]
        return f"{os.path.basename(path)}:{number}: {code}"
    return None


def check_task(backend, task: str) -> None:
    """Refuse a task the backend does not declare, in the one message shape."""
    if task not in backend.tasks:
        why = f": {backend.tasks_why}" if backend.tasks_why else ""
        raise UsageError(f"backend '{backend.name}' runs --task {' or '.join(backend.tasks)} only, "
                         f"not --task {task}{why}")


class Backend:
    """A backend's registry object. Override what differs; every hook is documented here."""

    name = ""
    #: the kinds of --model it runs (couplescope.workloads.catalogue.KINDS)
    model_kinds: tuple[str, ...] = ("catalogue", "torchscript-file")
    #: forward is one graph launch (CUDA Graph replay): a GPU idle between calls is not a
    #: sign of a launch-bound run, so the launch-bound diagnostic stays silent
    launches_one_graph = False
    #: the tasks (protocol.options.TASKS) it makes calls for; any other is refused by
    #: `validate` in one message shape, with `tasks_why` saying why
    tasks: tuple[str, ...] = ("infer", "train")
    tasks_why = ""
    #: its processes run another backend's calls (mpi: the inner backend's), so the hosts
    #: and tasks are that backend's (`coupling_backend`) and it has no calls of its own
    runs_inner_backend = False

    # -- parent side ---------------------------------------------------------------------
    def unavailable(self, spec=None) -> str | None:
        """Why it cannot run here (for `spec`, if given), in one line; None when it can."""
        return None

    def validate(self, spec) -> None:
        """Raise UsageError for a spec this backend cannot run (it is also called in the
        worker, so a spec that skipped validation is refused the same way)."""
        from couplescope.workloads.catalogue import kind

        check_task(self.coupling_backend(spec), spec.task)
        model_kind = kind(spec.model)
        if model_kind not in self.model_kinds:
            if model_kind == "bridge-module":
                raise UsageError(f"{spec.model} is a Python module: run it with --backend bridge "
                                 "(a bridge module) or --backend aoti (a module with make_model)")
            if model_kind == "exported-program":
                raise UsageError(f"{spec.model} is an exported program (.pt2): run it with --backend aoti")
            raise UsageError(f"{spec.model} is a {model_kind.replace('-', ' ')}; backend '{self.name}' "
                             f"runs {', '.join(k.replace('-', ' ') for k in self.model_kinds)}s")

    def check_device(self, spec) -> None:
        """Raise UsageError when the spec's device cannot be used here (in the parent)."""
        if spec.device == "cpu":
            return
        from couplescope.backends.devices import available, cuda_unavailable_reason

        reason = cuda_unavailable_reason(spec.device)
        if reason:
            raise UsageError(f"device '{spec.device}' is unavailable: {reason}; "
                             f"devices here: {', '.join(available())}")

    def label_parts(self, spec) -> list[str]:
        """Words after the backend's name in a variant's default name."""
        return []

    def describe(self, spec) -> list[str]:
        """Words after the backend's name in a variant's heading ("bridge model eager")."""
        return []

    def coupling_backend(self, spec) -> "Backend":
        """The backend whose Coupling each worker process runs (mpi: its inner backend)."""
        return self

    def needs_torchscript(self, spec) -> bool:
        """Whether the engine saves the model as TorchScript before opening the coupling."""
        return False

    def compiles_on_load(self, spec) -> bool:
        """Whether the first load compiles the model (or finds it compiled in the cache):
        front ends say so while it happens (aoti, the bridge's torch.compile)."""
        return False

    #: runs a user's bridge module (--model mine.py): the engine imports and initialises
    #: it once, for its reference(), and hands it to the coupling
    runs_bridge_modules = False

    def launcher(self, spec):
        """How the variant's worker processes are started, watched and cleaned up after
        (couplescope.backends.launcher): one process started directly, unless the backend
        launches several (mpi: mpiexec or srun)."""
        from couplescope.backends.launcher import DIRECT

        return DIRECT

    # -- worker side ---------------------------------------------------------------------
    def team(self, spec, write) -> Team:
        """The processes that measure a variant together (`write` is the event stream)."""
        return Team(spec, write)

    def open(self, ctx: CouplingContext) -> Coupling:
        """The python host's Coupling that makes one iteration's calls (in the worker, once
        per process); other hosts make theirs (couplescope.backends.hosts)."""
        raise NotImplementedError
