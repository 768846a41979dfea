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
