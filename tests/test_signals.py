"""SIGTERM and SIGHUP end a run as Ctrl-C does; a worker never outlives its parent.

Real processes and real signals: `couplescope` runs in a session of its own with the
default signal handlers (tests/batchjob.py), as under a batch system or a terminal.
After every case no process of the job and nothing in its TMPDIR remains.
"""

from __future__ import annotations

import signal
import textwrap

import pytest

from batchjob import Job, results, timed_iterations

pytestmark = pytest.mark.e2e

LONG = ["--model", "stride", "--size", "24", "--iterations", "100000", "--profile-iterations", "0",
        "--telemetry-hz", "0"]


@pytest.mark.parametrize("signum,code,name", [(signal.SIGTERM, 143, "SIGTERM"),
                                              (signal.SIGHUP, 129, "SIGHUP")])
def test_sigterm_and_sighup_keep_and_export_what_was_measured(tmp_path, signum, code, name):
    runs = tmp_path / "runs"
    job = Job([*LONG, "--export", runs], tmp_path, tmp_path / "tmp")
    job.wait_until(lambda: timed_iterations(runs) >= 3, what="three timed iterations")
    assert job.workers(), "the worker was never seen"
    job.signal(signum)
    assert job.finish() == code, job.err
    assert "Traceback" not in job.err
    assert f"stopped by {name}: what was measured is kept" in job.err
    doc = results(runs)
    v = doc["variants"][0]
    assert v["status"] == "interrupted" and v["stats"]["n"] >= 3
    assert f"sample size: {v['stats']['n']}" in job.out          # the statistics were printed
    job.assert_nothing_left()


def test_sigterm_to_every_process_as_scancel_sends_it(tmp_path):
    """Slurm signals every process of the step, the worker too (it is in its own session)."""
    runs = tmp_path / "runs"
    job = Job([*LONG, "--export", runs], tmp_path, tmp_path / "tmp")
    job.wait_until(lambda: timed_iterations(runs) >= 3, what="three timed iterations")
    for p in job.look():
        p.send_signal(signal.SIGTERM)
    assert job.finish() == 143, job.err
    assert results(runs)["variants"][0]["stats"]["n"] >= 3
    job.assert_nothing_left()


def test_worker_ends_itself_when_the_parent_is_killed_mid_model_build(tmp_path):
    """deep-linear with millions of layers spends seconds building them: the parent is
    SIGKILLed meanwhile, so the worker learns of it from the kernel (parent-death signal)."""
    job = Job(["--model", "deep-linear", "--size", "3000000", "--memory-limit", "none",
               "--telemetry-hz", "0"], tmp_path, tmp_path / "tmp")
    job.wait_until(lambda: any(p.memory_info().rss > 300 * 2**20 for p in job.workers()),
                   what="the worker building layers")
    job.signal(signal.SIGKILL)
    job.finish()
    job.wait_for_the_tree_to_end(timeout=15)
    job.sweep_as_the_next_run_would(tmp_path)
    job.assert_nothing_left()


SLOW_CALL = textwrap.dedent('''
    import numpy as np, torch
    def initialize(config):
        pass
    def compute(inputs, output):
        open("calling", "w").close()
        # one torch call of many seconds (40 squarings in C++, no Python in between)
        torch.linalg.matrix_power(torch.full((3000, 3000), 1e-3), 2**40)
        output[...] = 3.0 * inputs[0]
    def reference(inputs):
        return 3.0 * np.asarray(inputs[0])
''')


def test_worker_inside_a_long_c_call_ends_when_the_parent_is_killed(tmp_path):
    """Python runs the SIGTERM handler only between bytecodes: a worker inside one long
    torch call is ended by its watchdog thread instead, a few seconds later."""
    (tmp_path / "slow.py").write_text(SLOW_CALL)
    job = Job(["--model", tmp_path / "slow.py", "--backend", "bridge", "--input-shape", "4",
               "--warmup", "0", "--iterations", "2", "--threads", "1", "--telemetry-hz", "0"],
              tmp_path, tmp_path / "tmp")
    job.wait_until(lambda: (tmp_path / "calling").exists(), what="the long call")
    job.signal(signal.SIGKILL)
    job.finish()
    job.wait_for_the_tree_to_end(timeout=15)
    job.sweep_as_the_next_run_would(tmp_path)
    job.assert_nothing_left()


# -- the app ----------------------------------------------------------------------------

@pytest.mark.parametrize("signum,code,name", [(signal.SIGTERM, 143, "SIGTERM"),
                                              (signal.SIGHUP, 129, "SIGHUP")])
def test_app_stopped_by_a_signal_exports_the_run_and_restores_the_terminal(tmp_path, signum, code, name):
    from batchjob import TerminalJob

    runs = tmp_path / "runs"
    job = TerminalJob(["--tui", *LONG, "--export", runs], tmp_path, tmp_path / "tmp")
    job.wait_until(lambda: "press r" in job.screen, what="the app")
    job.keys("r")
    job.wait_until(lambda: job.workers() and "timed" in job.screen, what="a run in the app")
    job.signal(signum)
    assert job.finish() == code, job.screen[-2000:]
    screen = job.screen
    left = screen.rfind("\x1b[?1049l")          # the alternate screen was left ...
    assert left > screen.rfind("\x1b[?1049h")   # ... after it was last entered
    assert f"couplescope: stopped by {name}: what run #1 stride measured is in {runs}" in screen[left:].replace("\r\n", "")
    v = results(runs)["variants"][0]
    assert v["status"] == "interrupted" and v["stats"]["n"] >= 1
    job.assert_nothing_left()
