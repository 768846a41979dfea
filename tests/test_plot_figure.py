"""What the summary figure draws, asserted on the drawn matplotlib figure (axis limits,
labels, legend texts, where the text boxes land once rendered), not on pixels. Inputs
are recorded real runs (tests/fixtures, replayed into results documents)."""

from __future__ import annotations

import copy
import functools
import io

import pytest
from matplotlib.transforms import Bbox

from couplescope.export import plot_panels, plots
from couplescope.results import labels, sweeps
from test_plots_compare import document


def drawn(documents):
    """The figure, rendered once by Agg so that text boxes have their real extents."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = plots.figure(documents)
    FigureCanvasAgg(fig).draw()
    return fig


@functools.lru_cache(maxsize=None)
def drawn_run(name: str):
    """One recording's figure, drawn once for every test that only reads it."""
    return drawn([document(name)])


def distribution_axes(fig):
    return next(ax for ax in fig.axes if ax.get_title().startswith("distribution per variant"))


def median_labels(ax) -> list:
    """The median column right of the boxes: the tick labels of the axes' right-hand axis
    (texts written among the boxes, as they once were, are found too)."""
    texts = [t for column in ax.child_axes for t in column.get_yticklabels()] + list(ax.texts)
    return [t for t in texts if t.get_text()]


def as_preset(doc: dict, names: dict[str, str]) -> dict:
    """The same run with its variants named as a preset names them (stride512,
    deep-linear-sweep: "bridge-python", a sweep's size appended)."""
    out = copy.deepcopy(doc)
    for v in out["variants"]:
        for old, new in names.items():
            if v["name"].startswith(old):
                v["name"] = new + v["name"][len(old):]
                v["spec"]["name"] = v["name"]
    return out


PRESET_NAMES = {"deep-linear-torchscript": "direct-torchscript", "deep-linear-bridge-eager": "bridge-python"}


def slowest_shown(times: list[float]) -> float:
    return plot_panels.shown_high(times)


@pytest.mark.parametrize("name", ["two-backends", "sweep", "compiled"])   # fliers ran over these
def test_no_whisker_cap_flier_or_box_runs_over_a_median_label(name):
    fig = drawn_run(name)
    ax = distribution_axes(fig)
    renderer = fig.canvas.get_renderer()
    area = ax.get_window_extent(renderer)
    marks = []   # caps, whiskers, medians, each flier, the edge arrows, the boxes: as drawn
    for artist in list(ax.lines) + list(ax.patches):
        boxes = [artist.get_window_extent(renderer)]
        if getattr(artist, "get_linestyle", lambda: "-")() in ("None", "none", ""):   # dots: one box each
            pad = artist.get_markersize() / 72 * fig.dpi / 2
            points = artist.get_transform().transform(artist.get_xydata())
            boxes = [Bbox([[x - pad, y - pad], [x + pad, y + pad]]) for x, y in points]
        for box in boxes:
            if artist.get_clip_on():   # what lies outside the axes is not drawn
                box = Bbox.intersection(box, area)
            if box is not None:
                marks.append(box)
    labels = median_labels(ax)
    assert len(labels) == len(ax.get_yticklabels())   # one per box
    for text in labels:
        extent = text.get_window_extent(renderer)
        hits = [m for m in marks if m.overlaps(extent)]
        assert hits == [], (text.get_text(), hits)
        assert extent.x0 >= area.x1                     # right of the axes, not among the boxes


def test_each_median_label_is_on_its_own_box_s_row_and_says_the_median_and_n():
    fig = drawn_run("two-backends")
    ax = distribution_axes(fig)
    labels = median_labels(ax)
    assert [t.get_text() for t in labels] == ["134.5 µs  (n=12, 1 off the axis)", "113.9 µs  (n=12)"]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows == ["simplenet-torchscript", "simplenet-bridge-eager"]
    renderer = fig.canvas.get_renderer()
    for row, label in zip(ax.get_yticklabels(), labels):
        a, b = row.get_window_extent(renderer), label.get_window_extent(renderer)
        assert abs((a.y0 + a.y1) / 2 - (b.y0 + b.y1) / 2) < 1.0


@pytest.mark.parametrize("name", ["two-backends", "sweep", "layout-c"])   # linear, log, one variant
def test_the_distribution_axis_ends_where_the_calls_shown_end(name):
    """The axis stops at the slowest call it shows (with a few per cent to spare): it used
    to run to 4x that on a log axis (80 ms for calls that stopped near 20 ms), room for
    labels that now stand outside."""
    doc = document(name)
    items = plots.entries([doc])
    ax = distribution_axes(drawn_run(name))
    left, right = ax.get_xlim()
    high = max(slowest_shown(e.times) for e in items)
    low = min(min(e.times) for e in items)
    assert high <= right
    assert low >= left
    if ax.get_xscale() == "log":
        assert right / high <= 1.1 and low / left <= 1.1
    else:
        assert right - high <= 0.05 * (high - low) + 1e-12


