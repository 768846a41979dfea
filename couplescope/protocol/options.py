"""Every option of a run, declared once.

An option is one `Option` below: its name, type, choices or range, default, help, the
group it is shown in, and which backends and tasks it applies to. Everything else is
made from these declarations, so adding an option is adding one here:

  RunSpec's fields           protocol/spec.py builds the dataclass from the spec options
  RunOptions/RunRequest      core/request.py builds their run settings from the run options
  the command line           frontends/cli/parser.py adds one flag per option, in its group
  the app's form             frontends/tui/fields.py makes one field per option
  preset keys                core/presets.py: spec options in [defaults]/[[variant]], run
                             options at the top level, type-checked from here
  the one validation         Option.parse (text from the command line or the form) and
                             Option.check (a value from a preset or code) raise the same
                             UsageError wherever the value came from
  refusing unused options    an option that no variant's backend (or task) reads is refused
  docs/options.md            `python -m couplescope.protocol.options` writes its table

Backend-specific options name their backends here (`backends=`), not in the backend's
module: RunSpec must know every field below the backends layer (the worker, results.json
and the parent all read it), and results.json keeps one flat `spec` object. A new
backend with options is its module, its registry line and its options here.

Choices that only the parent knows at run time (the catalogue's models, the registry's
backends, the presets, this machine's devices) are named by `source`; the front ends
fill them in and core/validation.py checks them. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from couplescope.protocol.errors import UsageError, choices_text

#: where an option's value goes: a field of every variant (RunSpec) or of the run
SPEC, RUN = "spec", "run"

#: the groups --help, the form and docs/options.md show, in this order
GROUPS = ("what to run", "how to measure", "training (--task train)", "profiling and traces",
          "GPU", "MPI (--backend mpi)", "output")

LAYOUTS = ("fortran", "c")
#: what the bridge's built-in module runs: the eager model, the TorchScript file, or the
#: eager model under torch.compile
BRIDGE_MODELS = ("eager", "torchscript", "compiled")
DTYPE_CHOICES = ("float32", "float64", "float16")
LAUNCHERS = ("mpiexec", "srun")
#: what makes the calls: compiled code (C++ against libtorch, as a Fortran code through
#: FTorch or forpy) or the worker's Python loop (what a Python simulation code pays)
HOSTS = ("native", "python")
#: what one iteration is: a forward call (inference), or an online-training step (zero_grad,
#: forward with grad, loss, backward, optimizer step), as FTorch's example 11 makes it
TASKS = ("infer", "train")
OPTIMIZERS = ("sgd", "adam")
#: the loss a training step minimises: mean squared error (FTorch's example 11,
#: pytorch-fortran's L2) or mean absolute error
LOSSES = ("mse", "l1")
#: whose training step the native host makes, call for call: FTorch's example 11 (the loss
#: from FTorch's overloaded operators and torch_tensor_mean, into a loss tensor over the
#: host's buffer), FTorch with torch_loss_mse (one mse_loss call into that tensor), or
#: pytorch-fortran's torch_module%train (one mse_loss call on a tensor of its own, the loss
#: read with item() inside the call)
TRAIN_CALLS = ("ftorch-operators", "ftorch-mse", "pytorch-fortran")
#: the train calls whose loss is one fused loss function call
FUSED_LOSS_CALLS = ("ftorch-mse", "pytorch-fortran")
#: the grad-mode guard around forward: no_grad is FTorch's (torch::AutoGradMode(false));
#: inference is a what-if (c10::InferenceMode)
GRAD_MODES = ("no_grad", "inference")
DEVICE_PATTERN = re.compile(r"^(cpu|cuda(:\d+)?)$")
#: rounds of an interleaved comparison when none is asked for (docs/shared-node.md says why)
DEFAULT_ROUNDS = 5
#: telemetry samples per second at most: above it a sample costs more than it tells
#: (psutil's CPU percent over less than 10 ms is noise)
MAX_TELEMETRY_HZ = 100.0

_KIND_WORDS = {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}


@dataclass(frozen=True)
class Option:
    """One option of a run. See the module docstring for what is made from it."""

    name: str                        # RunSpec / run field and preset key (snake_case)
    kind: type                       # int, float, str, bool, or tuple (input shapes)
    default: Any
    help: str                        # one or two sentences: --help, the form's tooltip, docs
    group: str
    scope: str = SPEC
    choices: tuple | None = None     # a fixed set of valid values
    source: str | None = None        # valid values known at run time: models, backends, presets, devices
    low: float | None = None         # the smallest valid number
    high: float | None = None        # the largest valid number
    metavar: str = ""
    #: what the default means when it is None or needs words ("the model's own")
    default_text: str = ""
    #: a comma list runs one variant per value (backend, size, host)
    sweep: bool = False
    #: the backends that read it (None: every backend); set but unread, it is refused
    backends: tuple[str, ...] | None = None
    #: the tasks that read it (None: every task)
    tasks: tuple[str, ...] | None = None
    #: the app's short label (default: the name with spaces)
    label: str = ""
    #: the command line's flag takes no value (--export DIR's DIR may be left out: const)
    const: Any = None
    #: a value of its own form: text -> value (input shapes, memory sizes); raises UsageError
    convert: Callable | None = None
    #: not a preset key, and why (a preset cannot name a preset)
    not_in_presets: str = ""
    #: what a value below `low` means, added to the error ("the mpi backend needs ...")
    why_low: str = ""
    #: the app's form offers it only where this is present ("slurm": srun on PATH); the
    #: command line and presets always take it
    offered: str | None = None
    #: the value must be greater than `low` (a learning rate of 0 learns nothing)
    above_low: bool = False

    # -- names ---------------------------------------------------------------------------
    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def words(self) -> str:
        return self.name.replace("_", " ")

    @property
    def short_label(self) -> str:
        return self.label or self.words

    def default_words(self) -> str:
        """The default as help and the form's placeholder say it."""
        if self.default_text:
            return self.default_text
        if self.kind is bool:
            return "off" if not self.default else "on"
        if self.default in (None, ""):
            return "none"
        return str(self.default)

    # -- the one validation -------------------------------------------------------------
    def parse(self, text: str) -> Any:
        """A value from text (the command line, the app's form): converted, then checked.
        A sweep option's text is one item of its comma list."""
        text = str(text).strip()
        if self.convert is not None:
            return self.convert(text)
        if self.kind is bool:
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise UsageError(f"{self.flag}: '{text}' is not true or false")
        if self.kind in (int, float):
            try:
                value = self.kind(text)
            except ValueError:
                raise UsageError(f"{self.flag}: '{text}' is not {_KIND_WORDS[self.kind]}") from None
            return self.check(value)
        return self.check(text)

    def check(self, value: Any) -> Any:
        """The value, checked against the declaration (type, choices, range). None is the
        default where the default is None. Raises UsageError naming the valid values."""
        if value is None and self.default is None:
            return None
        if self.convert is not None and isinstance(value, str):
            return self.convert(value)
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if self.kind is not tuple and (not isinstance(value, self.kind)
                                       or (self.kind is not bool and isinstance(value, bool))):
            raise UsageError(f"{self.flag} must be {_KIND_WORDS.get(self.kind, self.kind.__name__)} "
                             f"(got {value!r})")
        if self.choices is not None and value not in self.choices:
            raise UsageError(f"unknown {self.words} '{value}'; choose one of: {choices_text(self.choices)}")
        if self.name == "device" and not DEVICE_PATTERN.match(value):
            raise UsageError(f"unknown device '{value}'; choose one of: cpu, cuda, cuda:N")
        if self.low is not None and self.high is not None and not self.low <= value <= self.high:
            raise UsageError(f"{self.flag} must be between {self.low:g} and {self.high:g} (got {value})")
        if self.kind is float and value != value:   # nan, where there is no range to say so
            raise UsageError(f"{self.flag} must be a number (got {value})")
        if self.above_low and value <= self.low:
            raise UsageError(f"{self.flag} must be greater than {self.low:g} (got {value})")
        if self.low is not None and value < self.low:
            why = f": {self.why_low}" if self.why_low else ""
            raise UsageError(f"{self.flag} must be at least {self.low:g} (got {value}){why}")
        if self.high is not None and value > self.high:
            raise UsageError(f"{self.flag} must be at most {self.high:g} (got {value})")
        return value

    def parse_list(self, text: str) -> list:
        """A sweep option's comma list: every item parsed. Raises UsageError for an empty list."""
        items = [t.strip() for t in str(text).split(",") if t.strip()]
        if not items:
            raise UsageError(f"{self.flag}: empty list '{text}'")
        return [self.parse(item) for item in items]

    def applies_to(self, backend_names, task: str | None = None) -> bool:
        """Whether a variant run by these backends (its backend, and an inner one) reads it."""
        if self.backends is not None and not set(self.backends) & set(backend_names):
            return False
        return self.tasks is None or task is None or task in self.tasks


