"""The regression gate and the pictures on real runs: real workers, a real user bridge
module, the real CLI. Three runs of 100 calls each (a few seconds apiece)."""

from __future__ import annotations

import glob
import json
import os

import pytest

pytestmark = pytest.mark.e2e

#: a user model whose call takes about 5 ms (a small model's forward), or one millisecond
#: more in the "new" version: the regression the gate must catch. 5 ms, not 1: a sleep
#: overshoots by the machine's wake-up latency, which moved a 1 ms call by up to 5%
#: between runs on a loaded 2-core machine (benchmarks/compare_noise.py), right at the
#: default threshold; on 5 ms the same latency is about 1%.
MODULE = '''
import time
import numpy as np

def initialize(config):
    pass

def compute(inputs, output):
    time.sleep({seconds})
    output[...] = 2.0 * inputs[0]

def reference(inputs):
    return 2.0 * np.asarray(inputs[0])
'''
#: 100 calls of 5-6 ms (0.6 s a run): at 30, a machine at a load of 8 (sleeps overshooting,
#: IQR 37-54% of the median) left 1 ms more inside the interval ([0.871, 1.198])
RUN = ["--backend", "bridge", "--input-shape", "64", "--warmup", "2", "--iterations", "100",
       "--profile-iterations", "0", "--telemetry-hz", "0", "--quiet"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def measure(cli, tmp_path, version: str, seconds: float, parent: str) -> str:
    """Run the module (the same file name, so the same variant name, in every run) and
    return its run directory."""
    folder = tmp_path / version
    folder.mkdir(exist_ok=True)
    module = folder / "usermodel.py"
    module.write_text(MODULE.format(seconds=seconds))
    r = cli("--model", module, *RUN, "--export", tmp_path / parent)
    assert r.returncode == 0, r.stderr
    (run,) = glob.glob(str(tmp_path / parent / "*"))
    return run


def test_repeated_runs_pass_and_a_millisecond_more_per_call_fails_by_name(cli, tmp_path):
    base = measure(cli, tmp_path, "base", 0.005, "first")
    again = measure(cli, tmp_path, "base", 0.005, "second")
    slower = measure(cli, tmp_path, "new", 0.006, "third")
    for run in (base, again, slower):   # --export leaves the picture beside results.json
        with open(os.path.join(run, "summary.png"), "rb") as f:
            assert f.read(8) == PNG_MAGIC

    same = cli("--compare", base, again)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no variant slower by more than 5%" in same.stdout
    same_back = cli("--compare", again, base)   # either order
    assert same_back.returncode == 0, same_back.stdout

    worse = cli("--compare", base, slower)
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "1 variant slower by more than 5%: usermodel.py-bridge" in worse.stdout
    doc = json.loads(cli("--compare", base, slower, "--json").stdout)
    (row,) = doc["variants"]
    assert doc["slower"] == [row["name"]] and row["verdict"] == "slower"
    assert 1.12 < row["ratio"] < 1.3 and row["ci_low"] > 1.05 and row["base_n"] == row["new_n"] == 100

    picture = tmp_path / "both.png"
    r = cli("--plot", base, slower, "--output", picture)
    assert r.returncode == 0 and picture.read_bytes()[:8] == PNG_MAGIC
