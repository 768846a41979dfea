"""What a second walk-through of the app by a new user found (issue 30, at 80x24), each
driven by Pilot on the real app: a preset chosen replaces what the fields held, the
focus and the page stay on the field being used, a pair that cannot be ranked says why,
a stopped run reads STOPPED wherever its verdict is shown, one count of steps, runs told
apart in History, the compare screen's keys and words, text whole, and how the app ends.

Runs are recorded real runs played back (tests/fixtures); the form's tests read no
catalogue (no torch import)."""

from __future__ import annotations

import re
import threading

import pytest
from textual.widgets import DataTable, Input, Select, SelectionList

from couplescope.core import request
from couplescope.core.request import RunOptions
from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.app import CoupleScopeApp
from test_tui_first_use import PRESET, assert_the_form_shows_the_preset, held, text  # noqa: F401 (held: a fixture)
from test_tui_replay import compare_shown, replay_app, run_replay, until
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def rows(backends: SelectionList) -> list[str]:
    """The backends list's rows after their boxes, as drawn: `torchscript  (preset)`."""
    return [str(backends.get_option_at_index(i).prompt) for i in range(backends.option_count)]


# -- 1. a preset's values replace what the fields held ------------------------------------------

async def test_a_preset_chosen_replaces_the_ticks_and_values_before_it():
    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one("#form")
        backends = form.query_one("#backends", SelectionList)
        iterations = form.query_one("#iterations", Input)
        backends.select("torchscript")                  # ticked and typed before the preset
        iterations.value = "200"
        await until(pilot, lambda: "200" in text(app, "#preview"), text(app, "#preview"))
        form.query_one("#preset", Select).value = PRESET
        await until(pilot, lambda: "training" in text(app, "#preview"), text(app, "#preview"))
        assert list(backends.selected) == [] and iterations.value == ""
        assert_the_form_shows_the_preset(app)            # its values, its backends marked, its steps
        preset = request.build(RunOptions(preset=PRESET)).specs
        assert [s.iterations for s in form.build().specs] == [s.iterations for s in preset]


async def test_a_field_changed_after_the_preset_overrides_it_visibly():
    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one("#form")
        backends = form.query_one("#backends", SelectionList)
        steps = request.build(RunOptions(preset=PRESET)).specs[0].iterations
        form.query_one("#iterations", Input).value = "50"
        await until(pilot, lambda: re.search(r"\b50\b", text(app, "#preview")), text(app, "#preview"))
        assert f"iterations 50 in place of {fmt.thousands(steps)} (preset)" in " ".join(text(app, "#preview").split())
        assert any("(preset)" in row for row in rows(backends))
        backends.select("bridge")                       # a tick: the preset's backends no longer run
        await until(pilot, lambda: "all with bridge" in text(app, "#preview"), text(app, "#preview"))
        await pilot.pause()
        assert not any("(preset)" in row for row in rows(backends)), rows(backends)
        backends.deselect("bridge")                     # none ticked: the preset's again
        await until(pilot, lambda: any("(preset)" in row for row in rows(backends)), rows(backends))


# -- 7. the page and the lists stay where the user is ------------------------------------------

def on_the_page(app, widget) -> bool:
    """Whether `widget` is drawn inside the form's scrolling page."""
    page = app.query_one("#pick-fields").region
    return widget.region.height > 0 and page.contains_region(widget.region)


async def test_a_preset_given_on_the_command_line_opens_with_its_row_shown():
    app = CoupleScopeApp(RunOptions(preset=PRESET))   # the catalogue read: the backends list filled again
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.catalogue_ready, "the catalogue read")
        await pilot.pause()
        assert app.query_one("#pick-fields").scroll_y == 0
        assert on_the_page(app, app.query_one("#preset")) and on_the_page(app, app.focused)


