"""The app at the sizes terminals have: everything a user needs on screen at 80x24, the
plot's legend fitted to its width, and from 150 columns the wider layout (two fields a
row on the form, the telemetry column beside the watch view)."""

from __future__ import annotations

from textual.widgets._select import SelectCurrent
from test_tui import make_app, wait_for

from couplescope.frontends.tui.watch_widgets import PlotLegend, legend_lines


async def test_the_focused_field_stands_out_at_80x24():
    """Compact fields showed focus as a 5% tint, one grey step: it must be unmistakable."""
    def distance(a, b):
        return sum(abs(x - y) for x, y in zip(a.rgb, b.rgb))

    app = make_app(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        for field, part in (("#model", lambda w: w.query_one(SelectCurrent)), ("#size", lambda w: w)):
            widget = app.query_one(field)
            app.query_one("#iterations").focus()
            await pilot.pause()
            blurred = part(widget).background_colors[1]
            widget.focus()
            await pilot.pause()
            focused = part(widget).background_colors[1]
            assert distance(focused, blurred) > 120, (field, blurred, focused)


async def test_run_button_is_on_screen_at_80x24():
    app = make_app("--model", "simplenet", load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen.region
        for widget in ("#run", "#preview"):
            region = app.query_one(widget).region
            assert region.height and screen.contains_region(region), (widget, region)


def test_legend_fits_one_line_at_120_and_two_at_80():
    items = [("x warm-up", "orange"), ("━ timed", "white"), ("x profiled", "red"),
             *[(f"━ {p}", "cyan") for p in ("marshal_in", "h2d", "forward", "d2h", "marshal_out")]]
    assert len(legend_lines(items, 74, short=True)) == 1          # 120 columns: the plot box is 74 wide
    assert len(legend_lines(items, 34, short=True)) == 2          # 80 columns
    assert len(legend_lines(items[:3] + items[3::2], 74)) == 1    # CPU phases: full names fit


async def test_legend_widget_shortens_phases_only_when_it_must():
    app = make_app(load_catalogue=False)
    items = [("x warm-up", "orange"), ("━ timed", "white"), ("x profiled", "red"),
             ("━ marshal_in", "cyan"), ("━ forward", "green"), ("━ marshal_out", "blue")]
    async with app.run_test(size=(80, 24)) as pilot:
        app.action_show_view("watch")
        await pilot.pause()
        legend = app.query_one(PlotLegend)
        legend.show(items)
        await pilot.pause()
        narrow = str(legend.render())
        # full names where they fit the legend's three lines (the eleventh walk: the wording
        # changed within a run when it was chosen on the fewest lines)
        assert legend.content_size.width < 40 and "━ marshal_in" in narrow and narrow.count("\n") <= 2
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert str(legend.render()) == "x warm-up ━ timed x profiled ━ marshal_in ━ forward ━ marshal_out"


async def test_from_150_columns_the_form_takes_two_fields_a_row_and_watch_shows_telemetry():
    app = make_app(load_catalogue=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        grids = list(app.query(".pick-grid"))
        telemetry = app.query_one("#watch-telemetry")
        assert grids and all(g.styles.grid_size_columns == 4 for g in grids)
        assert telemetry.styles.display == "block"
        await pilot.resize_terminal(149, 40)
        await wait_for(pilot, lambda: all(g.styles.grid_size_columns == 2 for g in grids),
                       what="two columns at 149")
        assert telemetry.styles.display == "none"
        await pilot.resize_terminal(150, 40)
        await wait_for(pilot, lambda: all(g.styles.grid_size_columns == 4 for g in grids),
                       what="four columns at 150")
        assert telemetry.styles.display == "block"


async def test_help_scrolls_to_its_end_at_80x24():
    app = make_app(load_catalogue=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        box = app.screen.query_one("#help-box")
        assert app.focused is box and "scroll" in box.border_subtitle
        assert box.max_scroll_y > 0                      # more than fits: it must scroll
        await pilot.press("end")
        await pilot.pause()
        assert box.scroll_y == box.max_scroll_y
