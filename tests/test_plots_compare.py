"""Saved runs as pictures (--plot, summary.png) and the regression gate (--compare), on
recorded real runs (tests/fixtures, replayed into results documents): no worker, no torch.
The end-to-end versions with real runs are in test_compare_e2e.py."""

from __future__ import annotations

import copy
import json
import os

import pytest

from couplescope.core import replay
from couplescope.export import plots
from couplescope.results import labels, regression, saved, sweeps

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def document(name: str) -> dict:
    """A recording's results document as --plot and --compare read a saved run: the
    recordings predate run_started's label_parts, which reading a saved run fills in."""
    from couplescope.frontends.cli.saved_runs import with_label_parts

    evs = replay.read(os.path.join(FIXTURES, f"{name}.jsonl"))
    return with_label_parts(json.loads(json.dumps(replay.document(evs, name), default=str)))


def save(doc: dict, folder) -> str:
    """A run directory holding `doc` as results.json, as --export leaves it."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump(doc, f)
    return str(folder)


def slowed(doc: dict, name: str, factor: float) -> dict:
    """The same run with one variant's calls `factor` times longer."""
    out = copy.deepcopy(doc)
    for v in out["variants"]:
        if v["name"] == name:
            for block in v["iterations"]:   # (results/call_columns.py's blocks)
                block["ns"] = [round(ns * factor) for ns in block["ns"]]
    return out


# -- the statistic ----------------------------------------------------------------------

def test_the_interval_is_deterministic_and_covers_the_ratio_of_medians():
    base = [1.0 + 0.01 * (i % 7) for i in range(40)]
    new = [1.2 * t for t in base]
    low, high = regression.ratio_interval(base, new)
    assert (low, high) == regression.ratio_interval(base, new)
    assert low <= 1.2 <= high and high - low < 0.1


def test_blocks_of_consecutive_calls_widen_the_interval_of_a_run_with_a_slow_stretch():
    """A busy neighbour slows a stretch of calls: those are not independent evidence."""
    steady = [1.0] * 30
    stretch = [1.0] * 15 + [1.3] * 15       # half the run slowed by a neighbour
    low, high = regression.ratio_interval(steady, stretch)
    assert low < 1.05 < high                # the gate cannot call this slower
    assert regression.block_length(30) == 5 and regression.block_length(1) == 1


@pytest.mark.parametrize("low, high, expected", [
    (1.06, 1.20, regression.SLOWER), (1.01, 1.20, regression.SAME), (0.90, 1.10, regression.SAME),
    (0.80, 0.95, regression.FASTER), (0.80, 0.96, regression.SAME)])
def test_verdicts_need_the_whole_interval_beyond_the_threshold(low, high, expected):
    assert regression.verdict(low, high, 0.05) == expected


def test_a_run_compared_with_itself_passes_and_a_slowed_variant_fails_by_name():
    base = document("two-backends")
    same = regression.compare(base, base)
    assert same["exit_code"] == 0 and same["slower"] == []
    assert {r["verdict"] for r in same["variants"]} == {regression.SAME}
    assert all(r["ratio"] == 1.0 for r in same["variants"])
    worse = regression.compare(base, slowed(base, "simplenet-bridge-eager", 1.5))
    assert worse["exit_code"] == 1 and worse["slower"] == ["simplenet-bridge-eager"]
    row = worse["variants"][1]
    assert row["ratio"] == pytest.approx(1.5, rel=1e-4) and row["ci_low"] > 1.05   # (slowed to whole ns)
    better = regression.compare(slowed(base, "simplenet-torchscript", 1.5), base)
    assert better["variants"][0]["verdict"] == regression.FASTER and better["exit_code"] == 0


def test_a_variant_on_one_side_only_is_listed_not_an_error():
    base, new = document("two-backends"), document("two-backends")
    new["variants"][1]["name"] = "renamed"
    doc = regression.compare(base, new)
    assert [(r["name"], r["verdict"]) for r in doc["variants"]] == [
        ("simplenet-torchscript", regression.SAME), ("simplenet-bridge-eager", regression.ONLY_BASE),
        ("renamed", regression.ONLY_NEW)]
    assert doc["exit_code"] == 0


def test_mpi_variants_are_compared_on_the_slowest_rank_per_step():
    doc = document("mpi")
    v = doc["variants"][0]
    assert len(saved.timed_seconds(v)) == v["stats"]["n"] == 6
    assert regression.compare(doc, doc)["variants"][0]["base_median"] == pytest.approx(v["stats"]["median"])


# -- the command ------------------------------------------------------------------------

