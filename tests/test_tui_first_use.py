"""What a new user met in the app (issue 30), each driven by Pilot on the real app: a
preset's settings shown in the fields and the Run line, blank fields that are not
invalid, the focus always somewhere visible, `q` asking while a run goes, `e` saying
"exporting" at once, the compare box plot at 80x24, training's verdict and loss.

Runs are recorded real runs played back (tests/fixtures; training.jsonl: SimpleNet's
online training, direct and through the bridge); a run that must stay "going" is a
recording held at its start until the test lets it go (`held`)."""

from __future__ import annotations

import re
import threading

import pytest
from textual.widgets import Button, Checkbox, Input, Select, SelectionList, Tabs

from couplescope.core import request
from couplescope.core.request import RunOptions
from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.protocol import options as declared
from couplescope.results.builder import ResultsBuilder
from test_tui_replay import compare_shown, replay_app, run_replay, until
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state

PRESET = "simplenet-train"


def text(where, selector: str) -> str:
    """What a widget of the app's main screen (or of another screen) shows."""
    screen = where.main if isinstance(where, CoupleScopeApp) else where
    return str(screen.query_one(selector).render())


@pytest.fixture
def held(monkeypatch):
    """Played workers hold their events until the Event is set (or they are stopped): a
    run that stays going for as long as the test needs."""
    from couplescope.core.replay import PlayedWorker

    release = threading.Event()
    play = PlayedWorker.events

    def events(self):
        while not release.wait(0.01):
            if self._stopped:
                return
        yield from play(self)

    monkeypatch.setattr(PlayedWorker, "events", events)
    yield release
    release.set()


# -- 1. a preset's settings, in the fields and the Run line ---------------------------------

def preset_request():
    """What the preset runs, as the command line builds it (its steps are the request's,
    whoever decides them: the preset, or a default for the task)."""
    return request.build(RunOptions(preset=PRESET))


def assert_the_form_shows_the_preset(app) -> None:
    specs = preset_request().specs
    assert {s.task for s in specs} == {"train"}
    steps, warmup = specs[0].iterations, specs[0].warmup
    form = app.main.query_one("#form")
    assert form.query_one("#task", Select).prompt == "train (preset)"
    assert form.query_one("#iterations", Input).placeholder == f"{fmt.thousands(steps)} (preset)"   # grouped
    assert form.query_one("#warmup", Input).placeholder == f"{warmup} (preset)"
    rows = [str(form.query_one("#backends", SelectionList).get_option_at_index(i).prompt)
            for i in range(form.query_one("#backends", SelectionList).option_count)]
    ran = {s.backend for s in specs}
    assert ran and all(("(preset)" in row) == (row.split()[0] in ran) for row in rows), rows
    preview = text(app, "#preview")
    made = f"{fmt.thousands(steps)} timed steps + {warmup} warm-up each"   # as the watch view counts them
    assert f"{len(specs)} variants, training, {made}" in preview, preview
    assert all(s.name in preview for s in specs), preview


async def test_a_preset_chosen_in_the_form_shows_its_task_steps_and_backends():
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one("#form")
        assert form.query_one("#task", Select).prompt == "infer (default)"
        form.query_one("#preset", Select).value = PRESET      # as picking it from the list does
        await until(pilot, lambda: "training" in text(app, "#preview"), text(app, "#preview"))
        assert_the_form_shows_the_preset(app)
        form.query_one("#preset", Select).clear()             # and back: the defaults again
        await until(pilot, lambda: form.query_one("#task", Select).prompt == "infer (default)", "no preset")
        iterations = declared.get("iterations")
        assert form.query_one("#iterations", Input).placeholder == f"{iterations.default_words()} (default)"


async def test_a_preset_given_on_the_command_line_shows_in_the_fields():
    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert_the_form_shows_the_preset(app)


