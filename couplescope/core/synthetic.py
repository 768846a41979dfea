"""Workers that make their events up from the spec: the third side of the worker seam.

For tests of what is shown and saved (the printer, exporters, the app, results.json):
`SyntheticWorkers` plays, for each variant, what a worker measuring it would write --
run_started, model_loaded, the warm-up, timed and profiled calls, variant_finished --
with call times drawn from a generator seeded by the spec, so a test sees the same
numbers on every machine. It needs no torch, no C++ compiler, no MPI and no recorded
file, and a variant whose backend starts several processes reports its calls per rank,
as an MPI job does.

What a recording cannot give, a `script` can: a function (spec, events) -> events that
edits the list before it is played, to add an event kind that is not recorded yet, fail
a check, or end without an ending event (a crash: the session then reports it as it
reports a worker that died). The events are made with the protocol's own constructor,
so they are exactly what the table allows (tests/test_synthetic.py checks that).

These are not measurements and never stand for one: the environment says
`"synthetic": true`, and nothing outside tests and `--replay`'s neighbours uses them.
"""

from __future__ import annotations

import os
import platform
import random
import socket
import time
import zlib

from couplescope.core.replay import PlayedWorker
from couplescope.protocol import columns, events

#: the phases a synthetic call is split into (shares of the call)
PHASES = {"marshal_in": 0.1, "forward": 0.8, "marshal_out": 0.1}


def environment(spec) -> dict:
    """A worker's environment as run_started reports it, marked synthetic."""
    from couplescope.protocol import __version__

    return {"couplescope": __version__, "torch": None, "numpy": None, "python": platform.python_version(),
            "torch_threads": spec.threads or 1, "torch_interop_threads": 1, "cpu_model": platform.processor(),
            "cores": os.cpu_count(), "cores_allowed": os.cpu_count(), "hostname": socket.gethostname(),
            "pid": os.getpid(), "start_time": time.strftime("%Y-%m-%dT%H:%M:%S"), "cuda_available": False,
            "synthetic": True}


def events_for(spec, seconds: float = 1e-3, processes: int | None = None, shares=None) -> list[events.Event]:
    """Everything a worker measuring `spec` writes, made up: calls of about `seconds`
    each (within 10%, seeded by the spec), every check passed. `processes`: the ranks
    (default: as many as the spec's backend starts). `shares`: a paced worker's timed
    iterations per round (--rounds), each round ended by its round_finished."""
    if processes is None:
        from couplescope import backends

        processes = backends.get(spec.backend).launcher(spec).processes(spec)
    name = spec.label
    rng = random.Random(zlib.crc32(f"{name}:{spec.seed}".encode()))
    size = spec.size or 1
    played = [events.make("run_started", name, spec=spec.to_dict(), environment=environment(spec),
                          coupling=f"{spec.backend} (synthetic)")]
    if processes > 1:
        played += [events.make("rank_info", name, rank=r, world_size=processes, local_rank=r,
                               local_size=processes, host=socket.gethostname(), pid=os.getpid(),
                               cores=[r], cores_text=str(r), host_cores=os.cpu_count(), threads=1,
                               threads_from="synthetic", interop_threads=1, device=spec.device,
                               visible_devices=None)
                   for r in range(processes)]
    played.append(events.make("model_loaded", name, seconds=0.01, size=size, dtype=spec.dtype or "float32",
                              tolerance=1e-6, backend=spec.backend, inputs={"x": [size, 1]},
                              outputs={"y": [size, 1]}))

    def call():
        total = seconds * (1 + 0.1 * rng.random())
        return {"seconds": total, "phases": {p: total * share for p, share in PHASES.items()},
                "max_rel_error": 0.0, "passed": True, "error": None}

    def calls(kind: str, first: int, count: int) -> list:
        if processes > 1:   # per rank, call by call (as MPI ranks report them)
            return [events.make("iteration", name, index=i, kind=kind, rank=r, **call())
                    for i in range(first, first + count) for r in range(processes)]
        if count:           # one batch, as the native host reports them
            records = [{"index": i, **call()} for i in range(first, first + count)]
            return [events.make("iterations", name, **columns.iteration_columns(kind, first, records))]
        return []

    played += calls("warmup", 1, spec.warmup)
    if shares is None:
        played += calls("timed", 1, spec.iterations)
    else:
        done = 0
        for number, count in enumerate(shares, 1):
            played += calls("timed", done + 1, count)
            played.append(events.make("round_finished", name, round=number, iterations=count))
            done += count
    played += calls("profiled", 1, spec.profile_iterations)
    played.append(events.make("variant_finished", name, summary={}))
    return played


class SyntheticWorkers:
    """Workers (couplescope.core.workers) that play `events_for(spec)`, edited by `script`."""

    processes = False   # nothing to sample

    def __init__(self, script=None, seconds: float = 1e-3, output=()) -> None:
        self.script = script
        self.seconds = seconds
        self.output = list(output)   # what every worker "printed"

    def prepare(self, spec, emit) -> None:
        """Nothing to build."""

    def start(self, spec, env: dict, shares=None) -> PlayedWorker:
        played = events_for(spec, self.seconds, shares=shares)
        if self.script is not None:
            played = self.script(spec, played)
        return PlayedWorker(spec, played, self.output, short="the synthetic worker ended early",
                            paced=shares is not None)


def request(specs, title: str = "synthetic", export: str | None = None, **settings):
    """A request for `specs` as given: named (couplescope.core.request.named), nothing
    checked against this machine (a spec's host stays what it says, so names do not
    change with the compilers installed). `settings`: run options (rounds, order_seed,
    baseline ...)."""
    from couplescope.core.request import RunRequest, named

    return RunRequest(title=title, specs=tuple(named(list(specs))), export=export,
                      **{"telemetry_hz": 0, **settings})
