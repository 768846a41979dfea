"""Pictures of saved runs: `couplescope --plot RUN ... --output FILE` and --export's summary.png.

One figure, read top to bottom: when a run holds a sweep, median against size per
series (one run's variant, as the app's compare draws it) with its 25-75th percentile band; the distribution of every variant's timed calls
(box plots); then each variant's calls in order with the phases stacked. The title says
what all variants share (model, backend, host, device, threads, torch version) and each
label what sets a variant apart (couplescope.results.labels).

matplotlib is imported here only inside functions, so importing this module (as the
exporters do) costs nothing until a picture is drawn, and `--help` never loads it. The
figure is drawn with matplotlib's object API and the Agg renderer: no pyplot, no
display, no global state shared with a caller's own plots.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from couplescope.export import plot_panels
from couplescope.protocol.errors import UsageError, WriteError
from couplescope.results import labels, paired, saved, sweeps

SUMMARY_FILE = "summary.png"
FORMATS = ("png", "svg")
#: more variants than this and the per-call panels stop (the title says so)
MAX_SERIES_PANELS = 24
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
          "tab:olive", "tab:cyan", "tab:gray")
WIDTH_INCHES = 12.0
DPI = 100
PNG_COLORS = 128


@dataclass
class Entry:
    """One variant of one run, with what the panels need."""

    label: str
    variant: dict
    environment: dict
    steps: list[dict]
    first_warmup: float | None
    color: str = "tab:blue"
    run: str = ""

    @property
    def times(self) -> list[float]:
        return [s["seconds"] for s in self.steps]


def _run_labels(documents: list[dict]) -> list[str]:
    titles = [d.get("title") or "run" for d in documents]
    if len(set(titles)) == len(titles):
        return titles
    return [os.path.basename(os.path.normpath(d.get("source") or f"run{i}")) or f"run{i}"
            for i, d in enumerate(documents, 1)]


def entries(documents: list[dict]) -> list[Entry]:
    """Every variant with timed calls, in run order then the run's own order."""
    out = []
    run_labels = _run_labels(documents)
    for run_label, doc in zip(run_labels, documents):
        for v in doc["variants"]:
            steps = saved.timed_steps(v)
            if not steps:
                continue
            warm = [it["seconds"] for it in saved.iteration_records(v) if it["kind"] == "warmup"]
            label = v["name"] if len(documents) == 1 else f"{run_label}: {v['name']}"
            out.append(Entry(label, v, doc.get("environment") or {}, steps, warm[0] if warm else None,
                             run=run_label))
    _, distinct = labels.split_common([labels.describe(e.variant, e.environment) for e in out])
    for e, own in zip(out, distinct):
        e.label = _with_what_sets_it_apart(e.label, e.variant, own)
    return out


def _with_what_sets_it_apart(name: str, variant: dict, own: dict[str, str]) -> str:
    """A variant's name as the tables show it ("bridge-python"), and after it what sets it
    apart from the others (host, threads, torch ...) when the name does not say so:
    "direct-torchscript · python host". The backend is left to the name when the name
    mentions it: "bridge-python · bridge (eager)" said one thing twice, in two words."""
    backend = str((variant.get("spec") or {}).get("backend", ""))
    if backend and backend.lower() in name.lower():
        own = {k: v for k, v in own.items() if k != "backend"}
    extra = labels.text(own, skip=("model", "size"))
    words = [w.strip("()") for w in extra.replace(",", " ").split()]
    if not extra or all(w.lower() in name.lower() for w in words):
        return name
    return f"{name} · {extra}"


def _series(items: list[Entry]) -> list[list[int]]:
    """The sweeps among the variants: a series is one run's variant at several sizes (as
    the app's compare draws them); runs are never joined."""
    return sweeps.series([e.variant for e in items], [e.environment for e in items], [e.run for e in items])


def _sweep_lines(items: list[Entry], groups: list[list[int]]) -> list[dict]:
    """One line per series, named as its variants are (less the size), after its run when
    the plot holds several runs; series of one name in one run say what else sets them apart."""
    firsts = [labels.describe(items[g[0]].variant, items[g[0]].environment) for g in groups]
    _, distinct = labels.split_common(firsts)
    several_runs = len({e.run for e in items}) > 1
    names = [sweeps.series_name([items[i].variant for i in group]) for group in groups]
    names = [f"{items[g[0]].run}: {n}" if several_runs else n for g, n in zip(groups, names)]
    lines = []
    for group, name, own in zip(groups, names, distinct):
        if names.count(name) > 1 and labels.text(own, skip=("size",)):
            name = f"{name} · {labels.text(own, skip=('size',))}"
        bands = [sweeps.band(items[i].times) for i in group]
        lines.append({"label": name, "color": items[group[0]].color,
                      "sizes": [labels.size_of(items[i].variant) for i in group],
                      "low": [b[0] for b in bands], "median": [b[1] for b in bands], "high": [b[2] for b in bands]})
    return lines


