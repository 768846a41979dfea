"""The real app driven by Pilot over recorded real runs (couplescope.core.replay): the
watch, compare, telemetry and history views and the export, without worker processes.
The form is filled with the recording's own command line, so the request it builds
names the same variants the recording holds."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

import pytest

from couplescope.core import replay
from couplescope.frontends.cli.parser import build_parser, options_from
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.compare_screen import CompareScreen

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixtures.record import DIES, RECORDINGS  # noqa: E402

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait here is for a state

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
SIZE = (120, 40)


def replay_app(name: str, tmp_path=None, **kw) -> CoupleScopeApp:
    """The app with the recording's options filled in, playing the recording back on r
    (the recorded variants as they ran: no host is resolved again, so no compiler is
    needed). A recording of a user module gets a file of that name for the form."""
    dies = ""
    if tmp_path is not None:
        dies = str(tmp_path / "dies.py")
        with open(dies, "w") as f:
            f.write(DIES)
    argv = [a.format(dies=dies) for a in RECORDINGS[name][0]]
    options = options_from(build_parser().parse_args(argv))
    title = os.path.basename(options.preset or options.model)   # as the form's request names it
    recording = replay.Recording(replay.read(os.path.join(FIXTURES, f"{name}.jsonl")), title)
    return CoupleScopeApp(options, load_catalogue=False, recording=recording, **kw)


def compare_shown(app) -> bool:
    """The compare screen is the app's and filled: `c` from the views pushes it after the
    top line's `comparing ...` is drawn, and a screen is the app's from its push, before
    its table is filled on mount."""
    from couplescope.frontends.tui.compare_screen import CompareScreen

    return isinstance(app.screen, CompareScreen) and app.screen.filled


async def until(pilot, condition, what) -> None:
    """Wait for `condition()` to hold (a state, not a time; the deadline bounds a failure)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, what
        await pilot.pause(0.005)


async def run_replay(pilot) -> None:
    app = pilot.app
    count = len(app.runs)
    await pilot.press("r")
    deadline = time.monotonic() + 300   # bounds a failure only
    while len(app.runs) != count + 1:   # the key acted on (a state, not a time)
        assert time.monotonic() < deadline, app.notes[-1:]
        await pilot.pause(0.01)
    while app.active is not None:
        assert time.monotonic() < deadline, "the replayed run did not end"
        await pilot.pause(0.005)
    app.redraw_views(force=True)
    await pilot.pause()


async def run_each(pilot, recordings) -> None:
    """Each recording played as a run of its own, one after the other, then History shown."""
    for recording in recordings:
        pilot.app.recording = recording
        await run_replay(pilot)
    await pilot.press("h")


async def test_the_watch_view_shows_the_last_variant_its_rows_and_statistics():
    app = replay_app("two-backends")
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        record = app.runs[1]
        assert record.status == "finished" and record.verdict() == "PASSED"
        assert list(record.builder.variants) == ["simplenet-torchscript", "simplenet-bridge-eager"]
        table = app.query_one("#iteration-table")
        assert list(table.checks) == ["PASSED"] * (1 + 12 + 2)     # the last variant's calls
        stats = str(app.query_one("#stats").render())
        assert "simplenet-bridge-eager" in stats and "n=12 timed" in stats
        assert "15/15 calls = 12 timed + 1 warm-up + 2 profiled" in stats
        assert app.query_one("#tabs").active == "watch"


