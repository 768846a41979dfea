"""Every option of a run, declared once (the machinery is couplescope/protocol/option.py).

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
  docs/options.md            `python -m couplescope.protocol.options_doc` writes its table

Backend-specific options name their backends here (`backends=`), not in the backend's
module: RunSpec must know every field below the backends layer (the worker, results.json
and the parent all read it), and results.json keeps one flat `spec` object. A new
backend with options is its module, its registry line and its options here.

Choices that only the parent knows at run time (the catalogue's models, the registries'
backends and hosts, the presets, this machine's devices) are named by `source`; the front ends
fill them in and core/validation.py checks them. Stdlib only.
"""

from __future__ import annotations

import re

from couplescope.protocol.option import (RUN, SPEC, Option, memory_limit_text,  # noqa: F401
                                         parse_input_shape, shape_from_toml)

#: the groups --help, the form and docs/options.md show, in this order
GROUPS = ("what to run", "how to measure", "training (--task train)", "profiling and traces",
          "GPU", "MPI (--backend mpi)", "output")

LAYOUTS = ("fortran", "c")
#: what the bridge's built-in module runs: the eager model, the TorchScript file, or the
#: eager model under torch.compile
BRIDGE_MODELS = ("eager", "torchscript", "compiled")
DTYPE_CHOICES = ("float32", "float64", "float16")
LAUNCHERS = ("mpiexec", "srun")
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


# -- the declarations ---------------------------------------------------------------------

_WHAT, _HOW, _TRAIN, _PROF, _GPU, _MPI, _OUT = GROUPS
#: the backend that starts ranks: its options below (results.json files the per-rank
#: figures under the name run_started's spec gives the backend)
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
           _WHAT, low=1, sweep=True, metavar="N[,N]", default_text="the model's own", series=False),
    Option("host", str, None, "who makes the calls: native (C++ against libtorch replicating what "
           "a Fortran code pays through FTorch or forpy; compiled on first use and cached), python "
           "(the worker's Python loop, what a Python code pays), or the user's own library called "
           "from Fortran (ftorch, forpy, pytorch-fortran); a comma list runs each (see --list)",
           _WHAT, source="hosts", sweep=True, metavar="NAME[,NAME]",
           default_text="native where it can be built, else python"),
    Option("ftorch_dir", str, None, "where the user's FTorch is installed (the prefix given to "
           "its cmake --install, or the folder holding FTorchConfig.cmake), for --host ftorch",
           _WHAT, hosts=("ftorch",), metavar="PREFIX", label="FTorch dir",
           default_text="$FTorch_DIR, else $CMAKE_PREFIX_PATH (host ftorch)"),
    Option("forpy_source", str, None, "the user's forpy_mod.F90 (forpy is one Fortran file "
           "projects copy into their tree), or the folder holding it, for --host forpy",
           _WHAT, hosts=("forpy",), metavar="FILE", label="forpy source",
           default_text="$FORPY_SOURCE (host forpy)"),
    Option("pytorch_fortran_dir", str, None, "where the user's pytorch-fortran is installed (the prefix "
           "its make script installs into, or the folder holding pytorch_fort_proxy-config.cmake), for "
           "--host pytorch-fortran", _WHAT, hosts=("pytorch-fortran",), metavar="PREFIX",
           label="pytorch-fortran", default_text="$pytorch_fort_proxy_DIR, else $CMAKE_PREFIX_PATH"),
    Option("fc", str, None, "the Fortran compiler a library host's driver is built with",
           _WHAT, hosts=("ftorch", "forpy", "pytorch-fortran"), metavar="COMPILER", label="Fortran compiler",
           default_text="$FC, else gfortran (the library hosts)"),
    Option("grad_mode", str, "no_grad", "guard around forward: no_grad (as FTorch's "
           "AutoGradMode(false)) or inference (torch's InferenceMode: what FTorch would gain); "
           "a training step's forward runs with gradients", _WHAT, choices=GRAD_MODES, tasks=("infer",),
           metavar="MODE"),
    Option("bridge_model", str, "torchscript", "what the bridge module runs: eager (the Python "
           "runtime), torchscript (a TorchScript file) or compiled (the Python runtime under "
           "torch.compile)", _WHAT, choices=BRIDGE_MODELS, backends=(BRIDGE_BACKEND,), metavar="NAME",
           label="bridge runs"),
    Option("device", str, "cpu", "cpu, cuda or cuda:N", _WHAT, source="devices", metavar="DEV",
           pattern=DEVICE_PATTERN, pattern_text="cpu, cuda, cuda:N"),
    Option("dtype", str, None, "the element type of inputs and weights", _WHAT,
           choices=DTYPE_CHOICES, metavar="TYPE", default_text="the model's own"),
    Option("layout", str, "fortran", "fortran (correct) or c: read the column-major host memory "
           "as row-major, the classic transposition bug", _WHAT, choices=LAYOUTS, metavar="ORDER"),
    Option("input_shape", tuple, None, "input shape(s) for a .pt model or a .py module without "
           "make_inputs, e.g. 8,16 or 8,16;8,1", _WHAT, convert=parse_input_shape,
           metavar="SHAPE", label="input shape", default_text="the model's own"),
    Option("name", str, None, "the variant's name in tables, results and traces (several "
           "variants: -<size>, -<host>, -<backend> appended; with a preset of several variants, "
           "a prefix: NAME-<the preset's name for it>)", _WHAT, metavar="NAME",
           default_text="made from model, backend and options", series=False),
    # how to measure
    Option("warmup", int, 1, "warm-up iterations, checked and reported but never in the statistics",
           _HOW, low=0, metavar="N", label="warm-up", series=False),
    Option("iterations", int, 10, "timed iterations; --task train: optimizer steps, by default the "
           "steps the model's learning task needs (simplenet 10000, as FTorch's example 11)", _HOW,
           low=1, metavar="N", series=False),
    Option("threads", int, None, "torch intra-op threads in the worker", _HOW, low=1, metavar="N",
           default_text="torch's own"),
    Option("seed", int, 0, "seed for weights and inputs", _HOW, low=0, metavar="N", series=False),
    Option("reload_every_call", bool, False, "load the model inside every call (FTorch's looping "
           "example: what not to do)", _HOW, label="reload each call"),
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
           metavar="NAME", default_text="the model's own (sgd; adam for cgdrag)"),
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
           label="profiled calls", series=False),
    Option("profile_max_ops", int, 10_000, "profile only when the window records at most N "
           "operators: a trace of an element-by-element model such as stride at N=512 would take "
           "minutes and gigabytes", _PROF, low=1, metavar="N", label="profile max ops", series=False),
    Option("export", str, None, "write results.json, events.jsonl and traces to a new run "
           "directory in DIR", _PROF, scope=RUN, const="couplescope-runs", metavar="DIR",
           default_text="off; DIR defaults to ./couplescope-runs"),
    # GPU
    Option("pinned", bool, False, "pinned (page-locked) host memory for device copies", _GPU,
           label="pinned memory"),
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
