"""A full disk, for real: small tmpfs mounts (root only; skipped with the reason elsewhere).

An export that runs out of room keeps results.json whenever there was room for it at the
start (about 100 KB for a run of a few variants), leaves no file cut short or empty (a
reader would take it for a whole one), says which files are missing and exits 3; a
picture that cannot be written exits 3 too, as every write failure does.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import struct
import subprocess

import pytest

import psutil
from test_endings import QUIET, family, start

from couplescope.core import replay

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


@pytest.fixture
def small_disk(tmp_path):
    """A mount point; call it with a size ("200k") to mount a tmpfs there."""
    mounted = []

    def mount(size: str, name: str = "full"):
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("needs root (mount -t tmpfs) to make a small file system that fills up")
        path = tmp_path / name
        path.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"mount -t tmpfs is not permitted here: {done.stderr.strip()}")
        mounted.append(path)
        return path

    yield mount
    for path in mounted:
        subprocess.run(["umount", str(path)], check=False)


def fill(disk, leave: int) -> None:
    """Fill `disk` until only about `leave` bytes are free."""
    with open(disk / "filler", "ab") as f:
        f.write(os.urandom(max(0, shutil.disk_usage(disk).free - leave)))


def _tfrecords_whole(data: bytes) -> bool:
    """Every record of a TensorBoard event file has its length, data and checksums."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    at = 0
    while at < len(data):
        if len(data) - at < 12:
            return False
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        body = data[at + 12:at + 12 + length]
        if masked_crc32c(header) != header_crc or len(body) != length or len(data) < at + 16 + length:
            return False
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if masked_crc32c(body) != body_crc:
            return False
        at += 16 + length
    return True


def assert_every_file_whole(run) -> list[str]:
    """No file in the run directory is empty or cut short; return their relative paths."""
    found = []
    for folder, _, files in os.walk(run):
        for name in files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, run)
            found.append(rel)
            data = open(path, "rb").read()
            assert data, f"{rel} is empty"
            assert not name.startswith(".") and ".tmp-" not in name, f"{rel} was left behind"
            if name.endswith(".jsonl"):
                assert data.endswith(b"\n"), f"{rel} ends mid-line"
                for line in data.decode().splitlines():
                    json.loads(line)
            elif name.endswith(".json"):
                json.loads(data)
            elif name.endswith(".json.gz"):
                json.loads(gzip.decompress(data))
            elif name.endswith(".png"):
                assert data.endswith(b"IEND\xaeB`\x82"), f"{rel} is cut short"
            elif ".tfevents." in name:
                assert _tfrecords_whole(data), f"{rel} is cut short"
            elif name.endswith(".log"):
                assert data.endswith(b"\n"), f"{rel} is cut short"
            else:
                raise AssertionError(f"unexpected file {rel}")
    return found


def assert_nothing_left(processes, tmp_path) -> None:
    """No process of the run and no temporary folder of it remain (torch's compile cache,
    torchinductor_<user>, is kept where torch keeps it: couplescope/protocol/scratch.py)."""
    gone, alive = psutil.wait_procs(processes, timeout=10)
    assert not alive, [p.cmdline() for p in alive]
    left = [n for n in os.listdir(tmp_path / "tmp") if not n.startswith("torchinductor_")]
    assert not left, left


def _missing(err: str) -> list[str]:
    """The files the closing line says were not written."""
    match = re.search(r"[;:] not written(?: either)?: (.*)$", err, re.M)
    assert match, err
    return match.group(1).split(", ")


@pytest.mark.e2e
def test_a_full_disk_keeps_results_json_first_and_leaves_only_whole_files(tmp_path, small_disk):
    """100 KB free at the start: two profiled variants with telemetry fill it (events.jsonl,
    scalars, traces). results.json is kept; what could not be written whole is removed and
    named; the command exits 3."""
    disk = small_disk("200k")
    fill(disk, 100 * 1024)
    runs = disk / "runs"
    proc = start("--model", "simplenet", "--backend", "torchscript,bridge", "--iterations", "10",
                 "--telemetry-hz", "10", "--export", runs, tmp_path=tmp_path)
    processes = family(proc)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 3, err
    assert "Traceback" not in err
    [run] = list(runs.iterdir())
    doc = json.loads((run / "results.json").read_text())
    assert [v["stats"]["n"] for v in doc["variants"]] == [10, 10]
    assert "export incomplete (cannot write" in err and "No space left on device" in err, err
    assert "results.json was written" in err and f"results: {run / 'results.json'}" in out
    files = assert_every_file_whole(run)
    missing = _missing(err)
    assert missing and "results.json" not in missing, err
    for name in missing:
        assert not list(run.glob(name)), f"{name} is said to be missing but is there"
    assert set(files).isdisjoint(missing)
    assert_nothing_left(processes, tmp_path)