async def test_compare_two_variants_side_by_side_and_leave_one_out():
    app = replay_app("two-backends")
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        assert isinstance(app.screen, CompareScreen)
        table = app.screen.query_one("#compare-table")
        rows = [[str(c).strip() for c in table.get_row(k)] for k in table.rows]
        # one run compared: the names as results.json has them (the title names the run)
        assert [r[1] for r in rows] == ["simplenet-torchscript", "simplenet-bridge-eager"]
        assert [r[0] for r in rows] == ["1", "2"]    # the box numbers the plot is labelled by
        assert "1.00x" in [r[5] for r in rows]
        # checks beside the name; nothing compiled, so no compile column; n last
        assert all(r[2] == "PASSED" and r[7] == "12" and len(r) == 8 for r in rows)
        await pilot.press("space")                   # leave the first variant out
        await pilot.pause()
        rows = [[str(c).strip() for c in table.get_row(k)] for k in table.rows]
        # the one variant left in has no ratio column (1.00x, to itself), and keeps its box's
        # number (renumbered 1, `cannot rank 1 vs 2` read before named another pair after)
        assert rows[0][2] == "left out" and "1.00x" not in rows[1] and rows[1][0] == "2"
        await pilot.press("space")                   # and put it back
        await pilot.pause()
        assert len(app.screen.builder.variants) == 2
        await pilot.press("escape")
        assert not isinstance(app.screen, CompareScreen)


async def test_compare_at_80_columns_shows_checks_and_every_key():
    from textual.widgets._footer import FooterKey

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        table = app.screen.query_one("#compare-table")
        widths = [c.get_render_width(table) for c in table.columns.values()]
        assert [str(c.label).strip() for c in table.columns.values()][:3] == ["box", "variant", "checks"]
        assert sum(widths) <= table.size.width   # every column, n included
        def footer_laid_out():   # (the footer is composed and laid out after the screen)
            keys = list(app.screen.query(FooterKey))
            return ({k.description for k in keys} >= {"back", "leave out"}   # q quits, not listed: room
                    and all(k.region.width > 0 for k in keys))

        await until(pilot, footer_laid_out, "the compare screen's footer")
        keys = list(app.screen.query(FooterKey))
        assert all(k.region.right <= 80 and k.region.width > 0 for k in keys), [(k.description, k.region) for k in keys]


