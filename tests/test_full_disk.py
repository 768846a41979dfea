"""Write failures keep the measurements: a disk that fills up during --export, and
standard output on a full disk. Real ENOSPC: a small tmpfs (mounting needs root; skipped
with the reason otherwise) and /dev/full.

What must hold: the statistics are printed, what fits is written (events.jsonl up to its
last whole line, every line an event), no half-written file is left (results.json.tmp-*,
a partial TensorBoard file), the exit code is 3, one line says where things stand, and
no process or temporary folder remains.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from batchjob import Job, mount_small_disk

MANY = ["--model", "simplenet", "--iterations", "3000", "--profile-iterations", "0",
        "--telemetry-hz", "0", "--quiet"]


@pytest.fixture
def small_disk(tmp_path):
    path = tmp_path / "disk"
    unmount = mount_small_disk(path, "128k")
    yield path
    unmount()


def test_events_file_writes_what_fits_and_catches_up_when_space_frees(small_disk):
    """Fast (no worker): the writer alone, on a disk that is really full."""
    from couplescope.export.run_dir import EventsFile
    from couplescope.protocol import events

    filler = small_disk / "filler"
    events_file = EventsFile(str(small_disk / "events.jsonl"))
    with open(filler, "wb") as f:   # leave about 8 KiB
        f.write(b"x" * (os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize - 8192))
    made = [events.make("log", "v", message=f"event {i} " + "y" * 200) for i in range(200)]
    for ev in made[:100]:
        events_file.add(ev)
    assert events_file.error is not None and events_file.error.errno == 28   # ENOSPC, for real
    held = (small_disk / "events.jsonl").read_text().splitlines()
    assert 0 < len(held) < 100 and [json.loads(line)["message"] for line in held] == \
        [ev["message"] for ev in made[:len(held)]]                         # whole lines, in order
    os.unlink(filler)
    for ev in made[100:]:
        events_file.add(ev)
    events_file.close()
    assert events_file.error is None and not events_file.waiting
    assert [json.loads(line)["message"] for line in (small_disk / "events.jsonl").read_text().splitlines()] == \
        [ev["message"] for ev in made]


@pytest.mark.e2e
def test_a_disk_that_fills_mid_run_keeps_the_measurements(tmp_path, small_disk):
    job = Job([*MANY, "--export", small_disk / "runs"], tmp_path, tmp_path / "tmp")
    assert job.finish() == 3, job.err
    assert "Traceback" not in job.err
    assert "sample size: 3000" in job.out and "comparison" in job.out        # the statistics
    (run,) = (small_disk / "runs").iterdir()
    lines = (run / "events.jsonl").read_text().splitlines()
    parsed = [json.loads(line) for line in lines]                            # every line whole
    timed = [ev["index"] for ev in parsed if ev["event"] == "iteration" and ev["kind"] == "timed"]
    assert 0 < len(timed) < 3000 and timed == list(range(1, len(timed) + 1))
    assert f"holds {len(lines)} events, up to timed iteration {timed[-1]} of simplenet-torchscript" in job.err
    assert "results.json was not written (No space left on device)" in job.err
    assert "the statistics printed here cover every iteration" in job.err
    left = [str(p.relative_to(run)) for p in run.rglob("*") if p.is_file()]
    assert left == ["events.jsonl"], left             # no results.json.tmp-*, no partial scalars
    assert "results: " not in job.out                 # no claim of a results.json
    job.assert_nothing_left()


@pytest.mark.e2e
def test_standard_output_on_a_full_disk_still_exports_everything(tmp_path):
    """`couplescope ... > out.txt` on a full disk: /dev/full fails every write with ENOSPC."""
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "couplescope", "--model", "simplenet", "--iterations", "3",
                            "--profile-iterations", "0", "--telemetry-hz", "0", "--export", tmp_path / "runs"],
                           stdout=full, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                           env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr
    assert "error: standard output could not be written (No space left on device)" in r.stderr
    doc = json.loads(next((tmp_path / "runs").glob("*/results.json")).read_text())
    assert doc["variants"][0]["stats"]["n"] == 3
    assert any(d.get("check") == "write_failed" for d in doc["variants"][0]["diagnostics"])
    assert not [n for n in os.listdir(tmp_path) if "couplescope-" in n]
