"""The real Textual app driven by Pilot. Tests marked e2e run real worker processes at
small sizes; the rest drive the form and widgets (test_tui_replay.py plays recorded runs).

Waits poll the app's state with pilot.pause() in bounded loops (a slow shared machine
makes runs take seconds, never a fixed sleep).
"""

from __future__ import annotations

import glob
import json
import os
import re
import time

import psutil
import pytest
from textual.widgets import Input, Select
from textual.widgets._select import SelectCurrent

from couplescope.frontends.cli.parser import build_parser, options_from
from couplescope.core.presets import load_preset
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.help import HelpScreen
from couplescope.frontends.tui.listener import AppListener
from couplescope.backends.mpi import INSTALL_HINT
from couplescope.frontends.tui.watch_widgets import MAX_TABLE_ROWS, TimePlot, x_ticks
from couplescope.frontends.tui import messages as m
from couplescope.protocol import events

SIZE = (120, 40)


def make_app(*argv, **kw) -> CoupleScopeApp:
    return CoupleScopeApp(options_from(build_parser().parse_args(list(argv))), **kw)


async def wait_for(pilot, condition, timeout: float = 300.0, what: str = "condition") -> None:
    """Poll the app for a state; `timeout` only bounds a failure (a busy machine is slow, not wrong)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await pilot.pause(0.1)


def run_over(app):
    return lambda: app.runs and app.active is None


def worker_pids() -> list[int]:
    """The couplescope worker processes started by this test process (live ones)."""
    out = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "couplescope.worker" in " ".join(child.cmdline()) and child.status() != psutil.STATUS_ZOMBIE:
                out.append(child.pid)
        except psutil.Error:
            pass
    return out


def table_checks(app) -> list[str]:
    """PASSED/FAILED of the rows the iterations table shows, and its lines as text."""
    table = app.query_one("#iteration-table")
    # (a first line "… calls 1–4 not listed" says which calls the table left out)
    text = [strip.text for strip in table.lines if not strip.text.lstrip().startswith("…")]
    assert all(line.split()[-1] in ("PASSED", "FAILED") for line in text)
    # (its notes of left-out calls take lines of the log's MAX_TABLE_ROWS: the rows shown
    # are the latest of the checks written)
    assert [line.split()[-1] for line in text] == list(table.checks)[len(table.checks) - len(text):]
    return list(table.checks)


@pytest.mark.e2e
async def test_a_training_run_shows_its_loss_as_it_goes():
    """--task train in the app: the table's rows carry each step's loss under a loss header,
    and the statistics say the latest loss."""
    app = make_app("--model", "simplenet", "--task", "train", "--iterations", "300", "--warmup", "1",
                   "--profile-iterations", "0", "--telemetry-hz", "0", load_catalogue=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await wait_for(pilot, run_over(app), what="the training run to end")
        record = app.runs[1]
        assert record.status == "finished", (record.error, app.notes)
        variant = next(iter(record.builder.variants.values()))
        assert variant.training and len(variant.timed) == 300
        header = str(app.query_one("#iterations-header").render())
        assert "loss" in header and "max rel err" not in header
        last = [strip.text for strip in app.query_one("#iteration-table").lines][-1]
        assert f"{variant.last_loss():.4E}" in last
        stats = " ".join(str(app.query_one("#stats").render()).split())
        assert f"{variant.last_loss():.4E} at the last" in stats, stats


@pytest.mark.e2e
async def test_preset_from_the_form_runs_and_shows_passed_rows_and_statistics():
    app = make_app("--telemetry-hz", "0", load_catalogue=False)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#preset", Select).value = "simplenet"          # load a preset in the form
        # chosen (a state: the form shows it), it replaces what the fields it sets held; then typed
        await wait_for(pilot, lambda: app.query_one("#form").preset_shown == "simplenet", what="the preset shown")
        app.query_one("#iterations", Input).value = "25"
        app.query_one("#warmup", Input).value = "2"
        app.query_one("#profile_iterations", Input).value = "0"
        await pilot.pause()
        names = [spec.label for spec in load_preset("simplenet")[1]]
        assert f"{len(names)} variants, inference, 25 timed calls + 2 warm-up each" in str(app.query_one("#preview").render())
        await pilot.press("r")
        assert app.query_one("#tabs").active == "watch"
        await wait_for(pilot, run_over(app), what="the preset run to end")
        record = app.runs[1]
        assert record.status == "finished", (record.error, app.notes)
        assert [v.name for v in record.builder.variants.values()] == names
        for v in record.builder.variants.values():
            assert len(v.timed) == 25 and v.all_passed()
        checks = table_checks(app)
        assert checks.count("PASSED") == 27 and "FAILED" not in checks   # the table follows the last variant
        stats = str(app.query_one("#stats").render())
        assert "median" in stats and "n=25 timed" in stats and "PASSED  27 checks passed" in stats
        # every call is counted and checked; the statistics' n is the timed ones only
        assert "27/27 calls = 25 timed + 2 warm-up" in stats and "profiled" not in stats
        assert "n/a" not in stats.split("median", 1)[1].split("n=")[0]
        legend = str(app.query_one("#plot-legend").render())
        # (the warm-up, when above the scale, with its time: `x warm-up ↑94.89 ms`)
        assert re.match(r"x warm-up( ↑[\d.]+ [mµ]?s)? ━ timed", legend) and "\n" not in legend, legend   # one line at 120


async def test_options_from_the_command_line_are_filled_in():
    app = make_app("--model", "simplenet", "--iterations", "200", "--backend", "bridge", load_catalogue=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.query_one("#model", Select).value == "simplenet"
        assert app.query_one("#iterations", Input).value == "200"
        assert app.query_one("#backends").selected == ["bridge"]
        options = app.query_one("#form").options()
        assert (options.model, options.overrides["iterations"], options.backends) == ("simplenet", 200, ["bridge"])


async def test_a_preset_from_the_command_line_is_filled_in_and_options_override_it():
    app = make_app("--preset", "cgdrag", "--iterations", "7", load_catalogue=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.query_one("#preset", Select).value == "cgdrag"
        assert app.query_one("#model", Select).is_blank()
        req = app.query_one("#form").build()
        title, specs = req.title, req.specs
        assert title == "cgdrag"
        assert [s.label for s in specs] == [s.label for s in load_preset("cgdrag")[1]]
        assert {s.iterations for s in specs} == {7}


@pytest.mark.parametrize("slurm_here", [True, False])
async def test_the_form_offers_nodes_only_where_slurm_is(monkeypatch, slurm_here):
    from couplescope.backends.mpi import slurm

    monkeypatch.setattr(slurm, "present", lambda: slurm_here)
    app = make_app("--preset", "simplenet-mpi", "--launcher", "srun", "--nodes", "2", load_catalogue=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert bool(app.query("#nodes")) == slurm_here
        if slurm_here:
            assert app.query_one("#nodes", Input).value == "2"
            app.query_one("#nodes", Input).value = "1"
        # without the field, what the command line gave still runs
        assert app.query_one("#form").options().overrides["nodes"] == (1 if slurm_here else 2)


async def test_the_model_list_offers_the_presets_models_only_with_a_preset():
    app = make_app(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        model = app.query_one("#model", Select)
        shown = lambda: str(model.query_one(SelectCurrent).query_one("#label").render())  # noqa: E731
        assert shown() == "(pick one)"
        app.query_one("#preset", Select).value = "cgdrag"
        await pilot.pause()
        assert shown() == "cgdrag (preset)" and model.is_blank()   # the preset's model
        app.query_one("#preset", Select).clear()
        await pilot.pause()
        assert shown() == "(pick one)"


async def test_catalogue_loads_off_the_ui_thread_with_default_sizes():
    app = make_app("--model", "cgdrag")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.catalogue_ready, what="the catalogue")
        form = app.query_one("#form")
        assert form.models["cgdrag"]["default_size"] > 0
        assert f"{form.models['cgdrag']['default_size']:,}".replace(",", " ") in app.query_one("#size", Input).placeholder
        assert app.query_one("#device", Select).value == "cpu" or app.query_one("#device", Select).is_blank()


async def test_bad_input_is_shown_and_nothing_runs():
    app = make_app("--model", "simplenet", "--telemetry-hz", "0", load_catalogue=False)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#size", Input).value = "0"
        await pilot.press("r")
        await pilot.pause()
        assert not app.runs
        assert any("size must be at least 1" in n.message for n in app._notifications)
        assert app.is_running


@pytest.mark.e2e
async def test_engine_failure_appears_in_the_app_and_does_not_close_it():
    # stride needs N >= 2 (its check negates element [0, 1]): the worker rejects N = 1
    app = make_app("--model", "stride", "--size", "1", "--iterations", "3", "--telemetry-hz", "0",
                   load_catalogue=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await wait_for(pilot, run_over(app), what="the failing run to end")
        record = app.runs[1]
        assert record.status == "error" and record.verdict() == "ERROR"
        assert any(n.severity == "error" for n in app._notifications)
        assert "N must be at least 2" in "\n".join(app.notes)
        assert app.is_running


@pytest.mark.e2e
async def test_stop_midway_keeps_what_was_measured_and_second_run_is_refused():
    app = make_app("--model", "stride", "--size", "16", "--iterations", "100000", "--warmup", "1",
                   "--profile-iterations", "0", "--telemetry-hz", "0", load_catalogue=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        record = app.runs[1]
        await wait_for(pilot, lambda: len(record.builder.variant("stride-torchscript-16").timed) >= 50,
                       what="timed iterations to arrive")
        pids = worker_pids()
        assert pids
        await pilot.press("r")                                   # a second run while one goes
        # the refusal is a toast, posted as a message: wait for it, not for a pause
        await wait_for(pilot, lambda: any("still going" in n.message for n in app._notifications),
                       what="the refusal of a second run")
        assert len(app.runs) == 1
        await pilot.press("s")
        await wait_for(pilot, run_over(app), what="the stopped run to end")
        variant = record.builder.variants["stride-torchscript-16"]
        assert record.status == "stopped" and variant.status == "interrupted"
        assert 50 <= len(variant.timed) < 100000
        assert variant.stats()["median"] > 0
        assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        assert len(table_checks(app)) <= MAX_TABLE_ROWS   # capped, not 100000


@pytest.mark.e2e
async def test_quitting_during_a_run_leaves_no_child_process():
    app = make_app("--model", "stride", "--size", "16", "--iterations", "100000", "--profile-iterations", "0",
                   load_catalogue=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        record = app.runs[1]
        await wait_for(pilot, lambda: len(record.builder.variant("stride-torchscript-16").iterations) >= 5,
                       what="iterations to arrive")
        pids = worker_pids()
        assert pids
        await pilot.press("q")
    deadline = time.monotonic() + 60   # bounds a failure only
    while worker_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker_pids() == []
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.e2e
async def test_export_writes_results_and_traces(tmp_path):
    out = tmp_path / "exports"
    app = make_app("--model", "simplenet", "--iterations", "10", "--profile-iterations", "2",
                   "--export", str(out), load_catalogue=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await wait_for(pilot, run_over(app), what="the run")
        await pilot.press("e")
        await wait_for(pilot, lambda: any(n.startswith("exported ") for n in app.notes), what="the export")
        path = app.runs[1].export_path
        assert path and path.startswith(str(out))
        assert os.path.basename(path) in str(app.query_one("#status").render())
        assert any(path in n and "couplescope --tensorboard" in n for n in app.notes)
    doc = json.loads(open(os.path.join(path, "results.json")).read())
    assert doc["variants"][0]["name"] == "simplenet-torchscript"
    assert doc["variants"][0]["stats"]["n"] == 10 and doc["variants"][0]["checks_passed"]
    lines = open(os.path.join(path, "events.jsonl")).read().splitlines()
    calls = [one for ev in map(events.parse, lines) for one in events.expand(ev) if one["event"] == "iteration"]
    assert len(calls) == 1 + 10 + 2
    try:
        import couplescope.worker.profiling  # noqa: F401  (traces exist once profiling does)
    except ImportError:
        pytest.skip("profiling is not built yet: no traces to find")
    traces = glob.glob(os.path.join(path, "traces", "*", "*.pt.trace.json*"))
    assert traces, os.listdir(path)
    written = [json.loads(line) for line in lines if '"trace_written"' in line]
    assert written and all(os.path.exists(ev["path"]) and ev["path"].startswith(path) for ev in written)


def backend_lines(app) -> list[str]:
    """The backends list as a plain capture shows it (no colours)."""
    sel = app.query_one("#backends")
    return [sel.render_line(y).text.rstrip() for y in range(sel.option_count)]


async def test_backend_boxes_read_ticked_or_not_without_colour():
    app = make_app("--model", "simplenet", "--backend", "bridge", load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = backend_lines(app)
        assert "[x] bridge" in lines and "[ ] torchscript" in lines
        app.query_one("#backends").select("torchscript")
        await pilot.pause()
        assert "[x] torchscript" in backend_lines(app)
        assert "2 variants, inference" in str(app.query_one("#preview").render())


async def test_unavailable_backend_has_a_short_label_and_its_full_reason_below():
    reason = f"mpi4py is not installed: {INSTALL_HINT}"   # the mpi backend's own words
    app = make_app("--model", "simplenet", load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one("#form").set_catalogue({}, {"torchscript": None, "mpi": reason}, ["cpu"])
        await pilot.pause()
        assert backend_lines(app) == ["[ ] torchscript", "[-] mpi  unavailable: mpi4py is not installed"]
        notes = app.query_one("#backend-notes")
        assert str(notes.render()) == f"mpi: {reason}"   # brackets ('couplescope[mpi]') kept
        app.query_one("#backends").focus()               # the last field: the form scrolls to the reasons
        await pilot.pause()
        assert notes.region.bottom <= app.query_one("#run-bar").region.y


def test_time_plot_has_one_point_per_mpi_step_the_slowest_rank():
    plot = TimePlot()
    evs = [{"kind": kind, "index": i, "rank": r, "seconds": (i + r) * 1e-6, "phases": {}}
           for kind, n in (("warmup", 1), ("timed", 3)) for i in range(1, n + 1) for r in (0, 1)]
    plot.add(evs[:5])
    plot.add(evs[5:])   # a step's ranks may arrive in different batches
    assert [(p[0], p[1], p[2]) for p in plot.points] == [
        (1, "warmup", 2e-6), (2, "timed", 2e-6), (3, "timed", 3e-6), (4, "timed", 4e-6)]


def test_x_ticks_are_whole_iterations_and_include_the_last():
    ticks, labels = x_ticks(1, 204, 36)
    assert ticks[0] == 1 and ticks[-1] == 204 and labels == [str(t) for t in ticks]
    assert 2 <= len(x_ticks(1, 204, 76)[0]) <= 6


async def test_help_screen_opens_and_closes():
    app = make_app(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        first, text = app.screen, app.screen.query_one("#help-box").children[0]
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")   # the same screen, kept: its text not built again
        assert app.screen is first and app.screen.query_one("#help-box").children[0] is text
        await pilot.press("question_mark")   # ? closes it too
        assert not isinstance(app.screen, HelpScreen)


def test_listener_coalesces_a_flood_of_iterations_in_order():
    posted = []
    listener = AppListener(posted.append, run_id=1, rate=10)
    listener.attach(None)
    t0 = time.monotonic()
    for i in range(1, 20001):
        listener.on_event({"event": "iteration", "variant": "v", "index": i, "kind": "timed", "seconds": 1e-5,
                           "phases": {}, "max_rel_error": 0.0, "passed": True, "error": None})
        if i == 10000:
            listener.on_event({"event": "diagnostic", "variant": "v", "message": "half way"})
    elapsed = time.monotonic() - t0
    listener.session_done(None)
    batches = [p for p in posted if isinstance(p, m.EventsArrived) and p.kind == "iteration"]
    indices = [ev["index"] for b in batches for ev in b.events]
    assert indices == list(range(1, 20001))
    assert len(batches) <= 2 + 2 * (elapsed * 10 + 2)   # about 10 a second, not 20,000
    order = [p.kind for p in posted]
    half = order.index("diagnostic")
    assert sum(len(b.events) for b in posted[:half] if isinstance(b, m.EventsArrived) and b.kind == "iteration") == 10000
