"""The command line's options, and how they become RunOptions (couplescope.core.request).

Imports neither torch nor textual, so `couplescope --help` is instant.
"""

from __future__ import annotations

import argparse

from couplescope.core.request import RunOptions, split_list
from couplescope.protocol.contract import EXIT_CODES

EXAMPLES = """\
examples:
  couplescope --preset stride512 --export      the reference StrideNet benchmark, saved to ./couplescope-runs
  couplescope --model cgdrag --size 1024 --backend torchscript,bridge
  couplescope --model simplenet --backend torchscript,bridge --threads 1   FTorch vs forpy, per call
  couplescope --model simplenet --host native,python   compiled caller vs Python caller
  couplescope --model stride --size 64 --layout c   the transposition bug: its checks FAIL
  couplescope --model net.pt --input-shape 8,16 --dtype float32
  couplescope --list                           models, backends, presets and devices
  couplescope --tensorboard couplescope-runs/<run>   open a run's traces in TensorBoard
  couplescope --tui --preset cgdrag            the interactive app, filled in
  couplescope --plot couplescope-runs/<run> --output run.png   a saved run as a picture (or .svg)
  couplescope --compare base.json couplescope-runs/<run>   slower than the base? exit 1 if so

exit codes: {codes}.
docs: docs/ in the source tree (usage, presets, results schema, bridge contract).
""".format(codes=", ".join(f"{code} {what}" for code, what in EXIT_CODES.items()))

#: command-line option -> RunSpec field, for the options that override a preset
SPEC_OPTIONS = ("model", "backend", "size", "host", "grad_mode", "bridge_model", "device", "dtype", "layout", "warmup",
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


def _percent(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a percentage (write 5 for 5%)") from None
    if not 0 <= value < 1000:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1000 percent (got {text})")
    return value


def build_parser() -> Parser:
    p = Parser(prog="couplescope", formatter_class=argparse.RawDescriptionHelpFormatter,
               description="Measure what each way of coupling a simulation code to a PyTorch model "
                           "costs (direct TorchScript as FTorch does, embedded Python as forpy does, "
                           "CUDA Graphs, MPI fan-out) and check that it still gives the right answer.",
               epilog=EXAMPLES)
    what = p.add_argument_group("what to run")
    what.add_argument("--preset", metavar="NAME|FILE", help="a named preset (see --list) or a TOML file")
    what.add_argument("--model", metavar="NAME|FILE",
                      help="a catalogue model (see --list), a TorchScript .pt file, a .py module (bridge "
                           "module, or make_model for aoti) or a .pt2 exported program (aoti)")
    what.add_argument("--backend", metavar="NAME[,NAME]",
                      help="coupling: torchscript (default), bridge, aoti, cudagraph, mpi; a comma list runs each")
    what.add_argument("--size", metavar="N[,N]",
                      help="the model's size parameter (see --list); a comma list sweeps it")
    what.add_argument("--host", metavar="NAME[,NAME]",
                      help="who makes the calls: native (default: C++ against libtorch, what a Fortran "
                           "code pays through FTorch or forpy; compiled on first use and cached) or "
                           "python (the worker's Python loop, what a Python code pays); a comma list "
                           "runs each")
    what.add_argument("--grad-mode", metavar="MODE",
                      help="guard around forward: no_grad (default, as FTorch's AutoGradMode(false)) "
                           "or inference (torch's InferenceMode: what FTorch would gain)")
    what.add_argument("--bridge-model", choices=("eager", "torchscript", "compiled"),
                      help="what the bridge module runs: the Python runtime, a TorchScript file "
                           "(default torchscript) or the Python runtime under torch.compile")
    what.add_argument("--device", metavar="DEV", help="cpu (default), cuda or cuda:N")
    what.add_argument("--dtype", metavar="TYPE", help="float32, float64 or float16 (default: the model's)")
    what.add_argument("--layout", metavar="ORDER",
                      help="fortran (default, correct) or c: read the column-major host memory as "
                           "row-major, the classic transposition bug")
    what.add_argument("--input-shape", metavar="SHAPE",
                      help="input shape(s) for a .pt model or a .py module without make_inputs, e.g. 8,16 "
                           "or 8,16;8,1")
    how = p.add_argument_group("how to measure")
    how.add_argument("--iterations", type=_int_at_least(1), metavar="N", help="timed iterations (default 10)")
    how.add_argument("--warmup", type=_int_at_least(0), metavar="N",
                     help="warm-up iterations, reported but not in the statistics (default 1)")
    how.add_argument("--threads", type=_int_at_least(1), metavar="N",
                     help="torch intra-op threads (default: torch's own)")
    how.add_argument("--seed", type=_int_at_least(0), metavar="N", help="seed for weights and inputs (default 0)")
    how.add_argument("--memory-limit", metavar="SIZE",
                     help="memory a variant may plan to use, e.g. 16G, or none (default: half of what "
                          "is available here); a size whose estimate exceeds it is refused before "
                          "anything is allocated")
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
    saved = p.add_argument_group("saved runs (a run directory, or a results document from --json)")
    saved.add_argument("--plot", nargs="+", metavar="RUN",
                       help="draw runs: median vs size for sweeps, distributions, calls with phases stacked")
    saved.add_argument("--output", metavar="FILE", help="the picture --plot writes: .png or .svg")
    saved.add_argument("--compare", nargs=2, metavar=("BASE", "NEW"),
                       help="per variant: medians, their ratio with a 95%% interval, and a verdict; "
                            "exit 1 when a variant is slower by more than --threshold")
    saved.add_argument("--threshold", type=_percent, metavar="PCT",
                       help="how much slower counts as a regression for --compare (default 5)")
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
    from couplescope.protocol import __version__

    return f"couplescope {__version__}"


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




def options_from(args) -> RunOptions:
    """The parsed command line as RunOptions: lists split, the spec fields the user set."""
    from couplescope.protocol.spec import parse_input_shape

    overrides = {}
    for key in SPEC_OPTIONS:
        value = getattr(args, key, None)
        if value is None or key in ("model", "backend", "size", "host"):
            continue
        overrides[key] = parse_input_shape(value) if key == "input_shape" else value
    return RunOptions(preset=args.preset, model=args.model, backends=split_list(args.backend),
                      sizes=split_list(args.size, int), hosts=split_list(args.host), overrides=overrides, export=args.export,
                      telemetry_hz=args.telemetry_hz, memory_limit=args.memory_limit)
