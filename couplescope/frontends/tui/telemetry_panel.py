"""The telemetry and diagnostics panels.

The sampler (couplescope.core.telemetry) sends events of type "telemetry" with a
"sample" dict whose schema its docstring gives. Any value may be the string "n/a" or
missing altogether; this panel writes "n/a" for those and never raises on an odd
sample: a panel that breaks the app over a missing field would be worse than one that
shows less.
"""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import RichLog, Static


def _num(value, suffix: str = "", fmt: str = "{:.0f}") -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "n/a"
    text = fmt.format(value)
    if text.startswith("-") and float(text) == 0:   # -0.2 rounds to "-0"
        text = text[1:]
    return text + suffix


def _bytes(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "n/a"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B"


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


#: the sample's "during timed iteration 5" in the words of what the variant makes (RunRecord.unit)
WORDS = {"call": "iteration", "step": "step"}


def describe(sample: dict, unit: str = "iteration") -> str:
    """The panel's text for one sample (schema: couplescope.core.telemetry.sampler's
    docstring); `unit`: what the sampled variant makes, "iteration" or a training "step"."""

    if not isinstance(sample, dict):
        return "telemetry: n/a"
    tree, system = _dict(sample.get("tree")), _dict(sample.get("system"))
    per_core = system.get("cpu_percent")
    per_core = [c for c in per_core if isinstance(c, (int, float))] if isinstance(per_core, list) else []
    # max(0, ...): a rounding below zero printed "-0%"
    busy = " ".join(f"{max(0.0, c):.0f}%" for c in per_core[:16]) + (" ..." if len(per_core) > 16 else "")
    lines = [f"cores {len(per_core) or 'n/a'}" + (f"  busy {busy}" if per_core else ""),
             f"system memory {_bytes(system.get('memory_used'))} of {_bytes(system.get('memory_total'))}"]
    lines.append(f"worker CPU {_num(tree.get('cpu_percent'), '%')}  "
                 f"memory {_bytes(tree.get('rss'))}  threads {_num(tree.get('threads'))}"
                 + (f"  processes {_num(tree.get('processes'))}" if _num(tree.get("processes")) not in ("n/a", "1")
                    else ""))
    gpus = sample.get("gpu")
    if not isinstance(gpus, list) or not gpus:
        lines.append("no GPU")
    for i, g in enumerate(gpus if isinstance(gpus, list) else []):
        g = _dict(g)
        lines.append(f"GPU {g.get('index', i)} util {_num(g.get('utilization'), '%')}  "
                     f"memory {_bytes(g.get('memory_used'))}/{_bytes(g.get('memory_total'))}  "
                     f"power {_num(g.get('power_w'), ' W')}  "
                     f"temp {_num(g.get('temperature_c'), ' °C')}")
    iteration = _dict(sample.get("iteration"))
    if iteration:
        lines.append(f"during {iteration.get('kind', '?')} {unit} {iteration.get('index', '?')}")
    return "\n".join(lines)


def describe_node(node: str, sample: dict) -> str:
    """One line per node of a multi-node job (its own sampler's sample): its ranks' CPU,
    memory and threads, its cores' load and its GPUs."""
    if not isinstance(sample, dict):
        return f"{node}: n/a"
    tree, system = _dict(sample.get("tree")), _dict(sample.get("system"))
    per_core = system.get("cpu_percent")
    per_core = [c for c in per_core if isinstance(c, (int, float))] if isinstance(per_core, list) else []
    busy = f"{sum(per_core) / len(per_core):.0f}%" if per_core else "n/a"
    load = system.get("load")
    ranks = sorted(p.get("rank") for p in sample.get("processes", [])
                   if isinstance(p, dict) and p.get("role") == "worker" and isinstance(p.get("rank"), int))
    gpus = sample.get("gpu")
    gpu = (" GPU " + " ".join(f"{_num(_dict(g).get('utilization'), '%')}" for g in gpus)
           if isinstance(gpus, list) and gpus else "")
    return (f"{node}: ranks {','.join(map(str, ranks)) or '-'}  CPU {_num(tree.get('cpu_percent'), '%')}  "
            f"memory {_bytes(tree.get('rss'))}  threads {_num(tree.get('threads'))}  "
            f"cores busy {busy}  load {_num(load[0], fmt='{:.2f}') if isinstance(load, list) and load else 'n/a'}"
            + gpu)


#: nodes the panel shows a line each (a job on more shows how many are left out)
NODE_LINES = 12


class TelemetryPanel(Static):
    """Cores, worker CPU and memory, threads, GPUs (or "no GPU"); n/a where missing. A job
    sampled on its nodes gets a line per node instead (sampled there, by the job).

    Between runs nothing is sampled: the panel says so above the last sample it had, so
    figures frozen at a run's end are not read as the machine's state now."""

    def on_mount(self) -> None:
        self._last: dict | None = None
        self._by_node: dict[str, dict] = {}
        self._unit = "iteration"
        self.update("telemetry: waiting for a run")

    def show(self, sample: dict, node: str | None = None, unit: str = "iteration") -> None:
        """`unit`: what the sampled variant makes, "iteration" or a training "step"."""
        self._unit = unit
        if node is None:
            self._last, self._by_node = sample, {}
        else:
            if self._last is not None:   # a new run, sampled on its nodes
                self._last, self._by_node = None, {}
            self._by_node[node] = sample
        self.update(self._text())

    def idle(self, run_name: str) -> None:
        """The run has ended: nothing is sampled until the next one."""
        if self._last is None and not self._by_node:
            self.update("telemetry: idle (no run is being sampled)")
        else:
            self.update(f"idle: no run is being sampled; the last sample of run {run_name}:\n"
                        + self._text())

    def _text(self) -> str:
        try:
            if self._by_node:
                names = list(self._by_node)
                lines = [f"sampled on each node ({len(names)}):"]
                lines += [describe_node(n, self._by_node[n]) for n in names[:NODE_LINES]]
                if len(names) > NODE_LINES:
                    lines.append(f"... and {len(names) - NODE_LINES} more nodes")
                return "\n".join(lines)
            return describe(self._last, self._unit)
        except Exception as exc:  # an odd sample must never break the app
            return f"telemetry: cannot show this sample ({type(exc).__name__})"


class DiagnosticsLog(RichLog):
    """Diagnostics (telemetry issue), failures and run notes, newest last.

    Anchored to its end: RichLog scrolls to a line as it is written, not when the log's
    height changes later (the telemetry panel above it grew from one line to five when the
    first sample came), which left the latest lines under the screen's edge. Scrolling up
    releases the anchor; back at the end, it follows again."""

    def on_mount(self) -> None:
        self.anchor()

    def note(self, text: str, level: str = "info") -> None:
        """A line, as text (brackets are the worker's words, `[training]`, not markup),
        wrapped with what a pair of brackets holds kept on one line (Whole)."""
        self.write(Whole(text, {"warning": "yellow", "error": "red"}.get(level, "")))


#: a word, or what a pair of brackets holds with what sticks to it (an array: [5. 1. 2.];)
WORD = re.compile(r"\S*\[[^\[\]]*\]\S*|\S+")


def wrap_whole(text: str, width: int) -> list[str]:
    """`text` in lines of `width`, broken between words only, an array's numbers never
    split between two lines ("input 1..5 gives [4.9997 0.9997 2.0003" / "3. 4.0003]"
    read as two arrays); a word longer than the width is broken at its spaces, then cut."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in WORD.findall(paragraph):
            if len(word) > width:
                pieces = [p for p in re.split(r"(?<=\S) +", word) if p] if " " in word else [word]
            else:
                pieces = [word]
            for piece in pieces:
                while len(piece) > width:   # one number wider than the log: cut, never lost
                    if line:
                        lines.append(line)
                    lines.append(piece[:width])
                    line, piece = "", piece[width:]
                if line and len(line) + 1 + len(piece) > width:
                    lines.append(line)
                    line = piece
                else:
                    line = f"{line} {piece}" if line else piece
        lines.append(line)
    return lines


class Whole:
    """A log line that wraps itself at the width it is drawn in (RichLog renders a line at
    its width when it knows it, later when the view is first shown), by wrap_whole."""

    def __init__(self, text: str, style: str = "") -> None:
        self.text, self.style = text, style

    def __rich_console__(self, console, options):
        yield Text("\n".join(wrap_whole(self.text, max(1, options.max_width))), style=self.style)

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        return Measurement(1, min(options.max_width, max(map(len, self.text.splitlines() or [""]))))