def test_compare_exit_codes_the_table_and_the_json(command, tmp_path):
    base = document("two-backends")
    a, b = save(base, tmp_path / "a"), save(base, tmp_path / "b")
    worse = save(slowed(base, "simplenet-bridge-eager", 1.5), tmp_path / "worse")
    r = command("--compare", a, b)
    assert r.returncode == 0, r.stderr
    assert "no significant change" in r.stdout and "no variant slower by more than 5%" in r.stdout
    r = command("--compare", a, worse)
    assert r.returncode == 1
    assert "SLOWER" in r.stdout and "1 variant slower by more than 5%: simplenet-bridge-eager" in r.stdout
    assert command("--compare", a, worse, "--threshold", "60").returncode == 0   # 1.5x is within 60%
    r = command("--compare", a, os.path.join(worse, "results.json"), "--json")   # a results file works too
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["slower"] == ["simplenet-bridge-eager"] and doc["threshold"] == 0.05
    assert set(doc["variants"][0]) >= {"name", "base_median", "new_median", "ratio", "ci_low", "ci_high",
                                       "verdict", "base_n", "new_n", "notes"}


def test_compare_names_a_new_run_whose_variant_did_not_pass(command, tmp_path):
    """A worker SIGKILLed half way (a recorded run): its timings compare, and the line under
    the table says the variant ended ERROR, as its own table and results.json did."""
    died = document("dies")
    assert died["variants"][0]["verdict"] == "error"
    a, b = save(died, tmp_path / "a"), save(died, tmp_path / "b")
    r = command("--compare", a, b)
    name = died["variants"][0]["name"]
    assert f"note: in the new run, {name} ERROR (its own exit code said so)" in r.stdout, r.stdout
    doc = json.loads(command("--compare", a, b, "--json").stdout)
    assert doc["variants"][0]["new_ended"] == "error" and doc["variants"][0]["base_ended"] == "error"


def test_compare_refuses_bad_input_with_one_line_and_exit_2(command, tmp_path):
    a = save(document("two-backends"), tmp_path / "a")
    other = save(document("layout-c"), tmp_path / "other")
    (tmp_path / "junk.json").write_text("{not json")
    (tmp_path / "parent" / "run1").mkdir(parents=True)
    save(document("two-backends"), tmp_path / "parent" / "run1")
    cases = {("--compare", a, str(tmp_path / "missing")): "run not found",
             ("--compare", a, other): "no variant in common",
             ("--compare", a, str(tmp_path / "junk.json")): "invalid JSON",
             ("--compare", a, str(tmp_path / "parent")): "it holds runs: run1; name one",
             ("--compare", a, a, "--threshold", "x"): "not a percentage",
             ("--compare", a, a, "--output", "f.png"): "--output goes with --plot",
             ("--compare", a, a, "--model", "simplenet"): "--model start or show a run",
             ("--plot", a, "--compare", a, a): "separate commands",
             ("--threshold", "5"): "--threshold goes with --compare",
             ("--plot", a, "--output", "f.png", "--json"): "--json goes with --compare"}
    for argv, message in cases.items():
        r = command(*argv)
        assert r.returncode == 2, (argv, r.stdout, r.stderr)
        assert message in r.stderr and r.stderr.count("\n") == 1, (argv, r.stderr)


def test_plot_writes_png_and_svg_and_refuses_other_names(command, tmp_path):
    run = save(document("two-backends"), tmp_path / "run")
    r = command("--plot", run, "--output", tmp_path / "f.png")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "f.png").read_bytes()[:8] == PNG_MAGIC
    r = command("--plot", run, "--output", tmp_path / "f.svg")
    svg = (tmp_path / "f.svg").read_text()
    assert r.returncode == 0 and svg.lstrip().startswith("<?xml") and "<svg" in svg
    for argv, message in {("--plot", run, "--output", tmp_path / "f.pdf"): "name it .png or .svg",
                          ("--plot", run): "--plot needs --output",
                          ("--plot", run, "--output", tmp_path / "no" / "f.png"): "does not exist",
                          ("--plot", tmp_path / "missing", "--output", tmp_path / "g.png"): "run not found"}.items():
        r = command(*argv)
        assert r.returncode == 2 and message in r.stderr, (argv, r.stderr)
    assert sorted(os.listdir(tmp_path)) == ["f.png", "f.svg", "run"]   # nothing half-written


# -- what the pictures hold -------------------------------------------------------------

def _texts(fig) -> str:
    axes = fig.axes + [child for ax in fig.axes for child in ax.child_axes]   # the medians' column
    return "\n".join([fig._suptitle.get_text()] + [ax.get_title() for ax in fig.axes]
                     + [t.get_text() for ax in axes for t in ax.get_yticklabels() + ax.texts])


def test_the_figure_says_what_ran_and_draws_boxes_and_stacked_phases():
    fig = plots.figure([document("two-backends")])
    text = _texts(fig)
    # what every variant shares is in the title; each box is labelled by its variant
    assert "simplenet" in fig._suptitle.get_text() and "torch 2.13.0" in fig._suptitle.get_text()
    assert "2 threads" in fig._suptitle.get_text() and "cpu" in fig._suptitle.get_text()
    assert "simplenet-torchscript" in text and "simplenet-bridge-eager" in text
    assert "box 25-75%, whiskers 5-95%" in text and "n=12" in text
    # units from the data: these calls take about a hundred microseconds
    box_axis = next(ax for ax in fig.axes if "distribution" in ax.get_title())
    assert "warm-up and profiled left out" in box_axis.get_xlabel()
    assert "warm-up 64.34 ms" in text                      # in the calls panel's title, not its axis
    assert "µs" in box_axis.xaxis.get_major_formatter()(1.2e-4)
    assert not any("median per call vs size" in ax.get_title() for ax in fig.axes)   # no sweep