@pytest.mark.e2e
def test_a_run_too_big_for_the_disk_says_results_were_not_saved(tmp_path, small_disk):
    """20 000 iterations cannot fit in 400 KB at all: the statistics are printed, results.json
    is said not saved, and still nothing cut short or empty is left."""
    disk = small_disk("400k")
    proc = start("--model", "simplenet", "--iterations", "20000", *QUIET, "--export", disk, tmp_path=tmp_path)
    processes = family(proc)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 3, err
    assert "Traceback" not in err
    assert "results not saved: cannot write" in err and "results.json: No space left on device" in err
    assert "simplenet-torchscript" in out and "PASSED" in out   # the statistics are there
    [run] = [p for p in disk.iterdir() if p.is_dir()]
    assert not (run / "results.json").exists()
    for name in _missing(err):
        assert not list(run.glob(name)), f"{name} is said to be missing but is there"
    assert_every_file_whole(run)
    assert_nothing_left(processes, tmp_path)


def test_plot_onto_a_full_disk_exits_3_and_leaves_nothing(command, tmp_path, small_disk):
    """A picture that cannot be written is not bad input: exit 3, one line, no file."""
    events = replay.read(os.path.join(FIXTURES, "two-backends.jsonl"))
    saved = tmp_path / "run"
    saved.mkdir()
    (saved / "results.json").write_text(json.dumps(replay.document(events, "two"), default=str))
    disk = small_disk("64k")
    fill(disk, 0)
    r = command("--plot", saved, "--output", disk / "plot.png")
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip() == f"couplescope: cannot write {disk / 'plot.png'}: No space left on device"
    assert sorted(os.listdir(disk)) == ["filler"]


async def test_the_app_exports_results_json_first_and_names_what_found_no_room(tmp_path, small_disk):
    """The app's export (a replayed run, the real app driven by Pilot) onto a disk with room
    for results.json (70 KB) but not for events.jsonl (118 KB) or summary.png: results.json
    is whole, nothing else is cut short, and the app says which files are missing."""
    from test_tui_replay import SIZE, replay_app, run_replay, until

    def exported_or_failed(app) -> bool:
        """The export (on a thread) has ended: the log says where it went, or why not."""
        return any(n.startswith(("exported ", "export failed: ")) for n in app.notes)

    disk = small_disk("256k")
    fill(disk, 80 * 1024)
    app = replay_app("two-backends")
    app.options.export = str(disk)
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        await pilot.press("e")
        await until(pilot, lambda: exported_or_failed(app), app.notes[-1:])
        record = app.runs[1]
    assert record.export_path, app.notes[-3:]
    doc = json.loads(open(os.path.join(record.export_path, "results.json")).read())
    assert [v["name"] for v in doc["variants"]] == ["simplenet-torchscript", "simplenet-bridge-eager"]
    assert "events.jsonl" in record.export_missing and "summary.png" in record.export_missing
    files = assert_every_file_whole(record.export_path)
    assert set(files).isdisjoint(record.export_missing)
    assert any(n.startswith("export incomplete (no room): not written: events.jsonl") for n in app.notes), app.notes
    # no room for results.json at all: nothing is left, and the export is said to have failed
    fill(disk, 0)
    app = replay_app("two-backends")
    app.options.export = str(disk)
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        await pilot.press("e")
        await until(pilot, lambda: exported_or_failed(app), app.notes[-1:])
        assert app.runs[1].export_path is None
        assert any(n.startswith("export failed: ") and "No space left on device" in n for n in app.notes)
    assert sorted(os.listdir(disk)) == sorted(["filler", os.path.basename(record.export_path)])


def test_results_json_bigger_than_its_reserve_takes_the_room_of_the_run_s_other_files(tmp_path, small_disk):
    """A run's telemetry timeline grows with its time: on a slow machine results.json
    outgrew the reserve held for it, and was lost while a trace kept its room (this file's
    first test failed so at a load of 8). The largest other files are given up for it, one
    at a time, and named missing. Here: the reserve held, a 150 KB trace written, the disk
    filled; results.json (the recorded training run's, about 100 KB) comes first."""
    from couplescope.export.run_dir import RunDirectoryExporter
    from couplescope.results.builder import ResultsBuilder

    builder = ResultsBuilder()
    for ev in replay.read(os.path.join(FIXTURES, "training.jsonl")):
        builder.on_event(ev)
    size = len(builder.document_text())
    assert 70_000 < size < 140_000, size   # more than the reserve, less than the trace
    disk = small_disk("400k")
    exporter = RunDirectoryExporter(str(disk / "runs"), "training")
    exporter._create()   # the run directory, with results.json's reserve
    trace = os.path.join(exporter.path, "traces", "direct", "events.out.tfevents.1")
    small = os.path.join(exporter.path, "direct.output.log")
    os.makedirs(os.path.dirname(trace))
    with open(trace, "wb") as f:
        f.write(os.urandom(150 * 1024))
    with open(small, "w") as f:
        f.write("a worker's printed line\n")
    fill(disk, 0)
    assert exporter._save_results(builder)
    with open(os.path.join(exporter.path, "results.json")) as f:
        assert len(json.load(f)["variants"]) == len(builder.variants)
    assert exporter.missing == [os.path.relpath(trace, exporter.path)] and not os.path.exists(trace)
    assert os.path.exists(small)   # the largest first, and no more than it took
