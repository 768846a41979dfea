"""What a fifth walk-through of the app by a new user found cut or drawn unlike itself
(issue 30, /work/fifth-walk.md's C2-C5, S1-S3, S11): History's run column uses the room it
has and keeps what tells runs apart, a Watch redraw shows the same calls in every figure
and keeps its height through a run, a narrow box keeps its whisker's start, numbers are
grouped and written alike, and the iterations table says which rows it does not list.

Pure functions are tested as such; the app is the real one driven by Pilot over made-up
or recorded runs played back (no worker process, no catalogue)."""

from __future__ import annotations

from couplescope.frontends.tui.box_rows import BoxPlot, draw


# -- C4: a box narrower than three columns keeps its whisker's start in view -------------------

def test_a_narrow_box_never_covers_the_start_of_its_whisker():
    # a box one column wide just right of its lower whisker's start (the walk's sweep row 1:
    # `█┃█─────────┤`), and a wide box whose 5th and 25th percentiles share a column (row 5
    # at 160 columns: `███┃██████───┤`)
    plot = BoxPlot("µs", [[40.0, 11.0, 10.9, 10.8, 10.0], [60.0, 40.0, 25.0, 10.0, 10.0]], 10.0, 60.0, {})
    for width in (80, 160):
        rows = draw(plot, ["1", "2"], width).plain.splitlines()[1:3]
        for row in rows:
            body = row.split("│", 1)[1]
            assert body.lstrip().startswith("├") and body.rstrip().endswith("┤"), (width, row)
            assert "┃" in body, row


# -- S2: a time is written one way everywhere: four significant figures at most ----------------

def test_times_are_written_with_four_figures_at_most_in_the_app_and_the_pictures():
    from couplescope.export.plot_panels import seconds_text
    from couplescope.frontends import formatting as fmt

    # the Watch view's `max 116.17 ms` beside `max 11.30 ms`; summary.png's `474 µs` beside `473.3 µs`
    assert [fmt.seconds(v) for v in (116.17e-3, 11.3e-3, 189.6e-6, 12.345)] == \
        ["116.2 ms", "11.30 ms", "189.6 µs", "12.35 s"]
    assert seconds_text(474e-6) == fmt.seconds(474e-6) == "474.0 µs"
    assert fmt.seconds(999.96e-6) == "1.00 ms"   # not 1000.0 µs


# -- C2: History's run column takes the room it has and keeps what tells runs apart ------------

def made_up(*specs, title: str = "simplenet"):
    """A run of `specs` with made-up calls (couplescope.core.synthetic), played back on r."""
    from couplescope.core import replay, synthetic

    return replay.Recording([ev for spec in specs for ev in synthetic.events_for(spec)], title)


def spec(**given):
    from couplescope.protocol.spec import RunSpec

    return RunSpec(**{"model": "simplenet", "warmup": 1, "iterations": 3, "profile_iterations": 0, **given})