def test_a_sweep_gets_median_vs_size_with_bands_one_line_per_backend():
    doc = document("sweep")
    fig = plots.figure([doc])
    sweep_ax = next(ax for ax in fig.axes if "median per call vs size" in ax.get_title())
    lines = sweep_ax.get_lines()
    assert len(lines) == 2
    assert [list(line.get_xdata()) for line in lines] == [[8, 16, 32], [8, 16, 32]]
    legend = [t.get_text() for t in sweep_ax.get_legend().get_texts()]
    assert legend == ["deep-linear-torchscript", "deep-linear-bridge-eager"]   # the variants' names, less the size
    assert len(sweep_ax.collections) == 2                  # one 25-75% band per line
    assert sweep_ax.get_xscale() == "linear"               # 8..32 is not 10x
    assert sweep_ax.get_xlabel() == "deep-linear size"


def test_summary_png_beside_results_json_when_a_run_is_exported(tmp_path):
    from test_replay import replay_run

    outcome, out, err = replay_run("sweep", export=str(tmp_path))
    picture = os.path.join(outcome.run_directory, "summary.png")
    assert outcome.summary_plot == picture and os.path.getsize(picture) > 20_000
    with open(picture, "rb") as f:
        assert f.read(8) == PNG_MAGIC


def test_sweeps_group_by_everything_but_size():
    doc = document("sweep")
    groups = sweeps.series(doc["variants"])
    names = [[doc["variants"][i]["name"] for i in g] for g in groups]
    assert names == [["deep-linear-torchscript-8", "deep-linear-torchscript-16", "deep-linear-torchscript-32"],
                     ["deep-linear-bridge-eager-8", "deep-linear-bridge-eager-16", "deep-linear-bridge-eager-32"]]
    assert sweeps.series(document("two-backends")["variants"]) == []
    described = labels.describe(doc["variants"][3], doc["environment"])
    assert described["backend"] == "bridge (eager)" and described["size"] == "size 8"


def test_the_headless_table_of_a_sweep_is_grouped_by_size():
    from test_replay import replay_run

    _, out, _ = replay_run("sweep")
    table = out.split("comparison (overhead = call minus forward; vs fastest at the same size):\n")[1]
    lines = table.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("size ")]
    assert [lines[i] for i in heads] == ["size 8:", "size 16:", "size 32:"]
    for i in heads:   # each size ranks its own two variants against its own fastest
        rows = lines[i + 1:i + 3]
        assert {r.split()[0].rsplit("-", 1)[1] for r in rows} == {lines[i][5:-1]}
        assert sum("1.00x" in r for r in rows) == 1


def _builder(name: str, *more):
    from couplescope.results.builder import ResultsBuilder

    builder = ResultsBuilder(name)
    for ev in replay.read(os.path.join(FIXTURES, f"{name}.jsonl")) + list(more):
        builder.on_event(ev)
    return builder


def test_no_summary_png_for_an_interrupted_run_and_a_failed_picture_never_costs_the_run(tmp_path):
    from types import SimpleNamespace

    from couplescope.export.summary_plot import SummaryPlot
    from couplescope.protocol import events

    stopped = events.make("variant_failed", "simplenet-bridge-eager", reason="interrupted", kind="interrupted",
                          traceback="")
    plot = SummaryPlot(SimpleNamespace(path=str(tmp_path)))
    plot.session_done(_builder("two-backends", stopped))
    assert plot.path is None and "interrupted" in plot.error and os.listdir(tmp_path) == []
    gone = SummaryPlot(SimpleNamespace(path=str(tmp_path / "removed")))   # the directory went away
    gone.session_done(_builder("two-backends"))
    assert gone.path is None and gone.error.startswith("not drawn: UsageError: cannot write")


def test_the_rounds_panel_calls_five_rounds_range_a_range_not_a_95_percent_interval():
    """With 5 rounds or fewer the bootstrap's interval is the rounds' lowest and highest
    ratio (paired.range_only): summary.png titled that band "its 95% interval" (seventh
    walk 3a, said of the log; the figure said it too). A run of more rounds keeps 95%."""
    def title(name: str) -> str:
        fig = plots.figure([document(name)])
        [t] = [ax.get_title() for ax in fig.axes if ax.get_title().startswith("ratio to")]
        return t

    assert "band: the rounds' range: too few rounds for a 95% interval" in title("preset-train")
    assert title("busy-rounds").endswith("band: its 95% interval)")