async def test_a_field_filled_in_overrides_the_preset_for_every_variant_and_a_name_prefixes_them():
    app = CoupleScopeApp(RunOptions(preset=PRESET), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one("#form")
        form.query_one("#iterations", Input).value = "50"
        form.query_one("#name", Input).value = "myrun"
        names = [s.name for s in preset_request().specs]
        await until(pilot, lambda: "50 timed steps" in text(app, "#preview"), text(app, "#preview"))
        built = form.build()
        assert [s.iterations for s in built.specs] == [50] * len(names)
        assert [s.name for s in built.specs] == [f"myrun-{n}" for n in names]
        assert all(f"myrun-{n}" in text(app, "#preview") for n in names)   # seen before the run


async def test_a_blank_number_field_shows_what_the_request_gives_every_variant():
    """Training SimpleNet without a preset: the iterations field says the steps the request
    gives (the task's default is the request's to decide), as the Run line does."""
    asked = RunOptions(model="simplenet", overrides={"task": "train"})
    steps = request.build(asked).specs[0].iterations
    app = CoupleScopeApp(asked, load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "training" in text(app, "#preview"), text(app, "#preview"))
        shown = app.query_one("#iterations", Input).placeholder
        if steps is None:   # decided later, in the worker: the declaration's words
            assert shown == declared.get("iterations").default_words(), shown
        else:
            assert shown.startswith(f"{fmt.thousands(steps)} ") and f"{fmt.thousands(steps)} timed steps" in text(app, "#preview"), shown


async def test_a_list_never_offers_the_value_its_blank_stands_for():
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        form = app.query_one("#form")
        for select in form.query(Select):
            if select.id == "preset":
                continue
            offered = [str(v) for _, v in select._options if v is not Select.NULL]
            words = select.prompt.removesuffix(" (default)")
            assert words not in offered, (select.id, select.prompt, offered)
        form.query_one("#preset", Select).value = PRESET
        await until(pilot, lambda: form.query_one("#task", Select).prompt == "train (preset)", "preset")
        assert [v for _, v in form.query_one("#task", Select)._options if v is not Select.NULL] == ["infer"]


# -- 2. blank fields are the default, not invalid ----------------------------------------

async def test_blank_number_fields_are_not_marked_invalid():
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one("#form")
        fields = [w for w in form.query(Input) if not w.value]
        assert {"warmup", "threads", "seed", "telemetry_hz", "rounds", "lr", "profile_max_ops"} <= {
            w.id for w in fields}
        for widget in fields:                  # focus passes through every one, as Tab does
            widget.focus()
            await until(pilot, lambda: app.focused is widget, widget.id)
        form.query_one("#preset", Select).focus()
        await pilot.pause()
        assert [w.id for w in fields if w.has_class("-invalid")] == []
        iterations = form.query_one("#iterations", Input)
        iterations.focus()
        await pilot.press("0")                 # a value the run refuses (at least 1) does look invalid
        await until(pilot, lambda: iterations.has_class("-invalid"), iterations.value)
        await pilot.press("backspace")
        await until(pilot, lambda: not iterations.has_class("-invalid"), iterations.value)


# -- 3. where the keys go ------------------------------------------------------------------

FIELDS = (Input, Select, Checkbox, SelectionList, Button)


async def test_the_focus_is_visible_after_escape_then_tab():
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.focused, Tabs), app.focused)
        await pilot.press("tab")
        await until(pilot, lambda: not isinstance(app.focused, Tabs), app.focused)
        focused = app.focused
        assert isinstance(focused, FIELDS), focused          # a field, not the scroll area around them
        assert focused.region.height and app.screen.find_widget(focused)   # and on the screen


async def test_the_backends_list_shows_its_highlight_only_with_the_focus():
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        backends = app.query_one("#backends", SelectionList)
        backends.focus()
        await until(pilot, lambda: backends.highlighted == 0, backends.highlighted)
        await pilot.pause()

        def backgrounds(y: int) -> set:
            """The background colours of the list's row y as drawn (its text after the box)."""
            return {seg.style.bgcolor for seg in list(backends.render_line(y))[2:] if seg.text.strip()}

        assert backgrounds(0) != backgrounds(1)               # focused: the first row highlighted
        app.query_one("#iterations", Input).focus()
        await until(pilot, lambda: not backends.has_focus, "focus")
        await pilot.pause()
        backends._clear_caches()
        assert backends.highlighted == 0 and backgrounds(0) == backgrounds(1)   # not now


async def test_q_while_a_run_goes_asks_before_it_ends_the_run(held):
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.active is not None, app.notes[-1:])
        await pilot.press("q")
        await until(pilot, lambda: "quitting stops it" in on_screen(app), "the question")
        assert not app._exit and app.active is not None
        await pilot.press("escape")                         # no: back to the run
        await until(pilot, lambda: "quitting stops it" not in on_screen(app), "back")
        assert not app._exit and app.active is not None and app.active.status == "running"
        await pilot.press("q")
        await until(pilot, lambda: "quitting stops it" in on_screen(app), "asked again")
        await pilot.press("q")                              # a second q quits
        await until(pilot, lambda: app._exit, "quit")


# -- 4. export says so at once ---------------------------------------------------------------

