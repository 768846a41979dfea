"""The `couplescope` command: argument parsing and dispatch to a front end.

Headless when given --preset or --model; the Textual app with --tui (or with no
arguments in a terminal). This module imports neither torch nor textual at import time,
so `couplescope --help` is instant; each mode imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys

from couplescope.errors import UsageError

EXAMPLES = """\
examples:
  couplescope --preset stride512 --export      the reference StrideNet benchmark, saved to ./couplescope-runs
  couplescope --model cgdrag --size 1024 --backend torchscript,bridge
  couplescope --model stride --size 64 --layout c   the transposition bug: its checks FAIL
  couplescope --model net.pt --input-shape 8,16 --dtype float32
  couplescope --list                           models, backends, presets and devices
  couplescope --tensorboard couplescope-runs/<run>   open a run's traces in TensorBoard
  couplescope --tui --preset cgdrag            the interactive app, filled in

exit codes: 0 all checks passed, 1 a check failed, 2 bad input, 130 interrupted.
docs: docs/ in the source tree (usage, presets, results schema, bridge contract).
"""

#: command-line option -> RunSpec field, for the options that override a preset
SPEC_OPTIONS = ("model", "backend", "size", "bridge_model", "device", "dtype", "layout", "warmup",
                "iterations", "threads", "seed", "reload_every_call", "input_shape",
                "profile_iterations", "profile_max_ops", "pinned", "ranks", "inner_backend", "launcher",
                "launcher_args", "oversubscribe")


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like every other bad input
        self.exit(2, f"couplescope: {message} (see couplescope --help)\n")


def _int_at_least(low: int):
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low} (got {value})")
        return value
    return convert


def build_parser() -> Parser:
    p = Parser(prog="couplescope", formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Measure what each way of coupling a simulation code to a PyTorch model "
                           "costs (direct TorchScript as FTorch does, embedded Python as forpy does, "
                           "CUDA Graphs, MPI fan-out) and check that it still gives the right answer.",
               epilog=EXAMPLES)
    what = p.add_argument_group("what to run")
    what.add_argument("--preset", metavar="NAME|FILE", help="a named preset (see --list) or a TOML file")
    what.add_argument("--model", metavar="NAME|FILE",
                      help="a catalogue model (see --list), a TorchScript .pt file or a bridge module .py")
    what.add_argument("--backend", metavar="NAME[,NAME]",
                      help="coupling: torchscript (default), bridge, cudagraph, mpi; a comma list runs each")
    what.add_argument("--size", metavar="N[,N]",
                      help="the model's size parameter (see --list); a comma list sweeps it")
    what.add_argument("--bridge-model", choices=("eager", "torchscript"),
                      help="what the bridge module runs: the Python runtime or a TorchScript file "
                           "(default torchscript)")
    what.add_argument("--device", metavar="DEV", help="cpu (default), cuda or cuda:N")
    what.add_argument("--dtype", metavar="TYPE", help="float32, float64 or float16 (default: the model's)")
    what.add_argument("--layout", metavar="ORDER",
                      help="fortran (default, correct) or c: read the column-major host memory as "
                           "row-major, the classic transposition bug")
    what.add_argument("--input-shape", metavar="SHAPE",
                      help="input shape(s) for a .pt model, e.g. 8,16 or 8,16;8,1")
    how = p.add_argument_group("how to measure")
    how.add_argument("--iterations", type=_int_at_least(1), metavar="N", help="timed iterations (default 10)")
    how.add_argument("--warmup", type=_int_at_least(0), metavar="N",
                     help="warm-up iterations, reported but not in the statistics (default 1)")
    how.add_argument("--threads", type=_int_at_least(1), metavar="N",
                     help="torch intra-op threads (default: torch's own)")
    how.add_argument("--seed", type=_int_at_least(0), metavar="N", help="seed for weights and inputs (default 0)")
    how.add_argument("--reload-every-call", action="store_true", default=None,
                     help="load the model inside every call (FTorch's looping example: what not to do)")
    prof = p.add_argument_group("profiling and traces")
    prof.add_argument("--profile-iterations", type=_int_at_least(0), metavar="N",
                      help="iterations profiled with torch.profiler after the timed ones, never in the "
                           "statistics; 0 turns profiling off")
    prof.add_argument("--profile-max-ops", type=_int_at_least(1), metavar="N",
                      help="profile only when the window records at most N operators (default 10000): "
                           "a trace of an element-by-element model such as stride at N=512 would take "
                           "minutes and gigabytes")
    prof.add_argument("--export", nargs="?", const="couplescope-runs", metavar="DIR",
                      help="write results.json, events.jsonl and traces to a new run directory in DIR "
                           "(default ./couplescope-runs)")
    prof.add_argument("--tensorboard", metavar="RUN_DIR",
                      help="open a run directory's traces in TensorBoard on 127.0.0.1")
    prof.add_argument("--port", type=_int_at_least(1), metavar="N", help="TensorBoard port (default: a free one)")
    tele = p.add_argument_group("telemetry")
    tele.add_argument("--telemetry-hz", type=float, metavar="HZ", default=10.0,
                      help="CPU/GPU sampling rate while a run goes (default 10; 0 turns it off)")
    gpu = p.add_argument_group("GPU")
    gpu.add_argument("--pinned", action="store_true", default=None, help="pinned host memory for device copies")
    mpi = p.add_argument_group("MPI (--backend mpi)")
    mpi.add_argument("--ranks", type=int, metavar="R", help="MPI ranks (at least 2; default 2)")
    mpi.add_argument("--inner-backend", metavar="NAME", help="the coupling each rank runs (default torchscript)")
    mpi.add_argument("--launcher", metavar="NAME", help="mpiexec (default) or srun")
    mpi.add_argument("--launcher-args", metavar="ARGS", help="extra arguments for the launcher, quoted")
    mpi.add_argument("--oversubscribe", action="store_true", default=None,
                     help="allow more ranks than cores (passed to mpiexec)")
    out = p.add_argument_group("output")
    out.add_argument("--list", action="store_true", help="list models, backends, presets and devices")
    out.add_argument("--json", action="store_true", help="print the results document on stdout")
    out.add_argument("--quiet", action="store_true", help="print FAILED iterations only, not every PASSED one")
    out.add_argument("--tui", action="store_true", help="open the interactive app with these options filled in")
    out.add_argument("--debug", action="store_true", help="show tracebacks")
    out.add_argument("--version", action="version", version=_version())
    return p


def _version() -> str:
    from couplescope import __version__

    return f"couplescope {__version__}"


def _split(text: str | None, convert=str) -> list:
    if text is None:
        return [None]
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise UsageError(f"empty list '{text}'")
    try:
        return [convert(t) for t in items]
    except ValueError:
        raise UsageError(f"'{text}' is not a whole number or a comma list of them") from None


def overrides_from(args) -> dict:
    """The spec fields the user set on the command line (None means not given)."""
    from couplescope.spec import parse_input_shape

    out = {}
    for key in SPEC_OPTIONS:
        value = getattr(args, key, None)
        if value is None or key in ("backend", "size"):
            continue
        out[key] = parse_input_shape(value) if key == "input_shape" else value
    return out


def build_specs(args) -> tuple[str, list]:
    """(title, specs) from --preset and/or --model and the overriding options."""
    from couplescope import presets

    overrides = overrides_from(args)
    backends = _split(args.backend)
    sizes = _split(args.size, int)
    if args.preset:
        description, base = presets.read(presets.locate(args.preset))
        title = os.path.basename(args.preset).removesuffix(".toml")
    elif args.model:
        base, title = [{}], os.path.basename(args.model)
    else:
        raise UsageError("nothing to run: give --preset NAME or --model NAME (see --list), "
                         "or --tui for the interactive app")
    specs = []
    for variant, backend, size in itertools.product(base, backends, sizes):
        d = {**variant, **overrides}
        if backend is not None:
            d["backend"] = backend
        if size is not None:
            d["size"] = size
            if d.get("name") and len(sizes) > 1:
                d["name"] = f"{d['name']}-{size}"
        if len(backends) > 1 and d.get("name"):
            d["name"] = f"{d['name']}-{backend}"
        specs.append(presets.to_spec(d))
    _refuse_options_that_apply_to_nothing(args, specs)
    names = [s.label for s in specs]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        specs = [s.replace(name=f"{s.label}-{i}") if s.label in dupes else s for i, s in enumerate(specs, 1)]
    return title, specs


MPI_OPTIONS = ("ranks", "inner_backend", "launcher", "launcher_args", "oversubscribe")


def _refuse_options_that_apply_to_nothing(args, specs) -> None:
    """An option no variant uses would be silently ignored: say so instead."""
    from couplescope.catalogue import is_user_model

    def given(key):
        return getattr(args, key, None) is not None

    if given("input_shape") and not any(is_user_model(s.model) for s in specs):
        raise UsageError("--input-shape applies to a .pt or .py model; catalogue models build their "
                         "own inputs (use --size)")
    uses_bridge = any(s.backend == "bridge" or (s.backend == "mpi" and s.inner_backend == "bridge")
                      for s in specs)
    if given("bridge_model") and not uses_bridge:
        raise UsageError("--bridge-model applies to --backend bridge (or mpi with --inner-backend bridge)")
    used = [f"--{k.replace('_', '-')}" for k in MPI_OPTIONS if given(k)]
    if used and not any(s.backend == "mpi" for s in specs):
        raise UsageError(f"{', '.join(used)} applies to --backend mpi")


def validate_all(specs, preset: str | None = None) -> None:
    """Validate every variant before anything runs; name the preset in the message."""
    from couplescope.spec import validate

    for spec in specs:
        try:
            validate(spec)
        except UsageError as exc:
            if preset:
                raise UsageError(f"preset {preset}: {exc}") from None
            raise


def print_list(out=sys.stdout) -> None:
    import shutil

    from couplescope import backends, catalogue, devices, presets
    from couplescope import format as fmt

    # wrap to the terminal; piped output keeps one line per row for grep and scripts
    width = shutil.get_terminal_size().columns if out.isatty() else None

    rows = []
    for name in catalogue.model_names():
        w = catalogue.load(name)
        rows.append([name, f"{w.size_name}={w.default_size}", w.dtype, w.summary])
    out.write("models (--model NAME, --size sets the size parameter):\n")
    out.write(fmt.table(["model", "size (default)", "dtype", "what"], rows, width=width) + "\n\n")
    rows = []
    for name in backends.names():
        reason = backends.unavailable(name)
        what = backends.REGISTRY[name][1] + (f"; unavailable: {reason}" if reason else "")
        rows.append([name, "unavailable" if reason else "available", what])
    out.write("backends (--backend NAME):\n" + fmt.table(["backend", "status", "what"], rows, width=width) + "\n\n")
    rows = [[n, presets.describe(n)] for n in presets.preset_names()]
    out.write("presets (--preset NAME):\n" + fmt.table(["preset", "description"], rows, width=width) + "\n\n")
    out.write("devices (--device):\n" + fmt.table(["device", "what"], [list(r) for r in devices.describe()],
                                                   width=width) + "\n")


def run_headless(args, title: str, specs) -> int:
    from couplescope.headless import HeadlessPrinter
    from couplescope.session import Session

    listeners = []
    exporter = None
    stream = sys.stderr if args.json else sys.stdout
    printer = HeadlessPrinter(len(specs), out=stream, quiet_iterations=args.quiet)
    if args.export is not None:
        from couplescope.export.run_dir import RunDirectoryExporter

        exporter = RunDirectoryExporter(args.export, title,
                                        announce=lambda path: printer.print(f"run directory: {path}"))
        listeners.append(exporter)
    listeners.extend(extra_listeners(args, specs, exporter, printer))
    listeners.append(printer)
    session = Session(specs, listeners, title=title)
    try:
        builder = session.run()
    finally:
        printer.close()
    if exporter is not None and exporter.path:
        printer.print(f"results: {os.path.join(exporter.path, 'results.json')}")
        traces = os.path.join(exporter.path, "traces")
        if os.path.isdir(traces):
            from couplescope.profiling import TRACE_SUFFIXES

            has_trace = any(name.endswith(TRACE_SUFFIXES)
                            for _, _, files in os.walk(traces) for name in files)
            if has_trace:
                printer.print(f"traces: couplescope --tensorboard {exporter.path}")
            else:
                printer.print(f"no profiler traces (profiling was off or skipped); per-iteration "
                              f"scalars: couplescope --tensorboard {exporter.path}")
    if args.json:
        sys.stdout.write(json.dumps(builder.document(), indent=1, default=str) + "\n")
    code = 130 if session.interrupted else builder.exit_code()
    if code == 130:
        printer.print("interrupted: what was measured is kept", err=True)
    return code


def extra_listeners(args, specs, exporter, printer) -> list:
    from couplescope.pipeline import optional_listeners

    return optional_listeners(args, exporter)


#: options whose value is itself a command line, which may start with a dash
PASS_THROUGH = ("--launcher-args",)


def _glue_pass_through(argv: list[str]) -> list[str]:
    """`--launcher-args --report-bindings` -> `--launcher-args=--report-bindings`: argparse
    would otherwise read the value as an unknown option of ours."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in PASS_THROUGH and i + 1 < len(argv):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(_glue_pass_through(sys.argv[1:] if argv is None else list(argv)))
    try:
        if args.list:
            print_list()
            return 0
        if args.tensorboard:
            from couplescope.export.tensorboard_server import serve

            return serve(args.tensorboard, port=args.port)
        interactive = args.tui or (argv is None and len(sys.argv) == 1 and sys.stdin.isatty()
                                   and sys.stdout.isatty())
        if interactive:
            from couplescope.tui import launch

            return launch(args)
        title, specs = build_specs(args)
        validate_all(specs, args.preset)
        return run_headless(args, title, specs)
    except UsageError as exc:
        if args.debug:
            raise
        print(f"couplescope: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("couplescope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`| head`): the worker was already ended; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
