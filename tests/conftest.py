"""Shared fixtures: run the real CLI in a subprocess, write small real model files."""

from __future__ import annotations

import dataclasses
import gc
import glob
import json
import os
import subprocess
import sys

import pytest

#: torch's OpenMP threads (and MKL's, which run on the same libgomp) sleep when they wait,
#: in every worker, rank and host the tests start (they inherit this), instead of spinning
#: for the core: CI runs two test processes on two cores, so a worker's second thread spins
#: against the other test process's work. It changes no thread count, result or code path,
#: only how an idle thread waits: cgdrag's 40 training steps (size 64, two torch threads,
#: beside one other busy process) took 52.5 s of CPU spinning and 10.5 s sleeping. Set
#: before anything here imports torch (libgomp reads it when it loads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# no garbage collection while the test modules import torch and the rest: a dozen full
# collections over a growing heap, about 0.9 s per test worker (pytest_runtestloop turns it
# back on)
gc.disable()

#: the app's animations (the tab bar's underline sliding across, a form scrolling to the
#: focused field) are off in tests: a Pilot key press waits for them to end, which doubled
#: the time of every tab switch and of every key typed into the form, and the screens they
#: end on are the same. App() reads textual.constants when it starts; the variable alone did
#: nothing here, because pytest-textual-snapshot imports textual (and reads the variable)
#: before this file runs. The variable is still set for the apps tests start as commands.
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
import textual.constants  # noqa: E402

textual.constants.TEXTUAL_ANIMATIONS = "none"

FAST = ["--warmup", "1", "--iterations", "3", "--profile-iterations", "0", "--telemetry-hz", "0"]


def default_signals() -> None:
    """preexec_fn for a command a test signals: the default handling of SIGINT, SIGTERM and
    SIGHUP, as a terminal gives it. Started by a test runner that ignores SIGINT (pytest in
    the background of a shell: a background job's SIGINT is ignored, and its children
    inherit that), Python would leave Ctrl-C ignored and the command would never see it."""
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def read_line(stream, timeout: float = 120.0) -> str:
    """The next line of a child's output, failing (not hanging) when none comes in time."""
    import threading

    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert line, f"no line of output within {timeout:.0f} s"
    return line[0]


def run_cli(*args, cwd=None, timeout=180, env=None, check_no_traceback=True):
    """Run `python -m couplescope ARGS` for real and return the CompletedProcess."""
    full_env = dict(os.environ, NO_COLOR="1")
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "couplescope", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=full_env)
    if check_no_traceback:
        assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(autouse=True)
def _run_outside_the_source_tree(tmp_path, monkeypatch):
    """Subprocesses start in a temporary directory, so they import the installed package
    (where models/ and presets/ live) rather than the source tree, as a user's would."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _no_terminal_size_from_the_runner(monkeypatch):
    """pytest-xdist's workers export COLUMNS=80 and LINES=24, which `--list` (and argparse)
    rightly obey: a test sees the command as a user piping it would, unless it sets them."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def short_idle_waits(monkeypatch):
    """For the app's tests: a Pilot key press or pause waits for the app to go idle in
    sleeps of 20 ms, twice a key, which made most of the key tests' time (a hundred keys
    each). Here it sleeps 4 ms, so a press can return before the app has acted on it: the
    tests that use it wait for the state they expect, never for a time."""
    import textual._wait

    monkeypatch.setattr(textual._wait, "SLEEP_GRANULARITY", 1 / 250)
    monkeypatch.setattr(textual._wait, "SLEEP_IDLE", 1 / 250 / 20)


@pytest.fixture
def command(capsys):
    """The real `couplescope` command's main(), in this process: for input that is refused
    (or listed) before any worker starts, without paying a torch import per test."""
    from couplescope.frontends.command import main

    def _run(*args):
        capsys.readouterr()
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:   # argparse refuses an option by exiting
            code = exc.code
        out, err = capsys.readouterr()
        assert "Traceback" not in err, err
        return subprocess.CompletedProcess(["couplescope", *map(str, args)], code, out, err)
    return _run


#: the variants of `exported`, its timed iterations and its profile window (3 iterations, 2 of
#: them recorded)
EXPORTED_VARIANTS = ("simplenet-torchscript", "simplenet-bridge-torchscript")
EXPORTED_TIMED, EXPORTED_PROFILE = 4, 3


@dataclasses.dataclass(frozen=True)
class ExportedRun:
    directory: str   # the run directory
    results: dict    # its results.json
    stdout: str
    stderr: str


def exported_cli_run(folder, *args, **kw) -> ExportedRun:
    """`couplescope ARGS --export FOLDER/runs` for real (run_cli's keywords), passed."""
    proc = run_cli(*args, "--export", folder / "runs", cwd=folder, **kw)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    (results,) = glob.glob(str(folder / "runs" / "*" / "results.json"))
    with open(results, encoding="utf-8") as f:
        doc = json.load(f)
    return ExportedRun(os.path.dirname(results), doc, proc.stdout, proc.stderr)


#: the variants of `exported`, its timed iterations and its profile window (3 iterations, 2 of
#: them recorded)
EXPORTED_VARIANTS = ("simplenet-torchscript", "simplenet-bridge-torchscript")
EXPORTED_TIMED, EXPORTED_PROFILE = 4, 3


