"""What the headless output prints of a run's checks and figures: the first few checks,
every failure and a count of the rest; the profiler's figures said to be the profiler's;
a rank's device without a GPU that is not there; a worker's traceback under --debug;
a skipped Slurm test's reason on one line."""

from __future__ import annotations

import io
import os
import stat
import textwrap

import pytest

from couplescope.core import pipeline, replay, synthetic
from couplescope.frontends.cli.printer import HeadlessPrinter
from couplescope.frontends.cli.ranks_report import report_lines
from couplescope.protocol import columns, events
from couplescope.protocol.spec import RunSpec

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
QUIET = ["--profile-iterations", "0", "--telemetry-hz", "0"]


def failing_at(*indices):
    """A synthetic worker's script: the timed calls at `indices` fail their check."""
    def script(spec, played):
        out = []
        for ev in played:
            if ev.event == "iterations" and ev.kind == "timed":
                records = [{"index": c.index, "seconds": c.seconds, "phases": c.phases,
                            "max_rel_error": 2.0 if c.index in indices else 0.0,
                            "passed": c.index not in indices,
                            "error": "transposed" if c.index in indices else None} for c in ev.calls]
                ev = events.make("iterations", ev.variant, **columns.iteration_columns("timed", ev.first_index, records))
            out.append(ev)
        return out
    return script


def printed(specs, script=None, **printer):
    out, err = io.StringIO(), io.StringIO()
    shown = HeadlessPrinter(len(specs), out=out, err=err, **printer)
    outcome = pipeline.run(synthetic.request(specs), [shown], workers=synthetic.SyntheticWorkers(script))
    shown.close()
    return outcome, out.getvalue()


def replayed(name: str) -> str:
    """What the printer prints of a recorded real run (tests/fixtures/NAME.jsonl)."""
    evs = replay.read(os.path.join(FIXTURES, f"{name}.jsonl"))
    recording = replay.Recording(evs)
    out = io.StringIO()
    shown = HeadlessPrinter(len(recording.specs), out=out, err=io.StringIO())
    pipeline.run(recording.request(), [shown], workers=replay.replayer(evs))
    shown.close()
    return out.getvalue()


SPEC = RunSpec(model="simplenet", name="v", warmup=1, iterations=20, profile_iterations=0)


def test_a_variant_prints_its_first_checks_every_failure_and_a_count():
    outcome, out = printed([SPEC], failing_at(3, 12))
    assert outcome.exit_code == 1
    lines = out.splitlines()
    passed = [line for line in lines if line.startswith("PASSED :: [check iteration")]
    failed = [line for line in lines if line.startswith("FAILED :: [check iteration")]
    assert [line.split()[4] for line in passed] == ["1", "2", "4", "5", "6"]
    assert [line.split()[4] for line in failed] == ["3", "12"] and all("(transposed)" in f for f in failed)
    assert "13 more checks PASSED (--verbose prints every one)" in lines
    # the count comes before the variant's statistics
    assert lines.index("13 more checks PASSED (--verbose prints every one)") < \
        next(i for i, line in enumerate(lines) if line.startswith("min "))


def test_verbose_prints_every_check_and_quiet_only_the_failures():
    _, out = printed([SPEC], failing_at(3), verbose=True)
    assert out.count("PASSED :: [check iteration") == 19 and "more checks PASSED" not in out
    _, out = printed([SPEC], failing_at(3), quiet_iterations=True)
    assert "PASSED :: [check iteration" not in out and out.count("FAILED :: [check iteration") == 1
    assert "more checks PASSED" not in out


def test_each_rank_of_a_small_job_prints_its_first_checks():
    """Two ranks print their own lines, as FTorch's MPI example: each its first 5."""
    out = replayed("mpi")
    lines = [line for line in out.splitlines() if line.startswith("PASSED :: [check iteration")]
    assert [line.split()[4:7] for line in lines] == [[str(i), "on", "rank"] for i in range(1, 6) for _ in (0, 1)]
    assert [line.split()[7] for line in lines] == ["0", "1"] * 5
    assert "2 more checks PASSED (--verbose prints every one)" in out


