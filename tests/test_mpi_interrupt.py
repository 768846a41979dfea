"""An MPI run interrupted half way, for real (2 ranks through the venv's mpiexec, SIGINT
to couplescope as Ctrl-C sends it): the per-rank table and results.json still say where
each rank ran. The ranks report it as they start (rank_info events); the table used to
wait for the end of the variant, which an interrupted run never reaches, and showed "?"."""

from __future__ import annotations

import json
import signal
import socket

import pytest

from test_endings import QUIET, assert_nothing_left, ended, family, start, timed_calls, wait_for
from test_mpi import needs_mpi


@pytest.mark.mpi
@needs_mpi
def test_an_interrupted_mpi_run_says_where_each_rank_ran(tmp_path):
    runs = tmp_path / "runs"
    proc = start("--model", "simplenet", "--backend", "mpi", "--ranks", "2", "--iterations", "1000000",
                 *QUIET, "--export", runs, tmp_path=tmp_path)
    wait_for(lambda: timed_calls(runs) >= 10, seconds=180, what="ten timed steps of both ranks")
    processes = family(proc)
    proc.send_signal(signal.SIGINT)
    out, err = ended(proc, processes, timeout=120)
    assert proc.returncode == 130, err
    assert "SIGINT: stopped; what was measured is kept" in err
    table = out.split("per rank (timed iterations):\n", 1)[1].splitlines()
    header, rows = table[0].split(), [line.split() for line in table[2:4]]
    assert header[:6] == ["rank", "node", "local", "cores", "threads", "device"]
    host = socket.gethostname()
    for r, row in enumerate(rows):
        assert row[0] == str(r) and row[1] == host and "?" not in row[:6], table[:4]
    [run] = list(runs.iterdir())
    v = json.loads((run / "results.json").read_text())["variants"][0]
    assert v["status"] == "interrupted" and v["stats"]["n"] >= 5
    assert [r["rank"] for r in v["ranks"]] == [0, 1]
    assert all(r["host"] == host and r["cores_text"] != "?" and r["threads"] >= 1 for r in v["ranks"])
    assert_nothing_left(processes, tmp_path)