async def test_history_s_run_column_uses_the_width_it_has_and_keeps_the_differences():
    from textual.widgets import DataTable

    from couplescope.frontends.tui.app import CoupleScopeApp
    from test_tui_replay import run_each

    # runs that differ in three settings each (the walk's: warm-up, iterations, what the bridge runs)
    runs = [made_up(spec(backend="torchscript", name="a"), spec(backend="bridge", name="b", iterations=205)),
            made_up(spec(backend="torchscript", name="a", warmup=10, threads=2, iterations=10000)),
            made_up(spec(backend="torchscript", name="a", warmup=10, threads=4, size=8))]
    app = CoupleScopeApp(load_catalogue=False, recording=runs[0])
    async with app.run_test(size=(80, 24)) as pilot:
        await run_each(pilot, runs)
        table = app.main.query_one("#runs", DataTable)
        for size in ((160, 48), (80, 24)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            rows = [str(table.get_row(key)[0]).rstrip() for key in table.rows]
            used = sum(c.get_render_width(table) for c in table.columns.values())
            assert used == table.scrollable_content_region.width, (size, used, table.size)   # no room left over
            if size == (160, 48):   # everything that tells them apart, whole
                assert "…" not in "".join(rows), rows
                assert "steps" not in rows[1] and "iterations 10 000" in rows[1], rows   # (S1: grouped)
                assert "warm-up 1," in rows[0] + "," and "threads 4" in rows[2], rows
            else:   # cut at 80: as many settings as fit, each whole, the most telling first, in
                # one order (issue 30's sixth walk: `warm-up 10, threads 2` above `size 8, threads 4`)
                # (`size 1`, the size the model ran at, fits where `size default` did not: the twelfth walk)
                assert rows == ["  #1 simplenet  iterations 3,205, size 1, …", "  #2 simplenet  iterations 10 000, size 1, …",
                                "  #3 simplenet  iterations 3, threads 4, …"], rows


# -- S3: History's fastest median stands apart from the next column ----------------------------

def test_history_s_fastest_figures_leave_two_spaces_before_the_next_column():
    from couplescope.frontends import formatting as fmt
    from couplescope.frontends.tui.compare_table import spaced
    from couplescope.frontends.tui.runs_table import COLUMNS

    width = {key: w for key, _, w in COLUMNS}["median"]
    for value in (169.8e-6, 116.17e-3, 999.9e-6, 2.5):   # `169.8 µs yes` touched; the header read `fastest  exported`
        assert len(spaced(fmt.seconds(value))) + 1 <= width, fmt.seconds(value)


# -- S1: whole numbers grouped in the form's blanks and the plot's axis, typed values as typed -

def test_numbers_are_grouped_in_blanks_and_on_the_plot_s_axis():
    from couplescope.frontends.tui.blanks import blank_for, default_blank, value_text
    from couplescope.frontends.tui.watch_widgets import x_ticks
    from couplescope.protocol import options

    assert blank_for(options.BY_NAME["iterations"], {"iterations": [10000]}).words == "10 000 (preset)"
    assert default_blank(options.BY_NAME["profile_max_ops"]).words == "10 000 (default)"
    assert value_text(options.BY_NAME["iterations"], 10000) == "10000"   # what a field holds: as typed
    ticks, labels = x_ticks(1, 100004, 70)
    assert labels[-1] == "100 004" and ticks[-1] == 100004, labels
    assert max(map(len, labels)) < (70 - 6) // len(labels), labels   # each label in its stretch of the axis


# -- C3: one Watch redraw shows the same calls in every figure, under a flood of calls ---------

def flood(calls: int, chunk: int = 25, names=("flood",), **given):
    """Variants (`names`, one after the other) of `calls` made-up timed calls each, sent as
    many small batches (a fast model on a loaded machine: the app gets calls faster than
    it draws them)."""
    from couplescope.core import replay, synthetic
    from couplescope.protocol import columns, events

    played = []
    for name in names:
        for ev in synthetic.events_for(spec(name=name, iterations=calls, **given)):
            ev = events.typed(ev)
            if ev.event != "iterations" or len(ev.calls) <= chunk:
                played.append(ev)
                continue
            for i in range(0, len(ev.calls), chunk):
                part = [{k: v for k, v in c.items() if k not in ("event", "variant", "kind")}
                        for c in ev.calls[i:i + chunk]]
                played.append(events.make("iterations", name, **columns.iteration_columns(
                    ev.calls[i]["kind"], part[0]["index"], part)))
    return replay.Recording(played, "simplenet")


def fast_redraws(monkeypatch) -> None:
    """The Watch view redrawn ten times as often as in use: frames while the calls of a
    short flood come."""
    from couplescope.frontends.tui.views.watch import WatchView

    monkeypatch.setattr(WatchView, "redraw_seconds", 0.1)


async def test_every_figure_of_a_watch_redraw_names_the_same_calls_under_a_flood(monkeypatch):
    import re

    from textual.widgets import ProgressBar

    from couplescope.frontends.tui.app import CoupleScopeApp
    from couplescope.frontends.tui.iterations_table import IterationsTable
    from couplescope.frontends.tui.stats_panel import StatsPanel
    from couplescope.frontends.tui.views.watch import WatchView
    from couplescope.frontends.tui.watch_widgets import TimePlot, progress_shown
    from test_tui_replay import until

    frames = []   # (what the statistics count, the table's last row, the plot's last point, the bar)

    def frame(view) -> None:
        if not view.query(StatsPanel):   # (the app closing: its widgets gone)
            return
        stats = re.search(r"([\d ]+)/([\d ]+) calls", str(view.query_one(StatsPanel).render()))
        table = view.query_one(IterationsTable)
        plot = view.query_one(TimePlot)
        if stats and table.lines:
            done, total = (int(n.replace(" ", "")) for n in stats.groups())
            # the bar's percentage is rounded down (progress_shown): it shows `done` when it
            # shows what progress_shown makes of it
            bar = view.query_one(ProgressBar).progress
            row = re.match(r" *(\d[\d ]*) [a-z]", table.lines[-1].text)   # grouped: `10 561 timed`
            frames.append((done, int(row.group(1).replace(" ", "")), plot.drawn_last,
                           done if bar == progress_shown(done, total) else bar))

    def drawing(original):
        def draw(self, *args, **kwargs):
            original(self, *args, **kwargs)
            if not self._dirty:   # drawn (not skipped): the last point the plot shows
                self.drawn_last = self.points[-1][0] if self.points else None
        return draw

    def redrawing(original):
        def redraw(self, *args, **kwargs):
            original(self, *args, **kwargs)
            frame(self)
        return redraw

    def resizing(original):   # a new width lays out the statistics again: the same calls
        def on_resize(self):   # (no event: Textual passes one to a handler that takes *args)
            original(self)
            frame(self.screen.query_one(WatchView))
        return on_resize

    fast_redraws(monkeypatch)
    monkeypatch.setattr(TimePlot, "drawn_last", None, raising=False)
    monkeypatch.setattr(TimePlot, "draw", drawing(TimePlot.draw))
    monkeypatch.setattr(WatchView, "redraw", redrawing(WatchView.redraw))
    monkeypatch.setattr(StatsPanel, "on_resize", resizing(StatsPanel.on_resize))
    app = CoupleScopeApp(load_catalogue=False, recording=flood(12000, chunk=10))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.runs, "the run started")
        wide = False
        while app.active is not None:   # new widths while the calls come
            await pilot.pause(0.3)
            wide = not wide
            await pilot.resize_terminal(81 if wide else 80, 24)
        await pilot.pause()
    middle = [f for f in frames if 1 < f[0] < 12001]
    assert len(middle) >= 3, frames   # frames drawn while calls came
    assert all(len(set(f)) == 1 for f in frames), [f for f in frames if len(set(f)) > 1]