def test_quiet_and_verbose_together_are_refused_in_one_line(command):
    r = command("--model", "simplenet", "--quiet", "--verbose")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "couplescope: argument --verbose: not allowed with argument --quiet (see couplescope --help)"]


def test_the_profilers_phase_times_are_said_to_be_the_profilers_and_follow_the_timings():
    """The trace's time per phase (10-50 times the timed phases of a microsecond model)
    sat above the timings with nothing to say it was measured under the profiler."""
    out = replayed("two-backends")
    lines = out.splitlines()
    traced = [i for i, line in enumerate(lines)
              if line.startswith("trace: time per phase under the profiler (per iteration; not the timings): ")]
    timed = [i for i, line in enumerate(lines) if line.startswith("median per phase: ")]
    assert len(traced) == len(timed) == 2
    assert all(t < p for t, p in zip(timed, traced))
    assert sum("profiled: 2 iteration(s) under torch.profiler" in line for line in lines) == 2


def test_a_rank_on_a_machine_without_a_gpu_names_no_gpu():
    """The MPI rank table said `cpu (gpu 0)` on a machine with no GPU."""
    out = replayed("nodes")
    table = out.split("per rank (timed iterations):")[1]
    assert "(gpu" not in table and " cpu " in table
    iterations = [{"index": 1, "kind": "timed", "seconds": 1e-3, "phases": {}, "max_rel_error": 0.0,
                   "passed": True, "rank": r} for r in (0, 1)]
    with_gpus = [{"rank": r, "device": "cpu", "gpu_slot": r, "visible_devices": 2, "node": "n"} for r in (0, 1)]
    assert "cpu (gpu 1)" in "\n".join(report_lines(iterations, with_gpus))


BROKEN = textwrap.dedent('''
    def initialize(config):
        raise RuntimeError("the module's set-up broke")

    def compute(inputs, output):
        output[...] = inputs[0]

    def reference(inputs):
        return inputs[0]
''')


@pytest.mark.e2e
def test_debug_shows_the_workers_traceback(cli, tmp_path):
    (tmp_path / "broken.py").write_text(BROKEN)
    args = ("--model", tmp_path / "broken.py", "--backend", "bridge", "--input-shape", "2,4", *QUIET)
    plain = cli(*args)
    debug = cli(*args, "--debug", check_no_traceback=False)
    for r in (plain, debug):
        assert r.returncode == 1 and "RuntimeError: the module's set-up broke" in r.stderr
    assert "Traceback (most recent call last)" not in plain.stderr
    assert "the worker's traceback (--debug):" in debug.stderr
    assert "Traceback (most recent call last)" in debug.stderr and 'broken.py", line 3, in initialize' in debug.stderr


@pytest.mark.e2e
def test_the_training_preset_prints_under_200_lines(cli):
    """--preset simplenet-train printed 40 112 lines, a PASSED line per step. Its own
    10 000 steps take minutes on a loaded 2-core machine; 1 000 show the same lines."""
    r = cli("--preset", "simplenet-train", "--iterations", "1000", "--telemetry-hz", "0", timeout=900)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) < 200, len(lines)
    assert r.stdout.count("995 more steps PASSED (--verbose prints every one)") == 4
    assert r.stdout.count("PASSED :: [training step") == 4 * 5


def test_a_slurm_tests_skip_reason_is_one_line(tmp_path, monkeypatch):
    """sinfo that cannot reach its cluster prints a stack of error lines and a fatal one;
    the reason cut at 200 characters spanned lines and ended in `sinfo: fatal: )`."""
    from fixtures import slurm

    for name, body in (("sinfo", 'for i in 1 2 3 4; do echo "sinfo: error: resolve_ctls_from_dns_srv: '
                                 'res_nsearch error: Unknown host (try $i)" >&2; done\n'
                                 'echo "sinfo: fatal: Could not establish a configuration source" >&2\nexit 1\n'),
                       ("srun", "exit 0\n")):
        path = tmp_path / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    reason = slurm.reason()
    assert reason is not None and "\n" not in reason, reason
    assert reason.endswith("(sinfo: exit 1: sinfo: fatal: Could not establish a configuration source)"), reason
