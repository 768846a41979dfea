"""The results.json kept from ad75b4d (tests/fixtures/results-ad75b4d.json) against a new
real run of the same command: --compare pairs every variant, --plot draws both, and each
variant of the old run is the same series as the new run's (what --plot's sweeps and a
sweep's baseline go by). Real workers: the new run takes a few seconds."""

from __future__ import annotations

import glob
import json

import pytest

from couplescope.results import regression, saved, sweeps
from test_results_versions import FIXTURE, PNG_MAGIC

pytestmark = pytest.mark.e2e


def test_the_old_results_document_compares_and_plots_with_a_new_run(cli, tmp_path):
    r = cli("--model", "simplenet", "--backend", "torchscript,bridge", "--iterations", "20", "--rounds", "2",
            "--profile-iterations", "0", "--telemetry-hz", "0", "--quiet", "--export", tmp_path / "runs")
    assert r.returncode == 0, r.stderr
    (new_run,) = glob.glob(str(tmp_path / "runs" / "*"))

    compared = cli("--compare", FIXTURE, new_run, "--json")
    assert compared.returncode in (0, 1, 5), compared.stdout + compared.stderr
    rows = {row["name"]: row for row in json.loads(compared.stdout)["variants"]}
    assert set(rows) == {"simplenet-torchscript", "simplenet-bridge-torchscript"}
    assert all(row["verdict"] not in (regression.ONLY_BASE, regression.ONLY_NEW, regression.EMPTY)
               and row["base_n"] == row["new_n"] == 20 for row in rows.values())

    picture = tmp_path / "both.png"
    plotted = cli("--plot", FIXTURE, new_run, "--output", picture)
    assert plotted.returncode == 0, plotted.stderr
    assert picture.read_bytes()[:8] == PNG_MAGIC

    old, new = saved.load(FIXTURE), saved.load(new_run)
    for a, b in zip(old["variants"], new["variants"]):
        assert a["name"] == b["name"]
        assert sweeps.series_key(a, old["environment"]) == sweeps.series_key(b, new["environment"])