async def test_compare_at_80_columns_fits_every_column_of_long_names():
    """Long variant names (a compile column too) are cut between their words rather than push n
    off (or wrap mid-word: "simplenet-bridge-torchsc / ript-12" read as two names)."""
    app = replay_app("compiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        table = app.screen.query_one("#compare-table")
        labels = [str(c.label).strip() for c in table.columns.values()]
        assert labels[0] == "box" and labels[-1] == "n" and "compile" in labels
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= table.size.width
        names = [str(table.get_row(k)[1]).strip() for k in table.rows]
        assert "simplenet-bridge-compiled-2-python-host" not in names
        whole = {word for name in app.screen.all_names for word in name.split("-")}
        cut = [n for n in names if "…" in n]
        assert cut, names
        for n in cut:   # whole words, the last one at a name's cut end the start of one (`-pyth…`)
            pieces = [piece.split("-") for piece in n.split("…") if piece]
            last = pieces[-1].pop() if n.endswith("…") else ""
            assert all(set(piece) <= whole for piece in pieces), names
            assert not last or any(w.startswith(last) for w in whole) and len(last) >= 3, names
        assert len(set(names)) == len(names), names   # cut between words or at a word's end, told apart
        assert max(len(n) for n in names) < table.columns["variant"].width
        assert max(row.height for row in table.rows.values()) == 1


async def test_history_at_80_columns_shows_where_a_run_went_uncovered(tmp_path):
    app = replay_app("two-backends")
    app.options.export = str(tmp_path / "a-rather-long-directory-name" / "for-the-exported-runs")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h")
        await pilot.press("e")
        await until(pilot, lambda: app.runs[1].export_path and app.exporting is None, app.notes[-1:])
        path = app.runs[1].export_path
        table = app.query_one("#runs")
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= table.size.width
        assert str(table.get_row("1")[-1]).strip() == "yes"
        note = str(app.query_one("#export-note").render()).splitlines()
        # whole lines, not cut; the command too long for one ends its lines in a continuation
        command = "\n".join(note[next(i for i, line in enumerate(note) if line.startswith("couplescope")):])
        # (a path longer than a line broken after a `/`: its lines joined are the path)
        assert path in "".join(note) and command.replace("\\\n", "") == f"couplescope --tensorboard {path}", note
        # no toast over the path: the status line names the run directory
        assert not list(app._notifications)
        assert os.path.basename(path) in str(app.query_one("#status").render())
        await pilot.press("question_mark")
        await pilot.pause()
        assert not list(app._notifications)   # nothing sits over the help box


def test_compare_boxes_switch_units_for_the_slowest_variant():
    from couplescope.frontends.tui.box_rows import boxes

    unit, data = boxes([[5e-6] * 4, [0.2474487] * 4])
    assert unit == "ms" and round(data[1][2], 1) == 247.4 and round(data[0][2], 3) == 0.005


async def test_compile_times_are_noted_and_compared():
    """aoti's package compiled by one variant and found in the cache by the next, and the
    bridge's torch.compile: a note each, and a compile column in the compare view."""
    app = replay_app("compiled")
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        assert app.runs[1].verdict() == "PASSED"
        assert any(n.startswith("simplenet-aoti-2: compiled with AOTInductor in ") for n in app.notes)
        assert any(n.startswith("simplenet-aoti-2-python-host: AOTInductor package from the cache, compile 0 s")
                   for n in app.notes)
        assert sum("compiled with torch.compile in " in n for n in app.notes) == 2
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        table = app.screen.query_one("#compare-table")
        compiled = {str(table.get_row(k)[1]).strip(): str(table.get_row(k)[7]).strip() for k in table.rows}
        assert compiled["simplenet-torchscript-2"] == "-"
        assert compiled["simplenet-aoti-2-python-host"] == "cached"
        assert compiled["simplenet-aoti-2"].endswith(" s")


async def test_a_failing_layout_shows_failed_rows():
    app = replay_app("layout-c")
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        assert app.runs[1].verdict() == "FAILED"
        assert set(app.query_one("#iteration-table").checks) == {"FAILED"}
        assert "FAILED" in str(app.query_one("#stats").render())


async def test_a_worker_that_died_is_reported_and_the_app_goes_on(tmp_path):
    app = replay_app("dies", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        assert app.runs[1].status == "error" and app.runs[1].verdict() == "ERROR"
        assert any("worker ended with signal 9" in n.message for n in app._notifications)
        assert app.is_running
        # the module's print()s are in the log, brackets and all (the log is text, not markup)
        (printed,) = [n for n in app.notes if "printed" in n]
        assert printed.startswith("dies.py-bridge printed:") and "\n[compute] call 3" in printed
        await pilot.press("t")
        log = app.query_one("#log")
        await until(pilot, lambda: any("[compute] call 3" in line.text for line in log.lines), "the log drawn")


async def test_telemetry_and_diagnostics_reach_their_panels():
    app = replay_app("telemetry")
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        await pilot.press("t")
        await pilot.pause()
        panel = str(app.query_one("#telemetry-panel").render())
        assert "worker CPU" in panel and "cores 2" in panel
        assert any("4 torch threads" in note for note in app.notes)
        # the run is over: the figures are its last sample, not the machine's state now
        assert panel.startswith("idle: no run is being sampled; the last sample of run #1 ")


@pytest.mark.skipif(shutil.which("srun") is None,
                    reason="the form checks --launcher srun against this machine: needs srun on PATH")
async def test_a_two_node_run_shows_a_telemetry_line_per_node():
    """A real two-node run (n1, n2, each sampled by the job on its node), played back."""
    app = replay_app("nodes")
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        await pilot.press("t")
        await pilot.pause()
        panel = str(app.query_one("#telemetry-panel").render())
        assert "sampled on each node (2):" in panel, panel
        assert "\nn1: ranks 0  CPU " in panel and "\nn2: ranks 1  CPU " in panel, panel
        assert "worker CPU" not in panel   # no sample of the parent's own


async def test_the_telemetry_panel_keeps_the_latest_sample_of_each_node():
    """The panel itself, fed the recording's node samples in order (no srun needed)."""
    from textual.app import App

    from couplescope.frontends.tui.telemetry_panel import TelemetryPanel

    samples = [ev for ev in replay.read(os.path.join(FIXTURES, "nodes.jsonl")) if ev["event"] == "telemetry"]

    class Host(App):
        def compose(self):
            yield TelemetryPanel(id="panel")

    async with Host().run_test() as pilot:
        panel = pilot.app.query_one(TelemetryPanel)
        for ev in samples:
            panel.show(ev["sample"], ev["node"])
        text = str(panel.render())
        last = {ev["node"]: ev["sample"] for ev in samples}
        assert text.splitlines()[0] == "sampled on each node (2):"
        for node, rank in (("n1", 0), ("n2", 1)):
            (line,) = [ln for ln in text.splitlines() if ln.startswith(f"{node}: ")]
            assert f"ranks {rank}  CPU " in line and "load " in line
            assert f"threads {last[node]['tree']['threads']}" in line
        panel.show({"tree": {"cpu_percent": 50.0}})   # the next run, sampled by the parent
        assert "worker CPU 50%" in str(panel.render()) and "n1:" not in str(panel.render())


def test_telemetry_never_shows_minus_zero():
    from couplescope.frontends.tui.telemetry_panel import describe

    text = describe({"system": {"cpu_percent": [-0.0, -0.2, 50.0]}, "tree": {"cpu_percent": -0.3}})
    assert "-0" not in text and "busy 0% 0% 50%" in text and "worker CPU 0%" in text


async def test_mpi_ranks_plot_one_point_per_step():
    app = replay_app("mpi")
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        record = app.runs[1]
        (variant,) = record.builder.variants.values()
        assert len(variant.timed) == 12                          # 6 steps x 2 ranks
        plot = app.query_one("#plot")
        assert [p[1] for p in plot.points].count("timed") == 6   # the slowest rank per step
        assert any("input on rank 1" in note for note in app.notes)


async def test_export_of_a_replayed_run_rebuilds_results_from_its_events(tmp_path):
    recorded = replay.read(os.path.join(FIXTURES, "two-backends.jsonl"))
    app = replay_app("two-backends")
    app.options.export = str(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        await pilot.press("h")
        await pilot.press("e")
        await until(pilot, lambda: app.runs[1].export_path and app.exporting is None, app.notes[-1:])
        path = app.runs[1].export_path
    assert path and path.startswith(str(tmp_path))
    assert replay.read(os.path.join(path, "events.jsonl")) == recorded
    with open(os.path.join(path, "results.json")) as f:
        doc = json.load(f)
    assert [v["name"] for v in doc["variants"]] == ["simplenet-torchscript", "simplenet-bridge-eager"]
    assert doc == json.loads(json.dumps(replay.document(recorded, "simplenet"), default=str))
    assert os.path.getsize(os.path.join(path, "summary.png")) > 10_000   # as --export leaves it


async def test_the_tensorboard_command_after_an_export_is_shell_quoted(tmp_path):
    app = replay_app("two-backends")
    app.options.export = str(tmp_path / "my runs")
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        await pilot.press("e")
        await until(pilot, lambda: app.runs[1].export_path and app.exporting is None, app.notes[-1:])
        path = app.runs[1].export_path
    assert " " in path
    # (what it opens: a played run has no profiler trace, so its scalars; test_tui_fifth_walk_words)
    assert any(n.endswith(f"no profiler traces: couplescope --tensorboard '{path}'") for n in app.notes), app.notes


async def test_compare_plots_a_sweep_as_median_vs_size_and_v_switches_to_boxes():
    app = replay_app("sweep")
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.plotted == [[f"#1 deep-linear-torchscript-{n}" for n in (8, 16, 32)],
                                  [f"#1 deep-linear-bridge-eager-{n}" for n in (8, 16, 32)]]
        await pilot.press("v")
        await pilot.pause()
        assert screen.plotted is None                # the box plots
        await pilot.press("v")
        await pilot.pause()
        assert len(screen.plotted) == 2


async def test_v_without_a_sweep_says_why():
    app = replay_app("two-backends")
    async with app.run_test(size=SIZE) as pilot:
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        await pilot.press("v")
        await pilot.pause()
        assert app.screen.plotted is None
        assert any("no sweep here" in n.message for n in app._notifications)