async def test_e_says_exporting_before_the_export_has_done_its_work(tmp_path, monkeypatch):
    """The export's own work is held until the test has seen "exporting" on the top line: on
    the UI thread (as before) the line could not change until the copy had finished."""
    from couplescope.frontends.tui.runs import RunRecord

    seen = threading.Event()
    released = []
    export = RunRecord.export

    def observed(self, parent):
        released.append(seen.wait(timeout=20))   # True: the test saw "exporting" first
        return export(self, parent)

    monkeypatch.setattr(RunRecord, "export", observed)
    app = replay_app("two-backends")
    app.options.export = str(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("e")
        await until(pilot, lambda: "exporting #1" in text(app, "#status"), text(app, "#status"))
        seen.set()
        await until(pilot, lambda: app.runs[1].export_path and "exported" in text(app, "#status"),
                    text(app, "#status"))
        assert released == [True]


# -- 6. the compare box plot at 80x24 --------------------------------------------------------

async def compare(pilot):
    """The recording played, then the compare view (c) on it."""
    app = pilot.app
    await run_replay(pilot)
    await pilot.press("c")
    await until(pilot, lambda: compare_shown(app), app.screen)
    await pilot.pause()


def box_row(line: str):
    """(box number, its row's plot) of a box plot row: `  3 │   ├──██┃██──┤`."""
    found = re.match(r"\s*(\d+) │(.*)$", line)
    return (int(found.group(1)), found.group(2)) if found else None


async def test_the_compare_plot_at_80x24_puts_every_box_in_its_row():
    app = replay_app("compiled")   # six variants, from 2 µs to 1 ms
    async with app.run_test(size=(80, 24)) as pilot:
        await compare(pilot)
        await pilot.pause()
        count = len(app.screen.builder.comparison())
        rows = dict(filter(None, map(box_row, on_screen(app).splitlines())))
        assert sorted(rows) == list(range(1, count + 1)), on_screen(app)
        for number, row in rows.items():
            box = [i for i, ch in enumerate(row) if ch in "█┃"]
            median = row.index("┃")
            assert box and box == list(range(box[0], box[-1] + 1)), (number, row)   # one box, whole
            assert box[0] <= median <= box[-1], (number, row)                        # its median in it
            whiskers = [i for i, ch in enumerate(row) if ch in "├─┤▸"]   # (a box may cover their ends)
            assert all(i < box[0] or i > box[-1] for i in whiskers), (number, row)


async def test_compare_names_are_cut_with_an_ellipsis_never_wrapped():
    app = replay_app("compiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await compare(pilot)
        table = app.screen.query_one("#compare-table")
        names = app.screen.all_names
        shown = [str(table.get_row(name)[1]).strip() for name in names]
        assert all(row.height == 1 for row in table.rows.values())
        assert any("…" in s for s in shown), shown               # at 80 columns some are cut
        assert len(set(shown)) == len(shown), shown                  # still told apart
        for name, cell in zip(map(app.screen.display_name, names), shown):
            at = 0
            for piece in cell.split("…"):                             # what is left, in order
                at = name.find(piece, at)
                assert at >= 0, (name, cell)
                at += len(piece)
            assert name.endswith(cell.split("…")[-1]), (name, cell)
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= 80


# -- 5. training in the app -------------------------------------------------------------------

def recorded_training():
    """The recording's last variant: its final check and its losses, as recorded."""
    from couplescope.core import replay
    from test_tui_replay import FIXTURES

    recording = replay.Recording(replay.read(f"{FIXTURES}/training.jsonl"))
    builder = ResultsBuilder("training")
    for ev in recording.events:
        builder.on_event(ev)
    return list(builder.variants.values())[-1]


async def test_the_watch_view_shows_the_training_verdict_and_loss():
    variant = recorded_training()
    final = variant.summary["training"]["final_check"]
    losses = [it["loss"] for it in variant.iterations if it.get("loss") is not None]
    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        shown = " ".join(text(app, "#stats").split())
        assert f"[training] {'PASSED' if final['passed'] else 'FAILED'} {final['check']}" in shown, shown
        assert " ".join(final["message"].split()) in shown, shown          # the learned output
        assert f"loss {fmt.sci(losses[0])} at the first step, {fmt.sci(losses[-1])} at the last" in shown, shown
        await pilot.press("t")             # and the log says every variant's verdict, brackets and all
        log = app.query_one("#log")
        await until(pilot, lambda: log.lines, "the log drawn")
        logged = " ".join(line.text for line in log.lines)
        for name in app.runs[1].builder.variants:
            assert f"{name}: [training] PASSED {final['check']}" in logged, logged


async def test_compare_shows_a_training_step_s_columns():
    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        await compare(pilot)
        table = app.screen.query_one("#compare-table")
        labels = [str(c.label).strip() for c in table.columns.values()]
        assert "overhead" not in labels and {"backward", "loss"} <= set(labels), labels
        assert "overhead" not in text(app.screen, "#compare-title")
        cells = [str(cell).strip() for name in app.screen.all_names for cell in table.get_row(name)]
        assert "n/a" not in cells, cells


# -- 7. the watch view while a run starts -------------------------------------------------------

async def test_the_watch_view_says_the_run_is_starting_not_that_there_is_none(held):
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.active is not None and "running #1" in text(app, "#status"),
                    text(app, "#status"))
        await pilot.pause()
        stats = text(app, "#stats")
        assert "no run yet" not in stats and "starting" in stats, stats


# -- 8. hints and labels whole -------------------------------------------------------------------

@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@pytest.mark.parametrize("preset", [None, PRESET])
async def test_every_hint_and_label_of_the_form_is_whole(size, preset, monkeypatch):
    from couplescope.backends.mpi import slurm

    monkeypatch.setattr(slurm, "present", lambda: True)   # the nodes field too
    app = CoupleScopeApp(RunOptions(preset=preset), load_catalogue=False)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        form = app.query_one("#form")
        for widget in form.query(Input):
            assert len(widget.placeholder) <= widget.content_size.width, (widget.id, widget.placeholder)
        for widget in form.query(Select):
            room = widget.query_one("SelectCurrent").content_size.width - 1   # its arrow
            assert len(widget.prompt) <= room, (widget.id, widget.prompt, room)
        for label in form.query(".pick-grid Label"):
            words = str(label.render())
            assert len(words) <= label.content_size.width, (words, label.content_size.width)