# -- values of their own form -------------------------------------------------------------

def parse_input_shape(text: str) -> tuple[tuple[int, ...], ...]:
    """"8,16" -> ((8, 16),); "8,16;8,1" -> two inputs. Raises UsageError on anything else."""
    shapes = []
    for part in str(text).split(";"):
        try:
            dims = tuple(int(v) for v in part.replace("x", ",").split(",") if v.strip())
        except ValueError:
            dims = ()
        if not dims or any(d < 1 for d in dims):
            raise UsageError(f"--input-shape '{text}' is not a shape; write dimensions like 8,16 "
                             "(several inputs separated by ';')")
        shapes.append(dims)
    return tuple(shapes)


def shape_from_toml(value) -> tuple[tuple[int, ...], ...]:
    """A preset's input_shape: "8,16", [8, 16] or [[8, 16], [8, 1]]."""
    if isinstance(value, str):
        return parse_input_shape(value)
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(s, (list, tuple)) for s in value):
            return parse_input_shape(";".join(",".join(map(str, s)) for s in value))
        return parse_input_shape(",".join(map(str, value)))
    raise UsageError(f"input_shape must be a string like \"8,16\" or a list of dimensions (got {value!r})")


def memory_limit_text(text: str) -> str:
    """--memory-limit as given, once it reads as a size or none."""
    from couplescope.protocol.sizes import parse_bytes

    parse_bytes(text)
    return str(text).strip()


