"""How runs end when a batch scheduler or a shared node ends them: real processes, real
signals, a real full filesystem, the real app in a real terminal (tmux).

After every case: no couplescope process of the run and no temporary folder of it remain.
Commands start from a launcher that gives them default signal handling, as a terminal
would (a background job of a non-interactive shell would have SIGINT ignored), in a
process group of their own so the test's signals reach only them.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import psutil
import pytest

from couplescope.protocol import events, scratch
from couplescope.results.saved import iteration_records as records

pytestmark = pytest.mark.e2e

QUIET = ["--profile-iterations", "0", "--telemetry-hz", "0", "--quiet"]


def _defaults():
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def start(*args, tmp_path, env=None):
    """`python -m couplescope ARGS` with default signal handling and its own TMPDIR (so its
    temporary folders are this test's to check)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    full_env = dict(os.environ, NO_COLOR="1", TMPDIR=str(tmp), **(env or {}))
    return subprocess.Popen([sys.executable, "-m", "couplescope", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=full_env, cwd=tmp_path,
                            preexec_fn=_defaults, start_new_session=True)


def timed_calls(run_root, pattern=os.path.join("*", "events.jsonl")) -> int:
    """Timed calls in the events.jsonl found under `run_root` (0 before it exists)."""
    found = glob.glob(os.path.join(run_root, pattern), recursive=True)
    if not found:
        return 0
    evs = [one for ev in events.read_jsonl(found[0]) for one in events.expand(ev)]
    return sum(1 for ev in evs if ev["event"] == "iteration" and ev["kind"] == "timed")


def wait_for(condition, seconds=900, what="it"):
    """Poll for a state; `seconds` only bounds a failure (a busy machine is slow, not wrong)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def family(proc) -> list:
    try:
        return [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def ended(proc, processes, timeout: float):
    """(stdout, stderr) of `proc` once it has ended after a signal. One that has not ended
    within `timeout` fails the test, after its processes are killed: a run left behind
    would disturb the tests that come after it in this worker."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for p in [*processes, *family(proc)]:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        out, err = proc.communicate()
        pytest.fail(f"still running {timeout:.0f} s after the signal (killed); its stderr:\n{err[-2000:]}")


def assert_nothing_left(processes, tmp_path):
    gone, alive = psutil.wait_procs(processes, timeout=10)
    assert not alive, [p.cmdline() for p in alive]
    left = os.listdir(tmp_path / "tmp")
    assert not left, left


@pytest.mark.parametrize("sig,code,to", [(signal.SIGTERM, 143, "couplescope"), (signal.SIGHUP, 129, "couplescope"),
                                         (signal.SIGTERM, 143, "every process")])
def test_sigterm_and_sighup_keep_export_and_exit_128_plus_the_signal(tmp_path, sig, code, to):
    """`to` every process: as Slurm's scancel and time limit signal every process of the
    step, the worker (in a session of its own) at the same moment as couplescope."""
    runs = tmp_path / "runs"
    proc = start("--model", "toy-resnet", "--size", "16", "--iterations", "1000000", *QUIET,
                 "--export", runs, tmp_path=tmp_path)
    wait_for(lambda: timed_calls(runs) >= 5, what="five timed calls")
    processes = family(proc)
    assert len(processes) >= 2, "the worker was never seen"
    for p in (processes if to == "every process" else processes[:1]):
        p.send_signal(sig)
    out, err = ended(proc, processes, timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert f"{signal.Signals(sig).name}: stopped; what was measured is kept" in err
    [run] = list(runs.iterdir())
    doc = json.loads((run / "results.json").read_text())
    v = doc["variants"][0]
    assert v["status"] == "interrupted" and v["verdict"] == "stopped" and v["stats"]["n"] >= 5
    assert v["stats"]["n"] == sum(1 for it in records(v) if it["kind"] == "timed")
    assert "comparison (overhead" in out   # the statistics were printed
    assert not list(run.glob("*.tmp-*"))
    assert_nothing_left(processes, tmp_path)


def test_a_worker_dies_with_its_parent_even_in_the_middle_of_a_model_build(tmp_path):
    """SIGKILL of couplescope while the worker sits in a long model build (a user module's
    initialize that takes a minute): the worker goes at once, and the next couplescope to
    start sweeps the temporary folder the killed one could not remove."""
    inside = tmp_path / "inside-initialize"
    (tmp_path / "slow.py").write_text(
        "import time\n"
        f"def initialize(config):\n    open({str(inside)!r}, 'w').close()\n    time.sleep(120)\n"
        "def compute(inputs, output):\n    output[...] = inputs[0]\n"
        "def reference(inputs):\n    return inputs[0]\n")
    proc = start("--model", tmp_path / "slow.py", "--backend", "bridge", "--input-shape", "3", *QUIET,
                 tmp_path=tmp_path)
    wait_for(inside.exists, what="the worker to be inside initialize")
    processes = family(proc)
    proc.kill()
    proc.communicate(timeout=30)
    gone, alive = psutil.wait_procs(processes, timeout=10)
    assert not alive, [p.cmdline() for p in alive]
    left = os.listdir(tmp_path / "tmp")
    assert left and all(name.startswith(scratch.PREFIX) for name in left)   # SIGKILL: no cleanup
    assert scratch.sweep(str(tmp_path / "tmp")) and not os.listdir(tmp_path / "tmp")


def test_json_onto_a_full_disk_says_so_and_exits_3(tmp_path):
    """`--json > file` on a full file system (/dev/full): the document is lost, so say so
    and exit 3, as for the run directory; the statistics are on stderr."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "couplescope", "--model", "simplenet", "--iterations", "5",
                               *QUIET, "--json"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=180,
                              env=dict(os.environ, NO_COLOR="1", TMPDIR=str(tmp)), cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and "PASSED" in proc.stderr
    assert "the JSON document could not be written to stdout: No space left on device" in proc.stderr
    assert not os.listdir(tmp)


def test_the_app_without_a_terminal_refuses_at_once(tmp_path):
    proc = start("--tui", tmp_path=tmp_path)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.strip().count("\n") == 0 and "--tui needs a terminal" in err


TMUX = shutil.which("tmux")


@pytest.mark.skipif(TMUX is None, reason="needs tmux to give the app a real terminal")
@pytest.mark.parametrize("ending", ["SIGTERM", "hang-up", "hang-up, no SIGHUP"])
def test_the_app_saves_the_run_going_when_ended_or_hung_up(tmp_path, ending):
    """The app in a real terminal (tmux), a run going: SIGTERM restores the terminal and
    exits 143; closing the terminal (tmux kills the pane: SIGHUP) exits 129. Both save the
    run in progress, and leave no process and no temporary folder. "no SIGHUP": the shell
    around the app ignores SIGHUP, so none reaches the app (the kernel signals the session
    leader): the app must notice its terminal gone by itself (it used to block for good,
    its worker still busy, nothing saved), and end as on a hang-up."""
    socket = str(tmp_path / "tmux.sock")
    runs = tmp_path / "runs"
    (tmp_path / "tmp").mkdir()
    code_file = tmp_path / "code"
    command = (("trap '' HUP; " if ending == "hang-up, no SIGHUP" else "") +
               f"cd {tmp_path} && TMPDIR={tmp_path / 'tmp'} {sys.executable} -m couplescope --tui "
               f"--model toy-resnet --size 16 --iterations 1000000 --export {runs}; "
               f"echo $? > {code_file}.part && mv {code_file}.part {code_file}; sleep 30")
    tmux = [TMUX, "-S", socket]
    subprocess.run([*tmux, "new-session", "-d", "-x", "100", "-y", "30", "-s", "t", command], check=True)
    try:
        def app_process():
            """This test's app: its --export folder is this test's own (the other endings
            run beside it in the other test worker; taking their app for this one ended
            theirs, or looked for a save before this one's was made)."""
            for p in psutil.process_iter(["cmdline"]):
                cmd = p.info["cmdline"] or []
                if "--tui" in cmd and "couplescope" in cmd and str(runs) in cmd:
                    return p
            return None

        def screen() -> str:
            return subprocess.run([*tmux, "capture-pane", "-p", "-t", "t"], capture_output=True,
                                  text=True).stdout

        # states, not times: the app is drawn (its footer), then the run has timed calls in
        # its staging run directory (under TMPDIR), so the save has something to keep (a
        # first native build comes before them: minutes on a loaded machine)
        wait_for(lambda: app_process() is not None and "r run" in screen(), what="the app")
        app = app_process()
        subprocess.run([*tmux, "send-keys", "-t", "t", "r"], check=True)
        wait_for(lambda: timed_calls(tmp_path / "tmp", os.path.join("**", "events.jsonl")) >= 1,
                 seconds=900, what="the run's first timed call")
        processes = [app, *app.children(recursive=True)]
        if ending == "SIGTERM":
            app.send_signal(signal.SIGTERM)
            # the exit code is written aside and moved in whole: the file's being there is the
            # state (a file written in place was once read between its creation and the write)
            wait_for(lambda: code_file.exists(), what="the app to exit")
            assert code_file.read_text().strip() == "143"
            shown = screen()
            assert "saved to" in shown and "Pick p" not in shown   # the terminal is back
        else:
            shell = app.parent()   # ignoring SIGHUP, it outlives the terminal: ended below
            subprocess.run([*tmux, "kill-session", "-t", "t"], check=True)
            if ending == "hang-up, no SIGHUP":
                wait_for(lambda: code_file.exists(), what="the app to exit")
                assert code_file.read_text().strip() == "129"
                for p in [shell, *shell.children(recursive=True)]:
                    p.kill()
        gone, alive = psutil.wait_procs(processes, timeout=30)
        assert not alive, [p.cmdline() for p in alive]
        [run] = list(runs.iterdir())
        v = json.loads((run / "results.json").read_text())["variants"][0]
        assert v["status"] == "interrupted" and v["stats"]["n"] >= 1
        assert not os.listdir(tmp_path / "tmp")
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


DIES_LATER = (
    "import os, signal, time\n"
    "import numpy as np\n"
    "calls = 0\n"
    "def initialize(config):\n    pass\n"
    "def compute(inputs, output):\n"
    "    global calls\n"
    "    calls += 1\n"
    "    if calls == 5:                       # warm-up, three timed calls, then SIGKILL\n"
    "        os.kill(os.getpid(), signal.SIGKILL)\n"
    "    time.sleep(0.06)                     # one call per batch: each is reported alone\n"
    "    output[...] = 3.0 * inputs[0]\n"
    "def reference(inputs):\n    return 3.0 * np.asarray(inputs[0])\n")


def test_one_status_for_a_worker_killed_half_way(tmp_path):
    """A worker killed with SIGKILL after three passing timed calls: the table, results.json
    (the variant and the comparison row) and the exit code all say ERROR (the comparison
    used to say PASSED)."""
    (tmp_path / "dies.py").write_text(DIES_LATER)
    runs = tmp_path / "runs"
    proc = start("--model", tmp_path / "dies.py", "--backend", "bridge", "--input-shape", "4",
                 "--warmup", "1", "--iterations", "6", "--profile-iterations", "0", "--telemetry-hz", "0",
                 "--export", runs, tmp_path=tmp_path)
    processes = family(proc)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "worker ended with signal 9" in err
    [run] = list(runs.iterdir())
    doc = json.loads((run / "results.json").read_text())
    v, row = doc["variants"][0], doc["comparison"][0]
    assert v["stats"]["n"] == 3 and v["status"] == "failed" and v["verdict"] == "error"
    assert row["verdict"] == "error" and row["passed"] is False
    table = out.split("comparison (overhead = call minus forward):")[1]
    (line,) = [line for line in table.splitlines() if line.startswith(v["name"])]
    assert line.split()[-1] == "ERROR" and "PASSED" not in table
    assert_nothing_left(processes, tmp_path)
