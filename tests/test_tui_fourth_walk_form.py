"""What a fourth walk-through of the app by a new user found (issue 30, at 80x24), each
driven by Pilot on the real app: keys typed together all reach a field, `v` is offered on
the compare screen, the focused field stays in sight, the tables keep their gaps, an open
list looks apart from the form, History's command is written whole, the iterations table
counts calls as the plot does, and the smaller words (digit groups, one-variant compares,
footers that offer only what acts).

Runs are recorded real runs played back (tests/fixtures) or made up by
couplescope.core.synthetic; no worker process, no catalogue (no torch import)."""

from __future__ import annotations

import subprocess

import pytest
from textual import events
from textual.widgets import Input

from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.frontends.tui.compare_screen import CompareScreen
from test_tui_first_use import held, text  # noqa: F401 (held: a fixture)
from test_tui_replay import compare_shown, replay_app, run_replay, until
from test_tui_snapshots import on_screen
from test_tui_walkthrough import compared, second_variant_held, stopped_at_second_variant  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


# -- 1. backspace and a character sent together ----------------------------------------------------

CASES = [("iterations", "123456", [("backspace", "\x7f"), ("7", "7")], "123457"),
         ("name", "abc", [("backspace", "\x7f"), ("x", "x")], "abx"),
         ("iterations", "123", [("left", None), ("9", "9")], "1293")]


async def test_keys_that_arrive_together_all_reach_the_field():
    """A terminal sends "\\x7f7" in one read when backspace and 7 are typed together: the
    driver posts both keys at once. Textual runs a field's own bound keys (backspace, the
    arrows) only once the key has bubbled up to the app, so the 7 was typed first and the
    backspace then took it away: both keys lost."""
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        for field, before, keys, after in CASES:
            box = app.main.query_one(f"#{field}", Input)
            box.focus()
            await until(pilot, lambda: app.focused is box, "the field focused")
            box.value = before
            box.cursor_position = len(before)        # (the focus selected all the field held)
            values: list[str] = []

            def changed(value: str) -> None:
                values.append(value)
            box.watch(box, "value", changed, init=False)
            for key, character in keys:          # as the driver posts what one read parsed to
                app.post_message(events.Key(key, character))
            changes = sum(key != "left" for key, _ in keys)
            await until(pilot, lambda: len(values) >= changes, "the keys acted")
            assert values[-1] == after, (field, values)
            box.value = ""


# -- 2. v on the compare screen: in the footer where it acts, and on the help screen ---------------

def footer_keys(app) -> dict[str, object]:
    """The footer's keys as shown: key -> its FooterKey (laid out: each has its region)."""
    from textual.widgets._footer import FooterKey

    return {k.key_display: k for k in app.screen.query(FooterKey)}


async def test_v_is_offered_where_a_sweep_is_compared_and_every_key_fits_80_columns():
    app = replay_app("sweep")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.recording = replay_app("training").recording      # a second run, of the other task
        await run_replay(pilot)
        await pilot.press("c")                                # all runs: the training ones first
        await until(pilot, lambda: "esc" in footer_keys(app), "the compare screen's footer")
        assert "v" not in footer_keys(app), "v offered with no sweep compared"
        await pilot.press("v")                                # says why, changes nothing
        await until(pilot, lambda: any("no sweep here" in str(n.message) for n in app._notifications),
                    "v says why it does nothing")
        await pilot.press("tab")                              # the sweep's task
        await until(pilot, lambda: "v" in footer_keys(app), "v in the footer")
        keys = footer_keys(app)
        assert {"tab", "esc", "space", "v"} <= set(keys), list(keys)   # q quits there, not listed: room
        await until(pilot, lambda: all(k.region.width > 0 for k in footer_keys(app).values()), "laid out")
        assert all(k.region.right <= 80 for k in footer_keys(app).values()), \
            [(k.key_display, k.description, k.region) for k in footer_keys(app).values()]
        assert "v: boxes" in on_screen(app)
        await pilot.press("v")
        await until(pilot, lambda: "(v: vs size)" in on_screen(app), "the boxes drawn")
        await pilot.press("question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "the help screen")
        from textual.widgets import Markdown
        shown = app.screen.query_one(Markdown).source
        assert "`v` switches the plot" in shown, shown


async def test_the_footer_offers_r_while_no_run_goes_and_s_while_one_does(held):
    """(What makes room for v at 80 columns.) The key not offered still says why it cannot act."""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "r" in footer_keys(app) and "s" not in footer_keys(app),
                    "r offered, s not")
        await pilot.press("s")
        await until(pilot, lambda: "no run is going" in text(app, "#status"), "s says why")
        await pilot.press("r")
        await until(pilot, lambda: "s" in footer_keys(app) and "r" not in footer_keys(app), "s offered, r not")
        await pilot.press("r")
        await until(pilot, lambda: any("still going" in str(n.message) for n in app._notifications),
                    "r says why")
        held.set()
        await until(pilot, lambda: app.active is None and "r" in footer_keys(app), "r offered again")