# -- the declarations ---------------------------------------------------------------------

_WHAT, _HOW, _TRAIN, _PROF, _GPU, _MPI, _OUT = GROUPS
#: the backend that starts ranks: its options below, and results.json files the per-rank
#: figures under its name
MPI_BACKEND = "mpi"
BRIDGE_BACKEND = "bridge"

OPTIONS: tuple[Option, ...] = (
    # what to run
    Option("model", str, None, "a catalogue model (see --list), a TorchScript .pt file, a .py module "
           "(bridge module, or make_model for aoti) or a .pt2 exported program (aoti)",
           _WHAT, source="models", metavar="NAME|FILE", default_text="the preset's"),
    Option("backend", str, "torchscript", "the coupling: how the model is called (see --list); a comma "
           "list runs each", _WHAT, source="backends", sweep=True, metavar="NAME[,NAME]",
           label="backends"),
    Option("size", int, None, "the model's size parameter (see --list); a comma list sweeps it",
           _WHAT, low=1, sweep=True, metavar="N[,N]", default_text="the model's own"),
    Option("host", str, None, "who makes the calls: native (C++ against libtorch, what a Fortran "
           "code pays through FTorch or forpy; compiled on first use and cached) or python (the "
           "worker's Python loop, what a Python code pays); a comma list runs each",
           _WHAT, choices=HOSTS, sweep=True, metavar="NAME[,NAME]",
           default_text="native where it can be built, else python"),
    Option("grad_mode", str, "no_grad", "guard around forward: no_grad (as FTorch's "
           "AutoGradMode(false)) or inference (torch's InferenceMode: what FTorch would gain)",
           _WHAT, choices=GRAD_MODES, metavar="MODE"),
    Option("bridge_model", str, "torchscript", "what the bridge module runs: eager (the Python "
           "runtime), torchscript (a TorchScript file) or compiled (the Python runtime under "
           "torch.compile)", _WHAT, choices=BRIDGE_MODELS, backends=(BRIDGE_BACKEND,), metavar="NAME",
           label="bridge runs"),
    Option("device", str, "cpu", "cpu, cuda or cuda:N", _WHAT, source="devices", metavar="DEV"),
    Option("dtype", str, None, "the element type of inputs and weights", _WHAT,
           choices=DTYPE_CHOICES, metavar="TYPE", default_text="the model's own"),
    Option("layout", str, "fortran", "fortran (correct) or c: read the column-major host memory "
           "as row-major, the classic transposition bug", _WHAT, choices=LAYOUTS, metavar="ORDER"),
    Option("input_shape", tuple, None, "input shape(s) for a .pt model or a .py module without "
           "make_inputs, e.g. 8,16 or 8,16;8,1", _WHAT, convert=parse_input_shape,
           metavar="SHAPE", label="input shape", default_text="the model's own"),
    Option("name", str, None, "the variant's name in tables, results and traces (several "
           "variants: -<size>, -<host>, -<backend> appended)", _WHAT, metavar="NAME",
           default_text="made from model, backend and options"),
    # how to measure
    Option("warmup", int, 1, "warm-up iterations, checked and reported but never in the statistics",
           _HOW, low=0, metavar="N", label="warm-up"),
    Option("iterations", int, 10, "timed iterations", _HOW, low=1, metavar="N"),
    Option("threads", int, None, "torch intra-op threads in the worker", _HOW, low=1, metavar="N",
           default_text="torch's own"),
    Option("seed", int, 0, "seed for weights and inputs", _HOW, low=0, metavar="N"),
    Option("reload_every_call", bool, False, "load the model inside every call (FTorch's looping "
           "example: what not to do)", _HOW, label="reload"),
    Option("memory_limit", str, None, "memory a variant may plan to use, e.g. 16G, or none; a size "
           "whose estimate exceeds it is refused before anything is allocated", _HOW, scope=RUN,
           convert=memory_limit_text, metavar="SIZE", default_text="half of what is available here",
           label="memory limit"),
    Option("telemetry_hz", float, 10.0, "CPU/GPU sampling rate while a run goes (0 turns it off)",
           _HOW, scope=RUN, low=0, high=MAX_TELEMETRY_HZ, metavar="HZ", label="telemetry Hz"),
    Option("rounds", int, None, "measure the variants in K interleaved rounds: each round runs "
           "every variant's share of the iterations, in an order shuffled per round, so that a "
           "machine's drift lands on every variant alike and ratios come from same-round pairs; "
           "1 runs each variant to its end in turn", _HOW, scope=RUN, low=1, metavar="K",
           default_text=f"{DEFAULT_ROUNDS} for a comparison (fewer under 15 calls), else 1"),
    Option("baseline", str, None, "the variant every ratio of a run in rounds is taken against "
           "(its name as the table shows it; refused in one round)", _HOW, scope=RUN, metavar="NAME", default_text="the fastest"),
    Option("order_seed", int, None, "seed of the rounds' shuffled order (to repeat a run's order)",
           _HOW, scope=RUN, low=0, metavar="N", label="order seed",
           default_text="a random one, recorded in results.json"),
    # training
    Option("task", str, "infer", "what one iteration is: infer (a forward call) or train (an "
           "online-training step: zero_grad, forward with grad, loss, backward, optimizer step, "
           "as FTorch's example 11)", _TRAIN, choices=TASKS, metavar="TASK"),
    Option("optimizer", str, None, "the optimizer of a training step: sgd (as FTorch's and "
           "pytorch-fortran's examples) or adam", _TRAIN, choices=OPTIMIZERS, tasks=("train",),
           metavar="NAME", default_text="the model's own: sgd, adam for cgdrag (outputs of 1e-6)"),
    Option("lr", float, None, "the optimizer's learning rate", _TRAIN, low=0, above_low=True,
           tasks=("train",),
           metavar="RATE", default_text="the model's own (simplenet 0.05, as FTorch's example 11)",
           label="learning rate"),
    Option("loss", str, "mse", "the loss a training step minimises: mse (mean squared error, "
           "as FTorch's example 11 and pytorch-fortran) or l1 (mean absolute error)", _TRAIN,
           choices=LOSSES, tasks=("train",), metavar="NAME"),
    Option("train_call", str, "ftorch-operators", "whose training step is made, call for call: "
           "ftorch-operators (FTorch's example 11: the loss from FTorch's operators and "
           "torch_tensor_mean, into a loss tensor over the host's buffer), ftorch-mse (FTorch's "
           "torch_loss_mse: one mse_loss call into that tensor) or pytorch-fortran (its "
           "torch_module's train: one mse_loss call, the loss read inside the call); the python "
           "host and the bridge make the loss from operators for the first, with one "
           "F.mse_loss (or l1_loss) call for the others", _TRAIN, choices=TRAIN_CALLS,
           tasks=("train",), metavar="FORM", label="train call"),
    Option("save_model", str, None, "write the trained model as TorchScript to PATH when the "
           "variant ends (pytorch-fortran's save); several variants: -<variant> is added before "
           "the extension", _TRAIN, tasks=("train",), metavar="PATH", label="save model"),
    # profiling and traces
    Option("profile_iterations", int, 3, "iterations profiled with torch.profiler after the timed "
           "ones, never in the statistics; 0 turns profiling off", _PROF, low=0, metavar="N",
           label="profiled"),
    Option("profile_max_ops", int, 10_000, "profile only when the window records at most N "
           "operators: a trace of an element-by-element model such as stride at N=512 would take "
           "minutes and gigabytes", _PROF, low=1, metavar="N", label="profile max ops"),
    Option("export", str, None, "write results.json, events.jsonl and traces to a new run "
           "directory in DIR", _PROF, scope=RUN, const="couplescope-runs", metavar="DIR",
           default_text="off; DIR defaults to ./couplescope-runs"),
    # GPU
    Option("pinned", bool, False, "pinned (page-locked) host memory for device copies", _GPU),
    # MPI
    Option("ranks", int, 2, "MPI ranks", _MPI, low=2, backends=(MPI_BACKEND,), metavar="R",
           why_low="the mpi backend needs at least 2 ranks (run a single process with --backend "
                   "torchscript or bridge)"),
    Option("inner_backend", str, "torchscript", "the coupling each rank runs", _MPI,
           source="backends", backends=(MPI_BACKEND,), metavar="NAME", label="inner backend"),
    Option("launcher", str, "mpiexec", "what starts the ranks", _MPI, choices=LAUNCHERS,
           backends=(MPI_BACKEND,), metavar="NAME"),
    Option("launcher_args", str, "", "extra arguments for the launcher, quoted", _MPI,
           backends=(MPI_BACKEND,), metavar="ARGS", label="launcher args"),
    Option("oversubscribe", bool, False, "allow more ranks than cores (passed to mpiexec)", _MPI,
           backends=(MPI_BACKEND,)),
    Option("nodes", int, None, "spread the ranks over N nodes (srun's --nodes; --launcher srun "
           "only, at most --ranks)", _MPI, low=1, backends=(MPI_BACKEND,), metavar="N",
           default_text="as srun decides (inside an allocation: its nodes)", offered="slurm"),
)