async def test_choosing_a_preset_keeps_its_row_on_the_screen():
    app = CoupleScopeApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.catalogue_ready, "the catalogue read")
        backends = app.query_one("#backends", SelectionList)
        backends.focus()                                 # visited: a row highlighted
        await until(pilot, lambda: backends.highlighted == 0, "a backend highlighted")
        preset = app.query_one("#preset", Select)
        preset.focus()
        await until(pilot, lambda: on_the_page(app, preset), "back at the preset")
        preset.value = PRESET                            # as picking it from the list does
        await until(pilot, lambda: "training" in text(app, "#preview"), "the preset shown")
        await pilot.pause()
        assert app.focused is preset and on_the_page(app, preset), app.query_one("#pick-fields").scroll_y


async def test_the_preset_list_stops_at_its_ends():
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        preset = app.query_one("#preset", Select)
        preset.focus()
        await pilot.press("enter")                      # the list opens on its first row, "(none)"
        await until(pilot, lambda: preset.expanded, "the list open")
        overlay = preset.query_one("SelectOverlay")
        await pilot.press("up")                         # the first row: up stays there
        await pilot.pause()
        assert overlay.highlighted == 0
        for _ in range(overlay.option_count + 1):       # down past the last: it stays on the last
            await pilot.press("down")
        await pilot.pause()
        assert overlay.highlighted == overlay.option_count - 1


# -- 4. one count of steps ----------------------------------------------------------------------

async def test_steps_are_counted_one_way_on_the_run_line_the_counts_and_the_loss_line():
    app = replay_app("training")   # --iterations 500 --warmup 1, two variants
    made = "500 timed steps + 1 warm-up"
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: made in " ".join(text(app, "#preview").split()), text(app, "#preview"))
        await run_replay(pilot)
        shown = " ".join(text(app, "#stats").split())
        assert "501/501 steps = 500 timed + 1 warm-up" in shown, shown
        assert f"at the last ({made})" in shown, shown        # the loss line, not "(501 steps)"


def test_the_printer_counts_training_steps_as_the_app_does():
    from test_replay import replay_run

    _, out, _ = replay_run("training")
    assert out.count("500 timed steps + 1 warm-up ==") == 2            # each variant's header
    assert out.count("at the last (500 timed steps + 1 warm-up, sgd lr 0.6)") == 2, out


# -- 3. a stopped run reads STOPPED wherever its verdict is shown -----------------------------

@pytest.fixture
def stopped_mid_variant(monkeypatch):
    """The first variant plays a few calls, then waits until it is stopped (`s`): a variant
    stopped with calls measured, as the walk-through's was. Set once it waits."""
    from couplescope.core.replay import PlayedWorker

    play = PlayedWorker.events
    waiting = threading.Event()

    def events(self):
        calls = 0
        for ev in play(self):
            yield ev
            calls += ev.event in ("iteration", "iterations")
            if calls == 3:
                waiting.set()
                while not self._stopped:
                    threading.Event().wait(0.01)
                return
    monkeypatch.setattr(PlayedWorker, "events", events)
    return waiting


async def run_and_stop_mid_variant(pilot, app, measured) -> None:
    """r, then s once the first variant has measured calls (`measured`, the fixture's event)
    and the app has drawn them; back when the stopped run has ended."""
    await pilot.press("r")
    await until(pilot, measured.is_set, "calls measured")
    await until(pilot, lambda: app.runs[1].measured(), "calls drawn")
    await pilot.press("s")
    await until(pilot, lambda: app.active is None, "the stopped run ended")


def history_row(app, run_id: int) -> list[str]:
    return [str(cell).strip() for cell in app.main.query_one("#runs", DataTable).get_row(str(run_id))]


async def test_a_stopped_variant_reads_stopped_in_compare_and_in_history(stopped_mid_variant):
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_and_stop_mid_variant(pilot, app, stopped_mid_variant)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(app), app.screen)
        table = app.screen.query_one("#compare-table", DataTable)
        checks = {str(table.get_row(name)[2]).strip() for name in app.screen.all_names if name in table.rows}
        assert checks == {"STOPPED", "no calls"}, checks   # (the variant the stop left unstarted)
        await pilot.press("h")
        await pilot.pause()
        assert "STOPPED" in history_row(app, 1) and "PASSED" not in history_row(app, 1), history_row(app, 1)


