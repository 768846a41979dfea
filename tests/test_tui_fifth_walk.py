"""The app as a fifth walk-through (and the fourth's left-overs) found it, mended: each test
failed on main before its mend (replayed recordings of real runs, driven by Pilot)."""

import re

import pytest

from test_tui_fourth_walk_form import footer_keys
from test_tui_replay import replay_app, run_replay, until
from test_tui_snapshots import on_screen
from test_tui_walkthrough import compared, second_variant_held, stopped_at_second_variant  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("short_idle_waits")   # (conftest.py): every wait is for a state


async def test_a_stopped_training_runs_unstarted_variants_are_compared_as_training(second_variant_held):
    """The variants a stop left unstarted have no worker's spec: they were put under
    inference, and the compare offered an inference table of variants that made nothing."""
    app = replay_app("preset-train")
    async with app.run_test(size=(80, 24)) as pilot:
        await stopped_at_second_variant(pilot, second_variant_held)
        table = await compared(pilot)
        await until(pilot, lambda: table.row_count >= 1, "the compare's rows")
        await pilot.pause()
        assert "tab" not in footer_keys(app), list(footer_keys(app))   # no inference table to go to
        assert table.row_count == 4, on_screen(app)   # the unstarted variants among the training rows
        assert "no steps" in on_screen(app) and "no calls" not in on_screen(app), on_screen(app)


def test_lines_are_made_between_words_and_never_inside_a_grouped_number():
    from couplescope.frontends.tui.whole_numbers import wrapped

    text = "[b]direct[/] set iterations to 10 000 (Pick, p) of 1 234 567\nnext line 12 345"
    for width in range(12, 60):
        lines = wrapped(text, width).plain.split("\n")
        assert all(len(line) <= width for line in lines), (width, lines)
        assert [w for line in lines for w in line.split(" ")] == text.replace("[b]", "").replace("[/]", "").split(), width
        assert not any(re.search(r"\d$", a) and re.match(r"\d{3}\b", b) for a, b in zip(lines, lines[1:])), lines


async def test_the_training_verdict_keeps_10_000_on_one_line_at_80_columns():
    """`set iterations to 10` at a line's end and `000 (Pick, p)` on the next (seen at 80x24)."""
    from textual.geometry import Region

    app = replay_app("preset-train")   # 40 steps of SimpleNet's ~10 000: not judged
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        panel = app.main.query_one("#stats")
        await until(pilot, lambda: "not judged" in str(panel.content), "the verdict")
        await pilot.pause()
        lines = [strip.text.strip() for strip in panel.render_lines(Region(0, 0, *panel.size))]
        assert any("10 000" in line for line in lines), lines
        assert not any(re.search(r"\d$", a) and re.match(r"\d{3}\b", b) for a, b in zip(lines, lines[1:])), lines


async def test_e_is_offered_only_where_it_exports_and_says_why_when_pressed_anyway():
    """(The fifth walk's S8 for c, and e the same: offered before any run, it refused.)"""
    from test_tui_first_use import text

    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "r" in footer_keys(app), "the footer")
        assert "e" not in footer_keys(app), list(footer_keys(app))
        await pilot.press("e")
        await until(pilot, lambda: "nothing to export yet" in text(app, "#status"), "e says why")
        await run_replay(pilot)
        await until(pilot, lambda: "e" in footer_keys(app), "e offered once a run measured something")


async def test_the_focused_run_button_runs_on_enter():
    """(The sixth walk-through: the Run button took the focus, and Enter on it did nothing;
    nor did a click. Enter is a Textual button's key; space is not.)"""
    key = "enter"
    app = replay_app("two-backends")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "r" in footer_keys(app), "the footer")
        app.query_one("#run").focus()
        await until(pilot, lambda: app.focused is app.query_one("#run"), "the Run button focused")
        await pilot.press(key)
        await until(pilot, lambda: len(app.runs) == 1, f"{key} on the Run button started a run")
