"""The worker's side of a library host: the driver built, the host arrays shared, the calls made.

A library host (the user's FTorch, their forpy) makes the calls from a Fortran driver in a
process of its own (couplescope.backends.hosts.driver says why). This Coupling, in the
worker, builds the driver for the variant's signature (or finds it in the cache), moves
the host arrays into the file both processes map (the engine's dictionaries keep their
names; the arrays behind them now live in the shared file), starts the driver, and
asks it for a load, one call (`call`), or a batch of calls made back to back in Fortran
(`DriverBatchRunner`, the native host's batches by another route). Timings come back as
binary records in the shared file, written after each iteration's last clock read.
"""

from __future__ import annotations

import os
import zipfile

import numpy as np

from couplescope.backends.base import Coupling
from couplescope.backends.batch import BATCH_SECONDS, MAX_BATCH, MAX_SNAPSHOT_BYTES, BatchRunner, columns_of
from couplescope.backends.hosts.driver.build import DriverBuild, ensure_built, facts
from couplescope.backends.hosts.driver.process import DriverEnded, DriverProcess, DriverRaised, driver_env
from couplescope.backends.hosts.driver.shared_file import SharedFile
from couplescope.protocol.errors import UsageError


def capacity_for(nbytes: int) -> int:
    """The most iterations a batch holds: BatchRunner's rule (MAX_BATCH, MAX_SNAPSHOT_BYTES)."""
    return max(1, min(MAX_BATCH, MAX_SNAPSHOT_BYTES // max(nbytes, 1)))


def archive_version(path: str) -> str:
    """The TorchScript file's format version (its archive's `version` record), or ""."""
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if n.endswith("/version") or n == "version"]
            return z.read(names[0]).decode().strip() if names else ""
    except (OSError, zipfile.BadZipFile, KeyError):
        return ""


def load_refusal(facts: dict, path: str, saved_by: str | None, error: str, library: str = "FTorch",
                 driver: str = "the ftorch driver") -> str:
    """One line: which library and libtorch could not load which file, saved by which torch
    (the worker's, for a model it saved; else the file's format version), and why."""
    made = (f"saved by torch {saved_by}" if saved_by
            else f"TorchScript file format {archive_version(path) or 'unknown'}")
    reason = error.split(": ", 1)[1] if error.startswith(f"{driver} stopped") else error
    return (f"the {library} at {facts.get('library_dir') or '?'} (libtorch {facts.get('torch_version') or '?'}) "
            f"cannot load {os.path.basename(path)} ({made}): {reason}")


def torchscript_load_failure(coupling, library: str, error: str) -> UsageError:
    """A TorchScript file the user's libtorch cannot load (its driver died loading it): one
    line naming both versions (load_refusal)."""
    import torch

    path = coupling.ctx.torchscript_path
    users_file = coupling.ctx.spec.model.endswith((".pt", ".pth"))
    return UsageError(load_refusal(coupling.build_facts, path, None if users_file else torch.__version__, error,
                                   library, f"the {coupling.host} driver"))


class LibraryCoupling(Coupling):
    """What every library host's Coupling shares; a subclass says what the driver is
    (`driver_build`, `phases`, `config`) and how a load failure reads (`load_failure`)."""

    #: the host's name: its cache folder and its words in messages
    host = ""
    #: the phases of a timings row after its whole, in order
    phases: tuple[str, ...] = ()
    #: what the driver prints on stderr also goes to the run's output (a Python module's print())
    echo_output = False
    #: the host arrays' memory order in the shared file: "F", the Fortran arrays of the
    #: tensors' shapes; "C", the Fortran arrays declared with the dimensions reversed (a
    #: library that reverses them itself: pytorch-fortran)
    array_order = "F"

    @property
    def not_profiled(self) -> str:
        return (f"the {self.host} host's calls run in its driver process, which torch.profiler "
                "in the worker cannot see")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        from couplescope.protocol import scratch

        self.training = ctx.spec.task == "train"
        self.driver = None
        #: the driver's resident memory after the load, and the calls it has made since: a
        #: compiler that does not finalize FTorch's temporaries shows here (docs/training.md)
        self.loaded_rss: int | None = None
        self.calls_made = 0
        self._losses: list[float] = []
        self._grads_read = False
        build = self.driver_build()
        self.executable, seconds, self.build_dir = ensure_built(build, self.report_build)
        self.build_facts = {**facts(self.build_dir), **self.library_facts()}
        said = {"directory": self.build_dir, "host": self.host, "library": self.build_facts}
        if seconds is None:
            self.report("host_build", status="cached", **said)
        else:
            self.report("host_build", status="built", seconds=round(seconds, 3), **said)
        folder = scratch.subfolder(f"{self.host}-")
        self.file = SharedFile(folder, "shared")
        self.config_path = os.path.join(folder, "config")
        self.lay_out()
        self.file.open()
        self.share_arrays()
        with open(self.config_path, "w") as f:
            f.write(self.config())
        # Fortran's timings(1 + phases, capacity): a row per iteration, its whole first
        self.timings = self.file.bytes("timings", self.capacity, 8 * (1 + len(self.phases))).view(np.float64)
        self.step_losses = self.file.array("losses", (self.capacity,), np.float64)
        self.driver = DriverProcess([self.executable, self.file.path, self.config_path],
                                    self.driver_environment(), f"the {self.host} driver", self.echo_output)
        if not ctx.spec.reload_every_call:
            self.call_batch = DriverBatchRunner(self)

    # -- what a subclass says ----------------------------------------------------------------
    def driver_build(self) -> DriverBuild:
        raise NotImplementedError

    def config(self) -> str:
        raise NotImplementedError

    def load_failure(self, error: str) -> Exception:
        return RuntimeError(error)

    def driver_environment(self) -> dict:
        return driver_env(self.ctx.spec.threads)

    def raised(self, text: str) -> None:
        """A call that raised (the driver answered "raised 0 TEXT"): the engine's error,
        raised here, or (a host that says so) the call's output_error."""
        raise RuntimeError(text)

    def library_facts(self) -> dict:
        """What the host knows of the library beyond what CMake wrote (its name, version)."""
        return {}

    # -- reporting -----------------------------------------------------------------------------
    def report(self, event: str, **fields) -> None:
        self.ctx.report(event, **fields)

    def report_build(self, words: str) -> None:
        self.report("host_build", status="building", directory="", host=self.host, message=words)

    # -- the shared file -----------------------------------------------------------------------
    def lay_out(self) -> None:
        """Regions for the host arrays (inputs, outputs, training targets and loss buffers),
        the outputs' NaN patterns and snapshots, the timings, the losses, the data rows."""
        ctx, f = self.ctx, self.file
        for name, a in ctx.arrays.items():
            f.add(f"in:{name}", a.nbytes)
        for name, a in ctx.outputs.items():
            f.add(f"out:{name}", a.nbytes)
            f.add(f"nan:{name}", a.nbytes)
        out_bytes = sum(a.nbytes for a in ctx.outputs.values())
        fed_bytes = 0
        if self.training:
            for name, a in ctx.extra["targets"].items():
                f.add(f"target:{name}", a.nbytes)
            for c in range(len(ctx.calls)):
                f.add(f"loss:{c}", 8)
            fed_bytes = sum(a.nbytes for a in ctx.arrays.values()) + \
                sum(a.nbytes for a in ctx.extra["targets"].values())
        self.capacity = capacity_for(max(out_bytes if not self.training else 0, fed_bytes))
        for name, a in ctx.outputs.items():
            f.add(f"snap:{name}", 0 if self.training else self.capacity * a.nbytes)
        if self.training:
            for name, a in ctx.arrays.items():
                f.add(f"rows:in:{name}", self.capacity * a.nbytes)
            for name, a in ctx.extra["targets"].items():
                f.add(f"rows:target:{name}", self.capacity * a.nbytes)
            for i, p in enumerate(self.parameters()):
                f.add(f"weight:{i}", p.nbytes)
                f.add(f"grad:{i}", p.nbytes)
        f.add("timings", self.capacity * 8 * (1 + len(self.phases)))
        f.add("losses", self.capacity * 8)

    def array_config(self) -> tuple[list, list]:
        """(calls, feeds) as driver_program.config_text takes them: per workload call its
        inputs', output's and target's (offset, shape), its NaN pattern, snapshots and
        bytes, its loss buffer; per fed array its offset, its rows' offset and bytes. A
        training step's outputs are neither reset nor kept (0 bytes): only its loss,
        weights and gradients are checked."""
        ctx, f = self.ctx, self.file
        calls = []
        for c, call in enumerate(ctx.calls):
            out = ctx.outputs[call.output]
            target = ((f.offsets[f"target:{call.output}"], out.shape) if self.training else None)
            calls.append(([(f.offsets[f"in:{n}"], ctx.arrays[n].shape) for n in call.inputs],
                          (f.offsets[f"out:{call.output}"], out.shape), target,
                          (f.offsets[f"nan:{call.output}"], f.offsets[f"snap:{call.output}"],
                           0 if self.training else out.nbytes),
                          f.offsets[f"loss:{c}"] if self.training else None))
        feeds = []
        if self.training:
            feeds = [(f.offsets[f"in:{n}"], f.offsets[f"rows:in:{n}"], a.nbytes) for n, a in ctx.arrays.items()]
            feeds += [(f.offsets[f"target:{n}"], f.offsets[f"rows:target:{n}"], a.nbytes)
                      for n, a in ctx.extra["targets"].items()]
        return calls, feeds

    def parameters(self) -> list:
        """The eager model's parameters as numpy arrays (shapes and dtypes of what the
        driver's model holds, in its parameters() order)."""
        return [p.detach().cpu().numpy() for p in self.ctx.eager.parameters()] if self.training else []

    def share_arrays(self) -> None:
        """The host arrays moved into the shared file, under the same names: the engine, the
        checks and a training variant's data fill work on what the driver reads."""
        ctx, f = self.ctx, self.file
        for prefix, arrays in (("in", ctx.arrays), ("out", ctx.outputs),
                               *((("target", ctx.extra["targets"]),) if self.training else ())):
            for name, a in list(arrays.items()):
                shared = f.array(f"{prefix}:{name}", a.shape, a.dtype, self.array_order)
                shared[...] = a
                arrays[name] = shared
        for name, a in ctx.outputs.items():
            f.array(f"nan:{name}", a.shape, a.dtype, self.array_order)[...] = np.nan

    # -- the calls -------------------------------------------------------------------------------
    def load(self) -> None:
        try:
            self.driver.ask("load", "loaded")
        except DriverEnded as exc:
            raise self.load_failure(str(exc)) from None
        self.loaded_rss = self.driver.resident_bytes()

    def call(self) -> float | None:
        """One iteration (the engine reset the outputs or filled the step's data)."""
        try:
            self.driver.ask("call 1 0 0", "done")
        except DriverRaised as exc:
            self.calls_made += 1
            self.raised(exc.text)
            return float(self.timings[0][0])   # the call that raised, timed as any other
        self.calls_made += 1
        row = self.timings[0]
        phases = self.ctx.clock.phases
        for name, value in zip(self.phases, row[1:]):
            if value:
                phases[name] = phases.get(name, 0.0) + float(value)
        if self.training:
            self._losses.append(float(self.step_losses[0]))
        return float(row[0])

    def take_losses(self) -> float:
        losses, self._losses = self._losses, []
        return sum(losses) / len(losses) if losses else float("nan")

    def state(self) -> dict:
        """{name: (weight, grad or None)}: read back through the driver (the gradients only
        the first time: the first step's check; later reads are of the weights)."""
        grads = not self._grads_read
        self.driver.ask("state" if grads else "weights", "state")
        self._grads_read = True
        names = [n for n, _ in self.ctx.eager.named_parameters()]
        out = {}
        for i, (name, p) in enumerate(zip(names, self.parameters())):
            weight = self.file.array(f"weight:{i}", p.shape, p.dtype).copy()
            grad = self.file.array(f"grad:{i}", p.shape, p.dtype).copy() if grads else None
            out[name] = (weight, grad)
        return out

    def report_memory(self) -> None:
        """One line on what the driver's resident memory did over its calls (a leak of the
        user's library, or of their compiler's code, shows here)."""
        end = self.driver.resident_bytes()
        if self.loaded_rss is None or end is None or not self.calls_made:
            return
        grew = end - self.loaded_rss
        per_call = grew / self.calls_made
        self.report("log", message=f"the {self.host} driver's resident memory: {self.loaded_rss / 2**20:.1f} MiB "
                                   f"after the load, {end / 2**20:.1f} MiB after {self.calls_made} calls "
                                   f"({grew / 2**20:+.1f} MiB, {per_call / 1024:+.2f} KiB a call)")

    def save(self, path: str) -> None:
        self.driver.ask(f"save {path}", "saved")

    def close(self) -> None:
        if self.driver is not None:
            self.report_memory()
            self.driver.end()
            self.driver = None
        self.call_batch = None
        self.timings = self.step_losses = None


class DriverBatchRunner(BatchRunner):
    """Batches made by the driver: NaN into the outputs, the step's data, the calls and the
    snapshots, all in Fortran, back to back (couplescope.backends.batch says why)."""

    def __init__(self, coupling: LibraryCoupling) -> None:
        outputs = {} if coupling.training else coupling.ctx.outputs
        super().__init__(outputs, coupling.ctx.arrays)
        self.coupling = coupling
        self.capacity = coupling.capacity
        self.order = coupling.array_order
        f = coupling.file
        # the NaN patterns and snapshots the driver copies live in the shared file
        self._nan = {n: f.array(f"nan:{n}", a.shape, a.dtype, self.order) for n, a in outputs.items()}
        self._snapshots = {n: f.bytes(f"snap:{n}", self.capacity, a.nbytes) for n, a in outputs.items()}

    def _calls(self, count: int, stop):
        coupling = self.coupling
        count = min(count, self.capacity)
        feed = 0
        if self.feeder is not None:   # a training batch: every step's inputs and targets
            rows = self.feeder.fill_rows(count)
            for key, (array, buffer) in rows.items():
                coupling.file.bytes(f"rows:{key}", self.capacity, array.nbytes)[:count] = buffer
            feed = 1 if rows else 0
        failure = None
        try:
            made = int(coupling.driver.ask(f"batch {count} {BATCH_SECONDS!r} {feed}", "done"))
        except DriverRaised as exc:   # iteration made + 1 raised (its row timed): the batch ends there
            made, failure = exc.made, (exc.text, float(coupling.timings[exc.made][0]))
        except DriverEnded as exc:
            if self.feeder is not None:
                self.feeder.unfill(count)
            return columns_of([]), (str(exc), 0.0)
        if self.feeder is not None and made < count:
            self.feeder.unfill(count - made)   # the steps not made: the next batch makes them on the same data
        coupling.calls_made += made
        raw = []
        for k in range(made):
            row = coupling.timings[k]
            phases = {name: float(v) for name, v in zip(coupling.phases, row[1:]) if v}
            extra = {"loss": float(coupling.step_losses[k])} if coupling.training else {}
            raw.append((float(row[0]), phases, None, extra))
        return columns_of(raw), failure