@pytest.fixture(scope="session")
def exported(tmp_path_factory) -> ExportedRun:
    """A real exported run with traces (simplenet through torchscript and through the
    bridge, 4 timed and 3 profiled iterations), made once per test process for the tests of
    the profiled window (tests/test_profiling.py), of the trace servers and of what the
    profiler prints: they mark themselves xdist_group("exported-run"), so one worker makes
    it. Its temporary files are in a folder of its own, where the run must leave none of its
    folders."""
    scratch = tmp_path_factory.mktemp("tmp")
    run = exported_cli_run(tmp_path_factory.mktemp("exported"), "--model", "simplenet",
                           "--backend", "torchscript,bridge", "--warmup", "1", "--iterations", EXPORTED_TIMED,
                           "--profile-iterations", EXPORTED_PROFILE, "--telemetry-hz", "0",
                           env={"TMPDIR": str(scratch)})
    assert not glob.glob(str(scratch / "couplescope-*"))   # the trace staging folder is gone too
    return run


@pytest.fixture(scope="session")
def exported_run(exported) -> str:
    """The directory of `exported`, for the trace servers' tests."""
    return exported.directory


@dataclasses.dataclass(frozen=True)
class FirstTraining:
    run: ExportedRun
    variant: dict   # its variant in results.json
    model: str      # the TorchScript file it saved


@pytest.fixture(scope="session")
def first_training(tmp_path_factory):
    """`first_training(host)`: the README's first training command, `couplescope --model
    simplenet --task train` (FTorch's example 11's 10 000 steps; `--host python` for the
    python host), made once per host and test process, exported and its model saved (which
    change nothing it makes) for the tests of what it prints (test_training_first_run.py),
    learns and saves (test_training.py). They mark themselves xdist_group("first-training"),
    so one worker makes it."""
    made: dict[str, FirstTraining] = {}

    def run(host: str) -> FirstTraining:
        if host not in made:
            folder = tmp_path_factory.mktemp(f"first-training-{host}")
            model = str(folder / "out" / "shift.pt")   # (a folder it makes)
            done = exported_cli_run(folder, "--model", "simplenet", "--task", "train",
                                    *(["--host", host] if host != "native" else []),
                                    "--save-model", model, timeout=900)
            (variant,) = done.results["variants"]
            made[host] = FirstTraining(done, variant, model)
        return made[host]
    return run


#: `rounds_run`'s timed iterations and warm-ups per variant, and its rounds
ROUNDS_TIMED, ROUNDS_WARMUP, ROUNDS = 6, 2, 3


@pytest.fixture(scope="session")
def rounds_run(tmp_path_factory) -> ExportedRun:
    """simplenet through torchscript and through the bridge in 3 interleaved rounds (6 timed
    iterations and 2 warm-ups each), exported: made once per test process for the tests of
    what a passing run prints (test_cli.py), of how its workers take their rounds
    (test_rounds_e2e.py) and of a run made without profiling (test_profiling.py). They
    mark themselves xdist_group("rounds-run")."""
    return exported_cli_run(tmp_path_factory.mktemp("rounds"), "--model", "simplenet",
                            "--backend", "torchscript,bridge", "--rounds", ROUNDS, "--iterations", ROUNDS_TIMED,
                            "--warmup", ROUNDS_WARMUP, "--threads", "1", "--profile-iterations", "0",
                            "--telemetry-hz", "0")


@pytest.fixture
def cli(tmp_path):
    def _run(*args, **kw):
        kw.setdefault("cwd", tmp_path)
        return run_cli(*args, **kw)
    return _run


@pytest.hookimpl(tryfirst=True)   # before `-m` deselects: the marks below must count
def pytest_collection_modifyitems(config, items):
    """Tests that launch MPI ranks or use a GPU are end to end (`e2e`) too; skip `cuda`
    tests with a reason when no CUDA device is present."""
    for item in items:
        if "mpi" in item.keywords or "cuda" in item.keywords:
            item.add_marker(pytest.mark.e2e)
    items.sort(key=_longest_first)
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


def _longest_first(item) -> tuple:
    """The order work is handed out in under `--dist loadgroup`, where a worker takes more
    whenever it has two tests or fewer left: what a worker is still running when the other
    has nothing left is the CI run's idle end, so the long work goes first. xdist hands out
    the xdist groups first (chains of tests on one worker, ordered by how many tests they
    hold: it reorders by that, whatever the order here), then single tests in this order:
    those that start real processes (`e2e`: seconds to a minute each), then the app's Pilot
    tests (a second or a few), then the rest (milliseconds). In file order, the last tests
    were test_user_modules.py's runs of 4 to 14 s."""
    import inspect

    grouped = any(True for _ in item.iter_markers("xdist_group"))
    pilot = inspect.iscoroutinefunction(getattr(item, "obj", None))
    return (not grouped, "e2e" not in item.keywords, not pilot)


def pytest_collection_finish(session):
    """The garbage collector, tuned for a test worker that holds torch, matplotlib and the
    app's modules (half a million objects): without this the app's tests, which make
    objects by the thousand, spent a third of their time in full collections that walked
    all of it again (8-9 s of 25 s per worker for tests/test_tui_keys.py).

    It is off while the test modules are imported (see the top of this file); then what is
    loaded is frozen (moved where collections do not look), and full collections come ten
    times less often. Only the test process is tuned: the app and the workers run with
    Python's defaults."""
    import matplotlib.pyplot  # noqa: F401  (imported later by the plots' and the app's tests)

    import couplescope.frontends.tui.app  # noqa: F401
    gc.collect()
    gc.freeze()
    first, second, _ = gc.get_threshold()
    gc.set_threshold(first, second, 100)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """The collector back on in every process before its tests (or, in xdist's controller,
    which collects nothing, its reports) begin."""
    gc.enable()