# -- 3. the focused field stays in sight when the Run line grows ------------------------------------

async def test_the_field_typed_in_stays_in_sight_when_the_run_line_grows():
    """With simplenet-train at 80x24, a value typed over the preset's made the Run line three
    lines long: the form's scroll area lost two rows, and the field typed in went below it;
    then warm-up, the field above it, the same (the walk-through's keys)."""
    from couplescope.core.request import RunOptions

    app = CoupleScopeApp(RunOptions(preset="simplenet-train"), load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        scroll, bar = app.main.query_one("#pick-fields"), app.main.query_one("#run-bar")
        await until(pilot, lambda: app.focused is not None, "the form focused")
        for field, typed, key in (("iterations", "300", "tab"), ("warmup", "2", "shift+tab")):
            box = app.main.query_one(f"#{field}", Input)
            while app.focused is not box:               # as a user gets there
                await pilot.press(key)
                await pilot.pause()
            # on the scroll area's last row, where Tab leaves it at 80x24 with the catalogue's notes
            scroll.scroll_to(y=scroll.scroll_y + box.region.bottom - scroll.region.bottom, animate=False,
                             immediate=True)
            await until(pilot, lambda: box.region.bottom == scroll.region.bottom, "the field on the last row")
            rows = bar.region.height
            await pilot.press(*typed)
            await until(pilot, lambda: bar.region.height > rows and box.value == typed, "the Run line grown")
            await pilot.pause()
            await until(pilot, lambda: scroll.region.contains_region(box.region),
                        ("the field out of sight", field, box.region, scroll.region))


# -- 5. and 13. the iterations table: the plot's numbers, a gap before them --------------------------

def table_rows(app) -> list[str]:
    return [strip.text for strip in app.main.query_one("#iteration-table").lines]


async def test_the_table_numbers_every_call_as_the_plot_and_the_status_line_count_them():
    app = replay_app("two-backends")                    # 1 warm-up, 12 timed, 2 profiled
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        rows = [row.split()[:2] for row in table_rows(app)]
        plot = app.main.query_one("#plot")
        assert [[str(number), kind] for number, kind, *_ in plot.points] == \
            [[n, {"warm": "warmup", "prof": "profiled"}.get(k, k)] for n, k in rows], rows
        assert rows[0] == ["1", "warm"] and rows[-1] == ["15", "prof"], rows   # not 1 warm ... 2 prof
        assert "15/15 calls" in text(app, "#stats")


async def test_six_digit_call_numbers_keep_a_gap_after_the_border():
    """(A run of 200 000 calls costs seconds: its last rows are written as a run's are.)"""
    from couplescope.frontends.tui.views.watch import WatchView
    from couplescope.frontends.tui.iterations_table import IterationsTable

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        table = app.main.query_one(IterationsTable)
        header = text(app, "#iterations-header")
        call = {"kind": "timed", "seconds": 1.15e-5, "max_rel_error": 0.0, "passed": True}
        table.add_iterations([{**call, "index": i} for i in range(1, 200_001)])
        table.flush()
        last = table_rows(app)[-1]
        assert last.startswith(" 200 015 timed"), last          # 15 calls before them
        assert last.index("timed") == header.index("kind"), (header, last)
        assert table.region.right <= 80 and "PASSED" in last
        # no count is the largest (--iterations has no bound): the column and its box grow
        from couplescope.frontends.tui.views.watch import TABLE_BOX_WIDTH
        from couplescope.frontends.tui.iterations_table import number_digits, table_width

        app.main.query_one(WatchView)._table_for(False, 12_345_678)
        box = app.main.query_one("#iterations-box")
        await until(pilot, lambda: box.region.width == table_width(number_digits(12_345_678)) > TABLE_BOX_WIDTH,
                    box.region)
        # over its 10 columns (12 345 678)
        assert text(app, "#iterations-header").startswith(" " * 10 + "# kind"), text(app, "#iterations-header")


# -- 6. an open list looks apart from the form --------------------------------------------------------

async def preset_list_opened(pilot):
    """The preset field focused and its list opened with enter: (the field, its list)."""
    from textual.widgets import Select

    from couplescope.frontends.tui.fields import EndingList

    app = pilot.app
    field = app.main.query_one("#preset", Select)
    field.focus()
    await until(pilot, lambda: app.focused is field, "the preset field focused")
    await pilot.press("enter")
    return field, field.query_one(EndingList)


async def test_an_open_list_is_framed_on_a_background_of_its_own():
    app = CoupleScopeApp(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        field, opened = await preset_list_opened(pilot)
        await until(pilot, lambda: opened.display and opened.region.height > 2, "the list open")
        assert opened.styles.border_top[0] == "round" and opened.styles.border_bottom[0] == "round"
        current = field.query_one("SelectCurrent")
        assert opened.styles.background != current.styles.background, opened.styles.background
        screen = on_screen(app).splitlines()                 # drawn: its frame's corners
        assert "╭" in screen[opened.region.y] and "╰" in screen[opened.region.bottom - 1], screen
        await pilot.press("escape")


# -- 7. History's command whole; a top line of two lines keeps the tab bar whole -----------------------

async def test_a_top_line_of_two_lines_keeps_the_tab_bar_whole():
    """(It took the tab bar's underline row, to leave the plot its rows; the eighth walk
    found the tab bar cut in half often: the top line's words now come in forms that fit
    one line, and words no form of which fits take a row from the view, the tabs whole.)"""
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        plot, status = app.main.query_one("#plot-box"), app.main.query_one("#status")
        await until(pilot, lambda: plot.region.height > 0, "the plot laid out")
        rows = plot.region.height
        long = "#1 simplenet-bridge-python-host exported to 20261127-034309-simplenet-train (where, and its command: h)"
        app.set_status(long)
        await until(pilot, lambda: status.region.height == 2, "the top line in two lines")
        await until(pilot, lambda: plot.region.height == rows - 1, "the plot a row shorter")
        shown = on_screen(app).splitlines()
        assert "Watch w" in shown[2] and "━" in shown[3] and long.split()[-1] in shown[1], shown[:4]
        app.set_status("short")
        await until(pilot, lambda: status.region.height == 1, "one line again")
        await until(pilot, lambda: plot.region.height == rows, "the plot's rows back")
        assert "━" in on_screen(app).splitlines()[2]

PATHS = ["/tmp/runs/20261127-034309-simplenet",
         "/home/someone/projects/climate-model/couplescope-runs/20261127-034309-simplenet",
         "/home/someone/my runs/couplescope-runs/20261127-034309-simplenet-train"]


async def test_history_writes_the_tensorboard_command_whole():
    """Too long for a line, the command is still one command when copied: lines ending in
    a line continuation (the terminal's wrapping split it at its space into two)."""
    from couplescope.frontends.tui.views.history import tensorboard_command

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h")
        for path in PATHS:
            app.runs[1].export_path = path
            app.main.query_one("HistoryView").show_export_note(app.runs[1])
            await pilot.pause()
            shown = [line.strip() for line in on_screen(app).splitlines()]
            at = next(i for i, line in enumerate(shown) if line.startswith("couplescope --tensorboard"))
            lines = shown[at:-1]                                 # to the footer
            assert lines == [tensorboard_command(path)] or all(line.endswith("\\") for line in lines[:-1]), lines
            assert all(len(line) <= 78 for line in lines), lines
            copied = subprocess.run(["sh", "-c", "\n".join(lines).replace("couplescope", "printf '%s\\n'", 1)],
                                    capture_output=True, text=True, check=True).stdout
            assert copied.splitlines() == ["--tensorboard", path], (copied, lines)   # one command, whole


# -- 14. the smaller words -----------------------------------------------------------------------------

async def test_counts_are_grouped_in_the_statistics_and_the_compare_table():
    """`n=71783 timed` stood beside `71 784/200 004 calls`."""
    from couplescope.core import replay, synthetic
    from couplescope.protocol.spec import RunSpec

    spec = RunSpec(model="simplenet", warmup=1, iterations=1_200, profile_iterations=0)
    app = CoupleScopeApp(load_catalogue=False,
                         recording=replay.Recording(list(synthetic.events_for(spec, seconds=1e-5)), "simplenet"))
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        stats = " ".join(text(app, "#stats").split())
        assert "n=1 200 timed" in stats and "1 201/1 201 calls" in stats, stats
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await until(pilot, lambda: "1 200" in on_screen(app), "the compare table's n grouped")


async def test_a_sweep_plot_says_which_variants_it_does_not_draw():
    app = replay_app("two-backends")                   # #1: one size
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        app.recording = replay_app("sweep").recording   # #2: a sweep of sizes 8, 16, 32
        await run_replay(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        legend = app.screen.query_one("#compare-legend")
        await until(pilot, lambda: "#2 deep-linear" in str(legend.render()), "the sweep drawn")
        words = " ".join(str(legend.render()).split())
        assert "not drawn: 1, 2 (one size in its run" in words, words    # #1's two variants, by box number
        table = app.screen.query_one("#compare-table")
        # whole, or (the size column of the ninth walk's 3a taking its room) cut between words
        from test_tui_third_walk_compare import cut_between_words
        shown = [str(table.get_row_at(i)[1]).strip() for i in (0, 1)]
        whole = ["#1 simplenet-torchscript", "#1 simplenet-bridge-eager"]
        assert len(set(shown)) == 2 and all(s == w or cut_between_words(s[3:], w[3:]) for s, w in zip(shown, whole)), shown


async def test_a_compare_of_one_measured_variant_shows_no_ratio(second_variant_held):
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await stopped_at_second_variant(pilot, second_variant_held)
        table = await compared(pilot)
        await until(pilot, lambda: table.row_count == 2, "both variants' rows")
        labels = [str(c.label).strip() for c in table.columns.values()]
        assert "vs fastest" not in labels and "1.00x" not in on_screen(app), labels


async def test_an_empty_history_does_not_offer_space_and_says_why_when_pressed():
    app = CoupleScopeApp(load_catalogue=False, recording=replay_app("two-backends").recording)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await until(pilot, lambda: "r" in footer_keys(app), "the footer")
        assert "space" not in footer_keys(app), list(footer_keys(app))
        assert text(app, "#export-note").startswith("no run yet: "), text(app, "#export-note")
        await pilot.press("space")
        await until(pilot, lambda: "no run to mark yet" in text(app, "#status"), "space says why")
        await run_replay(pilot)
        await pilot.press("h")
        await until(pilot, lambda: "space" in footer_keys(app), "space offered with a run to mark")
        assert text(app, "#export-note").startswith("space marks runs"), text(app, "#export-note")


async def test_an_export_from_history_does_not_point_to_history(monkeypatch, tmp_path):
    """(The run directory is not written: what the top line says is the question here.)"""
    from couplescope.frontends.tui.runs import RunRecord

    monkeypatch.setattr(RunRecord, "export", lambda self, parent: str(tmp_path / "20261127-034309-simplenet"))
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        await pilot.press("h", "e")
        await until(pilot, lambda: "exported to" in text(app, "#status"), "the export's end")
        assert text(app, "#status").strip() == "#1 simplenet exported to 20261127-034309-simplenet"
        app.runs[1].export_path = None
        await pilot.press("w", "e")                    # from another view it says where to look
        await until(pilot, lambda: text(app, "#status").endswith("(where, and its command: h)"), text(app, "#status"))


async def test_the_quit_question_offers_its_own_keys_only():
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)                        # not exported: q asks
        await pilot.press("q")
        await until(pilot, lambda: type(app.screen).__name__ == "QuitScreen", "the question")
        await until(pilot, lambda: set(footer_keys(app)) == {"q", "esc"}, list(footer_keys(app)))
        await pilot.press("c", "h")                    # compare opened over it; h closed it unanswered
        await until(pilot, lambda: any("the question first" in str(n.message) for n in app._notifications),
                    "other keys say the question comes first")
        assert type(app.screen).__name__ == "QuitScreen"
        await pilot.press("n")
        await until(pilot, lambda: app.screen is app.main, "back")
        assert "r" in footer_keys(app)