# -- 5. History tells runs apart ----------------------------------------------------------------

async def test_history_tells_runs_of_one_model_apart_within_80_columns():
    from couplescope.core import replay, synthetic
    from couplescope.protocol.spec import RunSpec

    def recording(**given):
        spec = RunSpec(model="simplenet", warmup=1, iterations=3, profile_iterations=0, name="simplenet", **given)
        return replay.Recording(synthetic.events_for(spec), "simplenet")

    app = CoupleScopeApp(load_catalogue=False, recording=recording(backend="torchscript"))
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.recording = recording(backend="bridge", task="train")
        await run_replay(pilot)
        await pilot.press("h")
        await pilot.pause()
        first, second = history_row(app, 1)[0], history_row(app, 2)[0]
        assert first.startswith("#1 simplenet") and second.startswith("#2 simplenet")
        assert first[3:] != second[3:], (first, second)                 # told apart
        assert "infer" in first and "torchscript" in first and "train" in second and "bridge" in second
        table = app.main.query_one("#runs", DataTable)
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= table.size.width


# -- 8. text whole: the export path readable ---------------------------------------------------

async def test_the_export_path_is_not_left_under_a_toast(tmp_path, monkeypatch):
    from couplescope.frontends.tui.runs import RunRecord

    copy, going = RunRecord.export, threading.Event()
    monkeypatch.setattr(RunRecord, "export", lambda self, parent: (going.wait(60), copy(self, parent))[1])
    app = replay_app("two-backends")
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h", "e", "e")              # e again while it exports: it says why not
        await until(pilot, lambda: list(app._notifications), "the toast")
        going.set()
        await until(pilot, lambda: app.runs[1].export_path and app.exporting is None, app.notes[-1:])
        await pilot.pause()
        assert not list(app._notifications)
        assert app.runs[1].export_path in "".join(on_screen(app).splitlines())   # (a long one wraps)


# -- 2. why a pair is not ranked, on the compare screen ----------------------------------------

def busy_rounds_app() -> CoupleScopeApp:
    """A real run in 4 rounds while a busy loop ran (tests/fixtures/busy-rounds.jsonl): its
    two variants cannot be ranked from its own rounds (4 of 4 disturbed)."""
    from couplescope.core import replay
    from couplescope.frontends.cli.parser import build_parser, options_from
    from test_tui_replay import FIXTURES

    argv = ["--model", "stride", "--size", "256", "--backend", "torchscript,bridge", "--rounds", "4",
            "--iterations", "12", "--threads", "1", "--profile-iterations", "0"]
    recording = replay.Recording(replay.read(f"{FIXTURES}/busy-rounds.jsonl"), "stride")
    return CoupleScopeApp(options_from(build_parser().parse_args(argv)), load_catalogue=False, recording=recording)


async def open_compare(pilot) -> None:
    if type(pilot.app.screen).__name__ == "CompareScreen":
        await pilot.press("escape")
    await pilot.press("c")
    await until(pilot, lambda: compare_shown(pilot.app), pilot.app.screen)
    await pilot.pause()


async def test_a_pair_that_cannot_be_ranked_says_why_alone_and_beside_another_run():
    app = busy_rounds_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await open_compare(pilot)
        shown = " ".join(on_screen(app).split())
        assert "cannot rank" in shown and "4 of 4 rounds disturbed" in shown, shown
        await pilot.press("escape")
        await run_replay(pilot)                        # the same pair again: several runs
        await open_compare(pilot)
        shown = " ".join(on_screen(app).split())
        assert "cannot rank" not in shown.split("#1 alone")[0]   # the table gives ratios ...
        assert "ratios: of the medians" in shown, shown   # ... of the medians, and says so
        assert "#1 alone cannot rank 1 vs 2: 4 of 4 rounds disturbed" in shown, shown
        assert "#2 alone cannot rank 3 vs 4: 4 of 4 rounds disturbed" in shown, shown   # never cut