def test_calls_past_the_axis_are_counted_and_marked_at_its_edge():
    doc = document("sweep")   # deep-linear-torchscript-8: median 25 µs, one call of 2.3 ms
    items = plots.entries([doc])
    ax = distribution_axes(drawn_run("sweep"))
    right = ax.get_xlim()[1]
    beyond = [sum(1 for t in e.times if t > right) for e in items]
    assert beyond[0] >= 1
    texts = [t.get_text() for t in median_labels(ax)]
    for count, text in zip(beyond, texts):
        assert (f"{count} off the axis" in text) == (count > 0), text
    arrows = [line for line in ax.lines if line.get_marker() == ">"]
    assert len(arrows) == sum(1 for b in beyond if b)
    rows = dict(zip(range(len(items), 0, -1), beyond))
    assert all(rows[int(line.get_ydata()[0])] for line in arrows)


def test_rows_and_the_sweep_legend_use_the_names_the_tables_show():
    doc = as_preset(document("sweep"), PRESET_NAMES)
    fig = drawn([doc])
    rows = [t.get_text() for t in distribution_axes(fig).get_yticklabels()]
    assert rows == [v["name"] for v in doc["variants"]]   # no "· bridge (eager)" after "bridge-python"
    sweep_ax = next(ax for ax in fig.axes if "median per call vs size" in ax.get_title())
    legend = [t.get_text() for t in sweep_ax.get_legend().get_texts()]
    assert legend == ["direct-torchscript", "bridge-python"]
    titles = [ax.get_title() for ax in fig.axes]
    assert not any("bridge (eager)" in t for t in titles + rows + legend)


def test_a_name_that_does_not_say_what_sets_it_apart_gets_it_after_a_dot():
    doc = as_preset(document("two-backends"), {"simplenet-torchscript": "a", "simplenet-bridge-eager": "b"})
    rows = [e.label for e in plots.entries([doc])]
    assert rows == ["a · torchscript", "b · bridge (eager)"]
    compiled = [e.label for e in plots.entries([document("compiled")])]
    # the names say the coupling; the default (native) host is named where the other is
    assert compiled == ["simplenet-torchscript-2 · native host", "simplenet-torchscript-2-python-host",
                        "simplenet-aoti-2 · native host", "simplenet-aoti-2-python-host",
                        "simplenet-bridge-compiled-2 · native host", "simplenet-bridge-compiled-2-python-host"]


def test_series_names_drop_the_size_from_the_variants_names():
    def variant(name, size):
        return {"name": name, "spec": {"name": name, "size": size}, "model": {"size": size}}

    assert sweeps.series_name([variant("bridge-python-250", 250), variant("bridge-python-500", 500)]) \
        == "bridge-python"
    assert sweeps.series_name([variant("deep-linear-torchscript-8-python-host", 8),
                              variant("deep-linear-torchscript-16-python-host", 16)]) \
        == "deep-linear-torchscript-python-host"
    assert sweeps.series_name([variant("fast", 8), variant("slow", 16)]) == "fast, slow"


@pytest.mark.parametrize("name, panels", [("two-backends", 2), ("sweep", 6)])
def test_the_lowest_calls_panel_of_each_column_names_its_x_axis(name, panels):
    fig = drawn_run(name)
    calls = [ax for ax in fig.axes if "median " in ax.get_title() and "warm-up" in ax.get_title()]
    assert len(calls) == panels
    columns = {}
    for ax in calls:
        columns.setdefault(round(ax.get_position().x0, 3), []).append(ax)
    for column in columns.values():
        column.sort(key=lambda ax: ax.get_position().y0)
        assert column[0].get_xlabel() == "timed call"
        assert all(ax.get_xlabel() == "" for ax in column[1:])


def test_the_saved_png_keeps_every_colour_drawn():
    """128 colours, chosen so that no area changes colour (median cut turned a small blue
    box teal): every pixel within 20 levels of the unreduced drawing."""
    import numpy as np
    from PIL import Image

    fig = plots.figure([document("two-backends")])

    def render():
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=plots.DPI)
        buffer.seek(0)
        return np.asarray(Image.open(buffer).convert("RGB")).astype(int)

    # constrained layout moves things by a pixel or two over the first few draws:
    # compare with a drawing that has settled (the next draws the same)
    full, previous = render(), None
    for _ in range(4):
        if previous is not None and (full == previous).all():
            break
        full, previous = render(), full
    assert (full == previous).all()
    saved = io.BytesIO()
    plots._save_png(fig, saved)
    saved.seek(0)
    with Image.open(saved) as image:
        assert image.mode == "P" and len(image.getcolors()) <= plots.PNG_COLORS
        reduced = np.asarray(image.convert("RGB")).astype(int)
    assert reduced.shape == full.shape
    assert np.abs(full - reduced).max() <= 20