def _color(items: list[Entry], groups: list[list[int]]) -> None:
    """A series shares one colour (its boxes match its sweep line); other variants get their own."""
    grouped = {i: g for g, members in enumerate(groups) for i in members}
    spare = len(groups)
    for i, item in enumerate(items):
        if i in grouped:
            item.color = COLORS[grouped[i] % len(COLORS)]
        else:
            item.color = COLORS[spare % len(COLORS)]
            spare += 1


def _title(documents: list[dict], items: list[Entry]) -> tuple[str, str]:
    """(what every variant shares, where and when it ran)."""
    common, _ = labels.split_common([labels.describe(e.variant, e.environment) for e in items])
    runs = ", ".join(_run_labels(documents))
    head = f"{runs}: {labels.text(common)}" if common else runs
    envs = [d.get("environment") or {} for d in documents]
    env = envs[0]
    where = [env.get("cpu_model"), f"{env['cores']} cores" if env.get("cores") else None, env.get("hostname")]
    dates = sorted({(e.get("start_time") or "")[:10] for e in envs} - {""})
    return head, ", ".join(w for w in where if w) + (f"; {', '.join(dates)}" if dates else "")


def figure(documents: list[dict]):
    """The summary figure of one or more results documents (a matplotlib Figure)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    items = entries(documents)
    if not items:
        raise UsageError("nothing to plot: no variant in "
                         f"{', '.join(str(d.get('source') or d.get('title')) for d in documents)} has timed iterations")
    variants = [e.variant for e in items]
    unit = _unit(variants)
    groups = _series(items)
    _color(items, groups)
    series_items = items[:MAX_SERIES_PANELS]
    columns = 1 if len(series_items) == 1 else 2 if len(series_items) in (2, 4) else 3
    series_rows = -(-len(series_items) // columns)
    width = _title_width(columns)
    title_lines = max(len(plot_panels.wrapped(e.label, width)) for e in series_items)
    trained = _loss_lines(items)
    paired, baseline = _round_lines(documents, items)
    top = ([3.4] if groups else []) + [max(1.9, 0.34 * len(items) + 1.2)] + ([3.0] if trained else []) \
        + ([2.8] if paired else [])
    bottom = [0.3] + [2.0 + 0.15 * (title_lines - 1)] * series_rows
    fig = Figure(figsize=(WIDTH_INCHES, sum(top) + sum(bottom) + 0.9), dpi=DPI, layout="constrained")
    # two subfigures: the calls panels take the whole width, not what the long variant
    # labels left of the boxes leave over
    upper, lower = fig.subfigures(2, 1, height_ratios=[sum(top), sum(bottom)])
    grid = upper.add_gridspec(len(top), 1, height_ratios=top)
    row = 0
    if groups:
        models = {labels.describe(v)["model"] for v in variants}
        plot_panels.sweep(upper.add_subplot(grid[row, 0]), _sweep_lines(items, groups),
                          f"{next(iter(models))} size" if len(models) == 1 else "size", unit)
        row += 1
    plot_panels.distributions(upper.add_subplot(grid[row, 0]), [e.label for e in items], [e.times for e in items],
                              [e.color for e in items], unit)
    if trained:
        row += 1
        plot_panels.losses(upper.add_subplot(grid[row, 0]), trained)
    if paired:
        row += 1
        plot_panels.round_ratios(upper.add_subplot(grid[row, 0]), paired, baseline)
    grid = lower.add_gridspec(len(bottom), columns, height_ratios=bottom)
    legend_ax = lower.add_subplot(grid[0, :])
    legend_ax.axis("off")
    drawn: list[str] = []
    for k, e in enumerate(series_items):
        ax = lower.add_subplot(grid[1 + k // columns, k % columns])
        lowest = k + columns >= len(series_items)   # nothing under it in its column
        drawn += [p for p in plot_panels.series(ax, e.label, e.steps, e.first_warmup, xlabel=lowest,
                                                title_width=width, unit=unit) if p not in drawn]
    handles = [Patch(color=plot_panels.PHASE_COLORS[p], label=p) for p in drawn]
    note = (f"timed {unit}s in order (the first warm-up {unit}'s time in each title), phases stacked "
            f"(other: {unit} time outside any phase), dashed: median"
            + (f"; first {MAX_SERIES_PANELS} of {len(items)} variants" if len(items) > MAX_SERIES_PANELS else ""))
    legend_ax.legend(handles=handles, loc="center", ncol=len(handles) + 1, fontsize=8, frameon=False,
                     title=note, title_fontsize=8)
    head, where = _title(documents, items)
    fig.suptitle(f"{head}\n{where}", fontsize=11)
    return fig


def _unit(variants: list[dict]) -> str:
    """What the variants make, in the figure's words: "step" when every one trains (it
    said "time per call" and "timed calls in order" of a training run), "call" when none
    does, "iteration" for a --plot of both."""
    tasks = {(v.get("spec") or {}).get("task") or "infer" for v in variants}
    return "step" if tasks == {"train"} else "call" if "train" not in tasks else "iteration"


def _round_lines(documents: list[dict], items: list[Entry]) -> tuple[list[dict], str]:
    """A run in rounds (one document): each variant's per-round ratio to the baseline, for
    the rounds panel; empty otherwise (several runs: their rounds are not the same rounds)."""
    if len(documents) != 1 or not documents[0].get("rounds"):
        return [], ""
    colors = {e.variant["name"]: e for e in items}
    lines, bases = [], []
    for row in documents[0].get("comparison") or []:
        per_round = row.get("ratio_per_round")
        if row.get("baseline") and row["baseline"] not in bases:
            bases.append(row["baseline"])
        if not per_round or row["name"] not in colors:
            continue
        rounds = sorted(int(r) for r in per_round)
        e = colors[row["name"]]
        lines.append({"label": e.label, "color": e.color, "rounds": rounds,
                      "ratios": [per_round[str(r)] for r in rounds], "ratio": row.get("ratio"),
                      "low": row.get("ratio_low"), "high": row.get("ratio_high"),
                      "range_only": paired.range_only(row)})
    # a sweep in rounds pairs each size with its own baseline
    return lines, (bases[0] if len(bases) == 1 else "the baseline at each size" if bases else "")


def _loss_lines(items: list[Entry]) -> list[dict]:
    """The training variants' losses, step by step (warm-up steps, then timed ones; one rank's
    under MPI), for the loss panel; empty when nothing trained."""
    lines = []
    for e in items:
        measured = [it for it in saved.iteration_records(e.variant)
                    if it.get("loss") is not None and it.get("kind") in ("warmup", "timed")
                    and it.get("rank") in (None, 0)]
        if not measured:
            continue
        values = [float(it["loss"]) for it in measured]
        lines.append({"label": e.label, "color": e.color, "steps": list(range(1, len(values) + 1)),
                      "losses": values})
    return lines


def _title_width(columns: int) -> int:
    """Characters of a calls panel's title (8 points, about 5.5 points a character) that
    fit over its panel, `columns` panels to a row."""
    return max(20, int(WIDTH_INCHES * 72 / columns / 5.5) - 4)


def output_format(path: str) -> str:
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise UsageError(f"cannot tell the picture format of '{path}': name it .png or .svg")
    return ext


def write(documents: list[dict], path: str) -> str:
    """Draw and save atomically (a half-written picture never appears); return the path."""
    fmt = output_format(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: the folder {folder} does not exist")
    fig = figure(documents)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    try:
        if fmt == "png":
            _save_png(fig, tmp)
        else:
            fig.savefig(tmp, format=fmt, dpi=DPI, metadata={"Date": None})
        os.replace(tmp, path)
    except OSError as exc:   # a full disk, no permission: not bad input (exit 3, not 2)
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _save_png(fig, path: str) -> None:
    """A PNG of at most PNG_COLORS colours: the flat fills and text of these figures lose
    nothing visible, and the file is a third of the size (a 12-variant sweep: 90 KB, not
    300 KB), which matters for pictures kept beside every run and committed in docs.
    The palette is chosen by maximum coverage: median cut gave a small box's colour to
    a larger area's (a blue box came out teal, 48 levels off); maximum coverage keeps
    every pixel within about 17 levels, in a file a little smaller still. Pillow comes
    with matplotlib. No date is written: the same run draws the same bytes."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=PNG_COLORS, method=Image.Quantize.MAXCOVERAGE,
                                      dither=Image.Dither.NONE).save(path, format="PNG", optimize=True)


def write_summary(run_dir: str, document: dict) -> str:
    """summary.png in a run directory, from its results document."""
    return write([{**document, "source": run_dir}], os.path.join(run_dir, SUMMARY_FILE))
