"""What a new user's walk through the app in tmux (80x24) found after issue 30's first
part, each driven by Pilot on the real app over recorded real runs (tests/fixtures):
compare at 80x24 (title and numbers whole, one task at a time, what is left out stays
out), the stopped state, the Run line with a preset and a ticked backend, the backends
list's highlighted row on screen, the focus where it was, the log following its end,
`q` with runs not exported, `e` and `c` saying why not, the footer whole."""

from __future__ import annotations

import os
import threading

import pytest
from textual.widgets import DataTable

from couplescope.core import replay
from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.compare_screen import CompareScreen
from couplescope.frontends.tui.compare_table import loss_cell
from test_tui_replay import compare_shown, FIXTURES, replay_app, run_replay, until
from test_tui_first_use import held  # noqa: F401  (a fixture: a run held at its start)
from test_tui_snapshots import on_screen

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


def recording(name: str) -> replay.Recording:
    return replay.Recording(replay.read(os.path.join(FIXTURES, f"{name}.jsonl")), "simplenet")


async def runs_of(pilot, *names: str) -> None:
    """One run per recording, in this order (the app plays the recording it holds on r)."""
    for name in names:
        pilot.app.recording = recording(name)
        await run_replay(pilot)


async def open_compare(pilot) -> CompareScreen:
    await pilot.press("c")
    await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
    await pilot.pause()
    return pilot.app.screen


def table_rows(screen) -> list[list[str]]:
    table = screen.query_one("#compare-table", DataTable)
    return [[str(c).strip() for c in table.get_row(k)] for k in table.rows]


# -- 1, 14. compare at 80x24: one task at a time, its title and every number whole -----------

async def test_compare_at_80x24_compares_one_task_with_its_title_and_numbers_whole():
    """A training run, then an inference run (six variants with a compile column): the
    inference variants only, the training run named as not compared and why; the title
    wrapped, never cut; every column on the screen, each number as ResultsBuilder gives
    it. `tab` compares the training run's steps instead."""
    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_of(pilot, "training", "compiled")
        screen = await open_compare(pilot)
        for task, other in (("infer", "#1 simplenet's training steps"), ("train", "#2 simplenet's inference")):
            title = screen.query_one("#compare-title")
            words = str(title.render())
            assert f"not compared: {other}" in words, words
            wrapped = title.get_content_height(title.size, title.size, title.content_size.width)
            assert wrapped <= title.content_size.height, (wrapped, title.content_size, words)   # whole
            table = screen.query_one("#compare-table", DataTable)
            assert sum(c.get_render_width(table) for c in table.columns.values()) <= table.size.width
            compared = [n for n, t in screen.tasks.items() if t == task]
            assert screen.all_names == compared and len(compared) == (2 if task == "train" else 6)
            labels = [str(c.label).strip() for c in table.columns.values()]
            rows = {r["name"]: r for r in screen.builder.comparison()}
            for name, cells in zip(screen.all_names, table_rows(screen)):
                assert cells[labels.index("median")] == fmt.seconds(rows[name]["median"])
                if task == "train":
                    # 1.316E-09, whole (the compare's four digits: the eighth walk's not judged took the room)
                    assert cells[labels.index("loss")] == loss_cell(rows[name]["last_loss"])
                    assert "overhead" not in labels
                else:
                    assert cells[labels.index("overhead")] == fmt.seconds(rows[name]["overhead"])
                    assert "loss" not in labels and cells[-1] == str(rows[name]["n"])
            await pilot.press("tab")
            await until(pilot, lambda: screen.all_names and screen.tasks[screen.all_names[0]] != task, "the other task")


# -- 8. a variant left out stays out ---------------------------------------------------------

async def test_a_variant_left_out_stays_out_of_the_table_s_ratios_and_the_plot_when_compare_opens_again():
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        screen = await open_compare(pilot)
        first = screen.all_names[0]
        await pilot.press("space")                           # leave the first variant out
        await pilot.pause()
        for again in ("c", "escape c"):                      # c on compare; back, then c
            for key in again.split():
                await pilot.press(key)
            await until(pilot, lambda: compare_shown(app) and app.screen is not screen, again)
            screen = app.screen
            await pilot.pause()
            assert first not in screen.builder.variants, again
            # the one variant left in: no ratio (to itself, 1.00x)
            assert table_rows(screen)[0][2] == "left out" and "1.00x" not in table_rows(screen)[1], again
            boxes = [line for line in on_screen(app).splitlines() if "│" in line and line.strip()[:1].isdigit()]
            assert len(boxes) == 1, (again, boxes)          # the box plot: the variant left in only


# -- 4. after a stop: what was kept, in words ----------------------------------------------------

