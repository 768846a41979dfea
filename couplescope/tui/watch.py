"""The watch view's widgets: time plot, iterations table, running statistics, telemetry.

Each widget is fed batches of events by the app and redraws itself at most a few times
a second; none of them touches the engine. Statistics come from couplescope.stats via
the run's ResultsBuilder; numbers are written through the app's `numbers`.
"""

from __future__ import annotations

import collections
import time

from rich.text import Text
from textual.widgets import DataTable, Static
from textual_plotext import PlotextPlot

from couplescope import stats

KIND_SHORT = {"warmup": "warm", "timed": "timed", "profiled": "prof"}
PHASE_COLORS = {"marshal_in": "cyan", "h2d": "magenta", "forward": "green", "d2h": "yellow",
                "marshal_out": "blue", "load": "red"}
MAX_TABLE_ROWS = 500
MAX_PLOT_POINTS = 600


def _unit(value: float) -> tuple[str, float]:
    if value >= 1.0:
        return "s", 1.0
    if value >= 1e-3:
        return "ms", 1e3
    return "µs", 1e6


def _thin(n: int, limit: int) -> range:
    """Indices of at most `limit` evenly spread points out of n (the last one always)."""
    step = max(1, -(-n // limit))
    return range((n - 1) % step, n, step)


class TimePlot(PlotextPlot):
    """Per-iteration time of the current variant; one line per phase, kinds told apart."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.points: list[tuple[int, str, float, dict]] = []   # (seq, kind, seconds, phases)
        self.variant = ""
        self._dirty = False
        self._last_draw = 0.0

    def reset(self, variant: str) -> None:
        self.points, self.variant = [], variant
        self._dirty = True
        self.draw(force=True)

    def add(self, evs: list[dict]) -> None:
        for ev in evs:
            self.points.append((len(self.points) + 1, ev["kind"], ev["seconds"], ev.get("phases") or {}))
        self._dirty = True

    def draw(self, force: bool = False) -> None:
        """Rebuild the plot if there is new data, at most 4 times a second unless forced."""
        now = time.monotonic()
        if not self._dirty or (not force and now - self._last_draw < 0.25):
            return
        self._dirty, self._last_draw = False, now
        redact = self.app.numbers.redact
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        pts = [self.points[i] for i in _thin(len(self.points), MAX_PLOT_POINTS)]
        timed = sorted(p[2] for p in self.points if p[1] == "timed") or sorted(p[2] for p in self.points)
        if not pts:
            plt.title(f"per-iteration time: waiting for {self.variant or 'a run'}")
            self.refresh()
            return
        unit, scale = _unit(stats.percentile(timed, 50))
        # a slow first (warm-up) call would flatten everything else: clip at 1.3x the 99th
        # percentile of the timed iterations (clipped points sit on the top edge)
        top = stats.percentile(timed, 99) * scale * 1.3

        def y(values):
            return [1.0] * len(values) if redact else [min(v * scale, top) for v in values]

        for kind, marker, color in (("warmup", "x", "orange"), ("timed", "braille", "white"),
                                    ("profiled", "x", "red")):
            sel = [p for p in pts if p[1] == kind]
            if sel:
                plt.plot([p[0] for p in sel], y([p[2] for p in sel]), marker=marker, color=color,
                         label=f"call ({kind})")
        names = []
        for p in pts:
            names += [k for k in p[3] if k not in names]
        for name in names:
            sel = [p for p in pts if name in p[3]]
            plt.plot([p[0] for p in sel], y([p[3][name] for p in sel]), marker="braille",
                     color=PHASE_COLORS.get(name, "gray"), label=name)
        if redact:
            plt.yticks([])
        plt.title(f"{self.variant}: time per iteration ({'redacted' if redact else unit})")
        plt.xlabel("iteration")
        self.refresh()


    def render(self):
        try:
            return super().render()
        except Exception as exc:  # plotext edge cases must never take the app down
            return Text(f"plot unavailable: {type(exc).__name__}: {exc}")


class IterationsTable(DataTable):
    """The last MAX_TABLE_ROWS iterations with PASSED/FAILED and the maximum relative error."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_column("#", key="index", width=6)
        self.add_column("kind", key="kind", width=5)
        self.add_column("time", key="time", width=8)
        self.add_column("max rel err", key="err", width=11)
        self.add_column("check", key="check", width=6)
        self._keys: collections.deque = collections.deque()
        self._serial = 0

    def _push(self, cells) -> None:
        self._serial += 1
        key = self.add_row(*cells, key=str(self._serial))
        self._keys.append(key)
        while len(self._keys) > MAX_TABLE_ROWS:
            self.remove_row(self._keys.popleft())

    def add_variant(self, name: str) -> None:
        self._push([Text("==", style="bold"), Text(name[:32], style="bold"), "", "", ""])

    def add_iterations(self, evs: list[dict]) -> None:
        numbers = self.app.numbers
        for ev in evs[-MAX_TABLE_ROWS:]:
            check = Text("PASSED", style="bold green") if ev["passed"] else Text("FAILED", style="bold red")
            self._push([str(ev["index"]), KIND_SHORT.get(ev["kind"], ev["kind"]),
                        numbers.seconds(ev["seconds"]), numbers.sci(ev["max_rel_error"]), check])
        if self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)

    def clear_rows(self) -> None:
        self.clear()
        self._keys.clear()


class StatsPanel(Static):
    """Running statistics of the timed iterations of the current variant."""

    def show(self, variant, expected: int | None) -> None:
        numbers = self.app.numbers
        if variant is None:
            self.update("no run yet: pick a model or preset and press r")
            return
        s = variant.stats()
        done = len(variant.iterations)
        failed = variant.failed_checks()
        checks = "[green]all PASSED[/]" if done and not failed else (
            f"[red]{failed} FAILED[/]" if failed else "no checks yet")
        status = {"running": "running", "finished": "finished", "failed": "[red]failed[/]",
                  "interrupted": "[yellow]stopped[/]"}.get(variant.status, variant.status)
        self.update(
            f"[b]{variant.name}[/] {status}  {done}/{expected or '?'} iterations  {checks}\n"
            f"median [b]{numbers.seconds(s['median'])}[/]  IQR {numbers.seconds(s['iqr'])}  "
            f"min {numbers.seconds(s['min'])}  max {numbers.seconds(s['max'])}  n={s['n']}"
            + ("  [yellow]noisy[/]" if s["noisy"] and not numbers.redact else ""))