def test_a_pair_whose_interval_holds_one_is_said_not_ranked_as_the_log_says():
    """The log (results.noise) says a pair whose 95% interval holds 1 cannot be ranked; the
    compare screen says so under its table, with the interval."""
    from couplescope.frontends.tui.compare_table import ranking_lines

    rows = [{"name": "a", "baseline": "a", "ratio": 1.0},
            {"name": "b", "baseline": "a", "ratio": 1.02, "ratio_low": 0.97, "ratio_high": 1.08},
            {"name": "c", "baseline": "a", "ratio": 1.5, "ratio_low": 1.3, "ratio_high": 1.7}]
    assert ranking_lines(rows, {"a": 1, "b": 2, "c": 3}) == ["cannot rank 2 vs 1: its 95% interval 0.97–1.08 holds 1"]

# -- 6. the compare screen's keys and width -------------------------------------------------------

async def test_a_training_compare_that_fits_says_nothing_of_scrolling_and_tab_says_why_not():
    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await open_compare(pilot)
        table = app.screen.query_one("#compare-table", DataTable)
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= 80
        assert "scrolls sideways" not in text(app.screen, "#compare-title")
        shown = [str(table.get_row(name)[1]).strip() for name in app.screen.all_names]
        # a name that fits is whole; one cut keeps its start (the twelfth walk 2b: `…torchscript`)
        assert shown == ["simplenet-torchscript", "simplenet-bridge…"], shown
        footer = " ".join(on_screen(app).splitlines()[-1].split())
        assert "tab" not in footer, footer             # one task: tab is not offered ...
        await pilot.press("tab")                        # ... and pressed anyway, it says why
        await until(pilot, lambda: any("training steps only" in n.message for n in app._notifications),
                    list(app._notifications))


# -- 8. a name cut only where something else tells it apart --------------------------------------

async def test_a_name_loses_the_part_its_run_s_title_says_not_what_tells_it_apart():
    """Run #1 trained simplenet through TorchScript and the bridge (recorded); run #2 a
    preset's direct, bridge, ... (made up). The names share no start, and #1's were cut in
    their middles, `#1 s…t-torchscript` and `#1 s…e-torchscript`: the model the title
    names kept, what told them apart gone."""
    from couplescope.core import replay, synthetic
    from couplescope.protocol.spec import RunSpec

    names = ("direct", "direct-python-host", "bridge", "bridge-python-host")
    specs = [RunSpec(model="simplenet", backend="bridge" if n.startswith("bridge") else "torchscript",
                     task="train", warmup=1, iterations=3, profile_iterations=0, name=n) for n in names]
    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.recording = replay.Recording([ev for spec in specs for ev in synthetic.events_for(spec)],
                                         "simplenet-train")
        await run_replay(pilot)
        await open_compare(pilot)
        table = app.screen.query_one("#compare-table", DataTable)
        shown = dict(zip(app.screen.all_names, (str(table.get_row(n)[1]).strip() for n in app.screen.all_names)))
        assert len(set(shown.values())) == len(shown), shown
        assert "bridg" in shown["#1 simplenet-bridge-torchscript"], shown   # what tells it from #1's other
        assert shown["#1 simplenet-torchscript"].startswith("#1 simplenet-torch"), shown   # its start kept (12th walk)


async def test_an_array_in_the_log_is_never_split_between_two_lines():
    app = CoupleScopeApp(load_catalogue=False)
    array = "[4.9997 0.9997 2.0003 3.     4.0003]"
    async with app.run_test(size=(80, 24)) as pilot:
        for lead in range(30, 70, 7):             # the array at every place of the line
            app.note(f"{'x' * lead}: [training] PASSED gives {array}; expected 5,1,2,3,4", "info")
        await pilot.press("t")
        log = app.query_one("#log")
        await until(pilot, lambda: len(log.lines) >= 6, "the log drawn")
        lines = [strip.text.rstrip() for strip in log.lines]
        assert sum(array in line for line in lines) == 6, lines
        assert all(len(line) <= log.scrollable_content_region.width for line in lines), lines