def held_from(monkeypatch, first_held: int) -> list[str]:
    """The recording's variants from the `first_held`-th worker on (1: every one) hold their
    events until stopped; returns the labels of the workers started, as they start."""
    from couplescope.core.replay import PlayedWorker

    play = PlayedWorker.events
    started: list[str] = []

    def events(self):
        started.append(self.spec.label)
        if len(started) >= first_held:
            while not self._stopped:
                threading.Event().wait(0.01)
            return
        yield from play(self)
    monkeypatch.setattr(PlayedWorker, "events", events)
    return started


async def stopped_at_second_variant(pilot, held: list[str]) -> None:
    """r, then s once the second variant's worker started (held: second_variant_held)."""
    await pilot.press("r")
    await until(pilot, lambda: len(held) == 2, "the second variant's worker started")
    await pilot.press("s")
    await until(pilot, lambda: pilot.app.active is None, "the stopped run ended")


async def compared(pilot):
    """c, and the compare screen's table once it is on the screen."""
    await pilot.press("c")
    await until(pilot, lambda: compare_shown(pilot.app), "compare")
    return pilot.app.screen.query_one("#compare-table")


@pytest.fixture
def second_variant_held(monkeypatch):
    """The recording's second variant holds its events until it is stopped: a run stopped
    while its second variant's worker starts, the first one measured."""
    return held_from(monkeypatch, 2)


async def test_a_stopped_run_says_what_it_kept_once(second_variant_held):
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await stopped_at_second_variant(pilot, second_variant_held)
        record = app.runs[1]
        assert record.status == "stopped"
        status = str(app.main.query_one("#status").render())
        # one line at 80 columns (the eighth walk: it took two, and the tab bar's underline)
        assert status == "#1 simplenet stopped (s): 1 of 2 variants kept; e exports, c compares", status
        await pilot.press("h")
        await pilot.pause()
        row = [str(c).strip() for c in app.main.query_one("#runs", DataTable).get_row("1")]
        # its verdict once, the compare view's word (STOPPED), and how many variants ran
        assert row[1:3] == ["1 of 2", "STOPPED"], row


# -- 5. the Run line says what a ticked backend does to a preset -------------------------------