BY_NAME = {o.name: o for o in OPTIONS}
SPEC_OPTIONS = tuple(o for o in OPTIONS if o.scope == SPEC)
RUN_OPTIONS = tuple(o for o in OPTIONS if o.scope == RUN)


def get(name: str) -> Option:
    return BY_NAME[name]


def check_spec(spec) -> None:
    """Every spec option's value checked against its declaration (no registry, no torch)."""
    for option in SPEC_OPTIONS:
        option.check(getattr(spec, option.name))


# -- docs/options.md ----------------------------------------------------------------------

def markdown() -> str:
    """docs/options.md: one table per group, every option with its flag, preset key,
    default and meaning (tests/test_options.py checks the file is this text)."""
    lines = ["# Options", "",
             "Every option of a run, generated from its declaration in",
             "`couplescope/protocol/options.py` (`python -m couplescope.protocol.options > docs/options.md`).",
             "The same option is a command-line flag, a field of the app's form and a preset key:",
             "per-variant keys go in a preset's `[defaults]` or `[[variant]]`, per-run keys at its top",
             "level (docs/presets.md). A value is checked the same way wherever it comes from.", ""]
    for group in GROUPS:
        members = [o for o in OPTIONS if o.group == group]
        if not members:
            continue
        lines += [f"## {group}", "", "| flag | preset key | type | default | applies to | meaning |",
                  "|---|---|---|---|---|---|"]
        for o in members:
            key = "—" if o.not_in_presets else f"`{o.name}`" + (" (top level)" if o.scope == RUN else "")
            kind = {tuple: "shape"}.get(o.kind, _KIND_WORDS.get(o.kind, o.kind.__name__))
            if o.choices:
                kind = " \\| ".join(f"`{c}`" for c in o.choices)
            elif o.above_low:
                kind += f", above {o.low:g}"
            elif o.low is not None or o.high is not None:
                kind += f", {o.low:g}" if o.high is None else f", {o.low:g}–{o.high:g}"
                kind += " or more" if o.high is None else ""
            applies = ", ".join(o.backends) if o.backends else "every backend"
            if o.tasks:
                applies += f"; task {', '.join(o.tasks)}"
            meaning = o.help + ("; a comma list runs one variant per value" if o.sweep and "comma" not in o.help else "")
            lines.append(f"| `{o.flag}` | {key} | {kind} | {o.default_words()} | {applies} | {meaning} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