def test_two_runs_long_panel_titles_wrap_and_keep_apart():
    """Two runs of six variants each: "<run directory>: <variant> · <what sets it apart>"
    titles over three panels a row ran into each other."""
    runs = [{**document("compiled"), "source": f"/runs/20261124-07{k}000-simplenet"} for k in (1, 2)]
    fig = drawn(runs)
    renderer = fig.canvas.get_renderer()
    calls = [ax for ax in fig.axes if "warm-up" in ax.get_title()]
    assert len(calls) == 12
    titles = [ax.title.get_window_extent(renderer) for ax in calls]
    for i, a in enumerate(titles):
        assert not any(a.overlaps(b) for b in titles[i + 1:]), calls[i].get_title()
        assert a.x0 >= 0 and a.x1 <= fig.bbox.width
    assert calls[0].get_title().startswith("20261124-071000-simplenet:\nsimplenet-torchscript-2 · native host\n")
    # the calls panels take the figure's width, not what the boxes' long labels leave
    boxes = distribution_axes(fig).get_window_extent(renderer)
    assert min(ax.get_window_extent(renderer).x0 for ax in calls) < boxes.x0 - 100


@pytest.mark.parametrize("name", ["mpi", "two-backends"])
def test_each_call_is_a_whole_bar_at_its_own_number(name):
    """Calls are counted: ticks at whole numbers (6 calls had ticks at 1.5, 2.5 ...), and
    call k's bar runs from k - 0.5 to k + 0.5, the first and the last whole too (they
    were half bars)."""
    fig = drawn_run(name)
    for ax in [ax for ax in fig.axes if "warm-up" in ax.get_title()]:
        low, high = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if low <= t <= high]
        assert ticks and all(float(t).is_integer() for t in ticks)
        n = round(high - 0.5)
        for layer in ax.collections:
            xs = layer.get_paths()[0].vertices[:, 0]
            assert xs.min() == pytest.approx(0.5) and xs.max() == pytest.approx(n + 0.5)


def test_two_runs_of_one_sweep_draw_a_line_each_named_by_its_run():
    """`--plot base new` of the same sweep: one line per run and series, one point per
    size (a single line went through both runs' points, two at every size)."""
    from test_plots_compare import slowed

    base = {**document("sweep"), "source": "/runs/base"}
    new = {**slowed(document("sweep"), "deep-linear-torchscript-16", 2.0), "source": "/runs/new"}
    fig = drawn([base, new])
    sweep_ax = next(ax for ax in fig.axes if "median per call vs size" in ax.get_title())
    lines = {line.get_label(): line for line in sweep_ax.get_lines()}
    assert sorted(lines) == ["base: deep-linear-bridge-eager", "base: deep-linear-torchscript",
                             "new: deep-linear-bridge-eager", "new: deep-linear-torchscript"]
    assert all(list(line.get_xdata()) == [8, 16, 32] for line in lines.values())
    slow, fast = lines["new: deep-linear-torchscript"].get_ydata(), lines["base: deep-linear-torchscript"].get_ydata()
    assert slow[1] == pytest.approx(2 * fast[1]) and slow[0] == pytest.approx(fast[0])
    legend = [t.get_text() for t in sweep_ax.get_legend().get_texts()]
    assert sorted(legend) == sorted(lines)


def test_a_training_run_gets_a_loss_panel_on_a_log_axis():
    doc = copy.deepcopy(document("two-backends"))
    for v in doc["variants"]:
        k = 0
        for block in v["iterations"]:   # (results/call_columns.py's blocks)
            block["loss"] = [0.5 ** (k + i) for i in range(len(block["ns"]))]
            k += len(block["ns"])
        timed = [block for block in v["iterations"] if block["kind"] == "timed"]
        timed[-1]["loss"][-1] = "nan"   # a step whose loss was not finite ends the line
    fig = plots.figure([doc])
    ax = next(ax for ax in fig.axes if ax.get_title().startswith("loss per training step"))
    assert ax.get_yscale() == "log"
    lines = [line for line in ax.get_lines() if line.get_label() in [v["name"] for v in doc["variants"]]]
    assert len(lines) == 2 and all(min(line.get_ydata()) > 0 for line in lines)
    assert any(line.get_marker() == "x" for line in ax.get_lines())
    untrained = plots.figure([document("two-backends")])
    assert not any(a.get_title().startswith("loss per training step") for a in untrained.axes)


def test_runs_at_other_sizes_are_not_joined_into_one_sweep_line():
    """A series is one run's variant, as the app's compare draws it: a run at sizes 8 and 16
    and another at 32 are two runs, not one sweep (a line through 8, 16, 32 joined them);
    the lines are named with their run."""
    whole = document("sweep")

    def part(source, sizes):
        keep = [v for v in whole["variants"] if labels.size_of(v) in sizes]
        return {**whole, "variants": keep, "source": source}

    small, large = part("/runs/small", (8, 16)), part("/runs/large", (32,))
    fig = drawn([small, large])
    sweep_ax = next(ax for ax in fig.axes if "median per call vs size" in ax.get_title())
    lines = {line.get_label(): list(line.get_xdata()) for line in sweep_ax.get_lines()}
    assert lines == {"small: deep-linear-bridge-eager": [8, 16], "small: deep-linear-torchscript": [8, 16]}