# -- 10. the top line, the grad mode of a training run, the watch table's header -----------------

async def test_the_top_line_says_r_runs_what_the_form_describes_once_it_describes_a_run():
    app = CoupleScopeApp(RunOptions(model="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        status = app.query_one("#status")
        await until(pilot, lambda: "r runs what the line beside Run" in str(status.render()), str(status.render()))
        app.query_one("#model", Select).clear()         # nothing to run now
        await until(pilot, lambda: "pick a model or a preset" in str(status.render()), str(status.render()))


async def test_a_training_form_says_what_its_forward_runs_with_not_a_grad_mode():
    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        grad = app.query_one("#grad_mode", Select)
        await until(pilot, lambda: grad.prompt == "training: forward with gradients", grad.prompt)
        assert grad.disabled
        app.query_one("#task", Select).value = "infer"   # inference: the grad mode means something again
        await until(pilot, lambda: grad.prompt == "no_grad (default)" and not grad.disabled, grad.prompt)


async def test_a_training_run_s_table_header_says_loss_from_its_start(held):
    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.active is not None, "the run going")
        await pilot.pause()
        header = text(app, "#iterations-header")
        assert "loss" in header and "max rel err" not in header, header


# -- 9. how the app ends ------------------------------------------------------------------------

async def test_ctrl_c_during_a_run_saves_it_and_exits_130_as_on_the_command_line(stopped_mid_variant, tmp_path):
    app = replay_app("two-backends")
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, stopped_mid_variant.is_set, "calls measured")
        await until(pilot, lambda: app.runs[1].measured(), "calls drawn")
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app._exit, "the app closing")
    assert app.exit_code == 130 and app.return_code == 130
    assert app.runs[1].export_path and app.runs[1].export_path.startswith(str(tmp_path))
    assert any("saved to" in line for line in app.farewell), app.farewell


async def test_q_while_a_run_goes_says_it_stops_the_worker_before_it_closes(held):
    from couplescope.core.replay import PlayedWorker

    stop = PlayedWorker.stop
    stopping = threading.Event()
    PlayedWorker.stop = lambda self, timeout=0.0: (stopping.wait(60), stop(self, timeout))[1]
    try:
        app = replay_app("two-backends")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("r")
            await until(pilot, lambda: app.active is not None, "the run going")
            await pilot.press("q")
            await until(pilot, lambda: type(app.screen).__name__ == "QuitScreen", app.screen)
            await pilot.press("y")                   # yes: the worker is being stopped, and it says so
            await until(pilot, lambda: "stopping the worker of #1" in text(app, "#status"), text(app, "#status"))
            assert not app._exit
            stopping.set()
            await until(pilot, lambda: app._exit, "the app closing once the worker has gone")
    finally:
        PlayedWorker.stop = stop
        stopping.set()


def test_the_command_ends_at_once_after_the_app_running_its_exit_handlers():
    import subprocess
    import sys

    code = ("import atexit; atexit.register(lambda: print('handlers ran', flush=True)); "
            "from couplescope.frontends.tui import leave; leave(7)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 7 and done.stdout == "handlers ran\n", (done.returncode, done.stdout, done.stderr)


async def test_a_lone_variant_s_name_has_the_room_its_ratio_took(stopped_mid_variant):
    """A training run stopped in its first variant: compare shows that variant alone, and
    its 1.00x took the room its name needed (`…idge-torchscript`)."""
    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_and_stop_mid_variant(pilot, app, stopped_mid_variant)
        await open_compare(pilot)
        table = app.screen.query_one("#compare-table", DataTable)
        (name,) = app.screen.boxed   # the one that made steps (the unstarted other reads `no steps`)
        labels = [str(c.label).strip() for c in table.columns.values()]
        assert "vs fastest" not in labels and "ratio" not in labels, labels    # nothing to compare with
        shown, whole = str(table.get_row(name)[1]).strip(), app.screen.display_name(name)
        assert shown in (whole, whole.replace("simplenet-", "…", 1)), shown