# -- C5: the statistics keep their height through a run ---------------------------------------

async def test_the_statistics_keep_their_height_from_variant_to_variant(monkeypatch):
    from couplescope.frontends.tui.app import CoupleScopeApp
    from couplescope.frontends.tui.views.watch import WatchView
    from test_tui_replay import until

    heights = []   # (the variant shown, the statistics' height) at each redraw

    def redrawing(original):
        def redraw(self, *args, **kwargs):
            original(self, *args, **kwargs)
            if self.query("#stats") and self._shown:
                stats = self.query_one("#stats")
                lines = str(stats.content).count("\n") + 1   # (pre-wrapped: whole_numbers)
                if stats.size.height == lines:   # laid out with what it shows (its layout can lag
                    heights.append((self._shown, stats.size.height))   # a redraw behind)
        return redraw

    fast_redraws(monkeypatch)
    monkeypatch.setattr(WatchView, "redraw", redrawing(WatchView.redraw))
    # the walk's `bridge` (status and counts on one line at 80 columns) and
    # `bridge-python-host` (the counts on a second line); 10 000 calls: `n=10 000 timed  noisy`
    recording = flood(10000, chunk=20, names=("bridge", "bridge-python-host-direct"))
    app = CoupleScopeApp(load_catalogue=False, recording=recording)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("r")
        await until(pilot, lambda: app.runs and app.active is None, "the run ended")
        await pilot.pause()
    shown = {name for name, _ in heights}
    assert shown == {"bridge", "bridge-python-host-direct"}, heights
    assert len({height for _, height in heights}) == 1, heights


# -- S11: the iterations table says which rows it does not list ------------------------------

async def test_the_iterations_table_says_which_calls_it_leaves_out():
    from couplescope.frontends.tui.app import CoupleScopeApp
    from couplescope.frontends.tui.iterations_table import IterationsTable
    from test_tui_replay import run_replay

    # the walk's sweep variant: 204 calls (1 warm-up, 200 timed, 3 profiled)
    app = CoupleScopeApp(load_catalogue=False, recording=made_up(spec(name="sweep-4", iterations=200,
                                                                      profile_iterations=3)))
    async with app.run_test(size=(80, 24)) as pilot:
        await run_replay(pilot)
        view = app.main.query_one("#watch")
        view._shown = None   # shown again with all its calls at once, as a run in rounds switches to it
        view.redraw(force=True)
        await pilot.pause()
        table = view.query_one(IterationsTable)
        lines = [line.text.rstrip() for line in table.lines]
        assert lines[0] == " … calls 1–4 not listed" and lines[1].split()[:2] == ["5", "timed"], lines[:3]
        assert lines[-1].split()[:2] == ["204", "prof"], lines[-1]
        assert len(lines[0]) < table.content_size.width, (lines[0], table.content_size)   # whole