async def test_the_run_line_says_a_ticked_backend_runs_every_variant_of_the_preset():
    from couplescope.core.request import RunOptions
    from couplescope.frontends.tui.app import CoupleScopeApp
    from textual.widgets import SelectionList

    app = CoupleScopeApp(RunOptions(preset="simplenet"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one("#form")
        form.query_one("#backends", SelectionList).select("aoti")   # as space on its row does
        preview = form.query_one("#preview")
        await until(pilot, lambda: "aoti" in str(preview.render()), str(preview.render()))
        built = form.build()
        assert {s.backend for s in built.specs} == {"aoti"} and len(built.specs) == 3   # the command line's
        words = " ".join(str(preview.render()).split())
        assert "all with aoti (ticked: in place of the preset's torchscript, bridge)" in words, words
        assert all(s.name in words for s in built.specs), words


# -- 6. the backends list's highlighted row is on the screen -----------------------------------

async def test_the_backends_list_scrolls_the_page_to_its_highlighted_row():
    """The list focused, the page scrolled away from it (the wheel, or a Run line grown
    under it): each row the keys highlight is brought onto the screen."""
    from couplescope.frontends.tui.app import CoupleScopeApp

    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        form = app.query_one("#form")
        backends, page = form.query_one("#backends"), form.query_one("#pick-fields")
        backends.focus()
        await pilot.pause()

        def on_screen_row() -> bool:
            row_y = backends.region.y + backends.highlighted - round(backends.scroll_offset.y)
            return page.region.y <= row_y < page.region.bottom

        for scroll, key in (("end", "down"), ("home", "down"), ("end", "up"), ("home", "end")):
            page.scroll_end(animate=False) if scroll == "end" else page.scroll_home(animate=False)
            await pilot.pause()
            await pilot.press(key)
            await until(pilot, on_screen_row, (scroll, key, backends.highlighted, page.scroll_offset))


# -- 7. the focus back where it was ------------------------------------------------------------

async def test_the_focus_comes_back_where_it_was_after_another_view_help_or_compare():
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("p")
        iterations = app.query_one("#iterations")
        iterations.focus()
        await pilot.pause()
        for keys in (["h", "p"], ["question_mark", "escape"], ["c", "p"]):
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
            await until(pilot, lambda: app.focused is iterations, (keys, app.focused))
            assert app.query_one("#tabs").active == "pick"


# -- 9. the log shows its latest line -----------------------------------------------------------

async def test_the_log_and_the_iterations_table_keep_their_latest_line_in_view():
    """The log written while the telemetry panel above it was one line, which then grows
    to five with the first sample (a recorded one): its end stays in view (it was left
    under the screen's edge); so does the iterations table's."""
    app = replay_app("two-backends")
    sample = next(ev["sample"] for ev in recording("two-backends").events if ev.event == "telemetry")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("t")
        for n in range(30):
            app.note(f"line {n}")
        log = app.query_one("#log")
        await until(pilot, lambda: log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y, "written")
        panel = app.query_one("#telemetry-panel")
        before = panel.size.height
        panel.show(sample, None)
        await until(pilot, lambda: panel.size.height > before, "the panel grown")
        await until(pilot, lambda: log.scroll_y == log.max_scroll_y, (log.scroll_y, log.max_scroll_y))
        assert on_screen(app).splitlines()[-2].strip() == "line 29"
        await run_replay(pilot)
        await pilot.press("w")
        table = app.query_one("#iteration-table")
        await until(pilot, lambda: table.scroll_y == table.max_scroll_y, (table.scroll_y, table.max_scroll_y))


# -- 10. q with runs not exported asks ------------------------------------------------------------

async def test_q_asks_before_it_loses_runs_not_exported_and_e_writes_where_the_form_says(tmp_path):
    """q asks while the run is not exported; e writes it into the export folder typed in
    the form (its blank says where e writes; it was ignored: e used the command line's);
    then q quits at once."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("q")
        await until(pilot, lambda: "is not exported: quitting loses it" in on_screen(app), on_screen(app))
        assert "#1 simplenet" in on_screen(app) and not app._exit
        await pilot.press("escape")                        # no: back
        await until(pilot, lambda: "not exported" not in on_screen(app), "back")
        assert not app._exit
        field = app.query_one("#export")
        assert field.placeholder == "./couplescope-runs: where e writes a run"
        field.value = str(tmp_path / "typed")
        await pilot.press("e")
        await until(pilot, lambda: app.runs[1].export_path and app.exporting is None, app.notes[-1:])
        assert os.path.dirname(app.runs[1].export_path) == str(tmp_path / "typed")
        await pilot.press("q")                              # nothing to lose: at once
        await until(pilot, lambda: app._exit, "quit")


# -- 11. e and c say why they cannot act, at once -------------------------------------------------

async def test_e_c_and_s_say_why_not_on_the_top_line(held):
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        status = app.main.query_one("#status")
        for key, why in (("e", "nothing to export yet: run something first (r)"),
                         ("c", "nothing to compare yet: run something first (r)"),
                         ("s", "no run is going")):
            await pilot.press(key)
            await until(pilot, lambda: str(status.render()).startswith(why), (key, str(status.render())))
            assert any(n.message.startswith(why) for n in app._notifications), key
        await pilot.press("r")                                # a run held at its start
        await until(pilot, lambda: app.active is not None, "the run going")
        for key, why in (("e", "#1 simplenet is still running: e exports it once it ends"),
                         ("c", "nothing to compare yet: the runs made no call so far")):
            await pilot.press(key)
            await until(pilot, lambda: str(status.render()).startswith(why), (key, str(status.render())))


# -- 12. the footer whole at 80 columns ------------------------------------------------------------

async def test_every_key_of_the_footer_is_whole_at_80_columns_in_every_view_and_on_compare():
    from textual.widgets._footer import FooterKey

    app = replay_app("training")
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_of(pilot, "training", "two-backends")   # compare: both tasks, so tab shows too
        for keys in ("p", "w", "t", "h", "c"):
            await pilot.press(keys)
            if keys == "c":   # (compare comes after the top line's comparing ... is drawn)
                await until(pilot, lambda: compare_shown(app), "the compare screen")
            shown = {b.binding.description for b in app.screen.active_bindings.values() if b.binding.show}

            def laid_out():
                drawn = {k.description: k for k in app.screen.query(FooterKey)}
                return shown <= set(drawn) and all(k.region.width > 0 for k in drawn.values())
            await until(pilot, laid_out, (keys, shown))
            drawn = sorted(app.screen.query(FooterKey), key=lambda k: k.region.x)
            where = [(k.description, k.region) for k in drawn]
            assert all(k.region.right <= 80 for k in drawn), where
            # none under another (the palette's key is docked at the right, over what runs past it)
            assert all(a.region.right <= b.region.x for a, b in zip(drawn, drawn[1:])), (keys, where)
            if keys == "c":
                assert "task" in shown


async def test_space_in_an_empty_history_says_why_as_the_other_keys_do():
    """Found by the third walk-through: c, e and s said why they could not act; space did
    nothing and said nothing."""
    from couplescope.frontends.tui.app import CoupleScopeApp

    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await pilot.pause()
        await pilot.press("space")
        await until(pilot, lambda: any("no run to mark yet" in n.message for n in app._notifications),
                    "space's refusal")
