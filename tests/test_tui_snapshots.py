"""Screen snapshots of the real app (pytest-textual-snapshot).

The runs shown are recorded real runs played back (couplescope.core.replay), so every
number on screen is the recording's and a snapshot compares exactly: layout, labels,
figures, plots. The registries they render (backends, hosts, views) are pinned to the
entries they show, so adding one rewrites no SVG. Update with
`pytest tests/test_tui_snapshots.py --snapshot-update` after an intended change, and look
at the new SVGs (docs/architecture.md, "Adding things").
"""

from __future__ import annotations

import time

import pytest
from test_tui_replay import compare_shown, replay_app, run_replay, until


#: the registries' entries the snapshots show, pinned: a backend, host, view or option added
#: later (each its own module and registry line, or its declaration) leaves these screens
#: as they are; the entries themselves are the registries' own, so a change to one of these
#: shows. An entry meant to show: add it here, then update the snapshots
PINNED = {"backends": ("torchscript", "bridge", "aoti", "cudagraph", "mpi"),
          "hosts": ("native", "python", "ftorch", "forpy"),
          "views": ("pick", "watch", "telemetry", "history"),
          "options": ("model", "backend", "size", "host", "ftorch_dir", "forpy_source", "fc", "grad_mode", "bridge_model",
                      "device", "dtype", "layout", "input_shape", "name", "warmup", "iterations", "threads",
                      "seed", "reload_every_call", "memory_limit", "telemetry_hz", "rounds", "baseline",
                      "order_seed", "task", "optimizer", "lr", "loss", "train_call", "save_model",
                      "profile_iterations", "profile_max_ops", "export", "pinned", "ranks", "inner_backend",
                      "launcher", "launcher_args", "oversubscribe", "nodes")}


@pytest.fixture(autouse=True)
def _registries_the_snapshots_show(monkeypatch):
    """Backends, hosts, views and the form's options as the SVGs show them, whatever else is
    registered or declared."""
    from couplescope import backends
    from couplescope.backends import hosts
    from couplescope.frontends.tui import views
    from couplescope.protocol import options

    monkeypatch.setattr(backends, "REGISTRY", {n: backends.REGISTRY[n] for n in PINNED["backends"]})
    monkeypatch.setattr(hosts, "REGISTRY", {n: hosts.REGISTRY[n] for n in PINNED["hosts"]})
    monkeypatch.setattr(views, "REGISTRY", tuple(m for v in PINNED["views"] for m in views.REGISTRY
                                                 if m.rsplit(".", 1)[1] == v))
    shown = set(PINNED["options"])
    for name in ("OPTIONS", "SPEC_OPTIONS", "RUN_OPTIONS"):   # the declarations and their parts
        monkeypatch.setattr(options, name, tuple(o for o in getattr(options, name) if o.name in shown))


@pytest.fixture(autouse=True)
def _where_the_snapshots_were_taken(monkeypatch):
    """The form shows what can run on this machine (its backends' reasons, the variants'
    names, which resolve the host). The snapshots show a machine with a C++ compiler and
    mpi4py, where aoti, mpi and the native host run: that is pinned, so they compare the
    same on a machine without them (cudagraph's reason is this torch's own); and without
    Slurm (no --nodes field), wherever the tests run."""
    from couplescope import backends
    from couplescope.backends import native
    from couplescope.backends.mpi import slurm

    real = backends.unavailable
    monkeypatch.setattr(native, "unavailable", lambda: None)
    monkeypatch.setattr(backends, "unavailable",
                        lambda name, spec=None: None if name in ("aoti", "mpi") else real(name, spec))
    monkeypatch.setattr(slurm, "present", lambda: False)


async def wait_for(pilot, condition, timeout: float = 120.0) -> None:
    """Poll for a state; `timeout` only bounds a failure (which shows the screen)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out; the screen:\n" + on_screen(pilot.app)
        await pilot.pause(0.01)


async def settle(pilot) -> None:
    """The screen as it stays: no toast left, every view drawn now (they redraw on their
    own timers), and the app idle."""
    from textual.widgets._toast import Toast

    app = pilot.app
    app.clear_notifications()
    await wait_for(pilot, lambda: not app.screen.query(Toast))
    await pilot.wait_for_scheduled_animations()
    app.redraw_views(force=True)
    await pilot.pause()


def with_catalogue(name: str):
    app = replay_app(name)
    app.load_catalogue = True   # the form as a user sees it: default sizes, backend reasons
    return app


def on_screen(app) -> str:
    """The screen as the snapshot takes it, as plain text: the SVG's text runs, a line per row."""
    import html
    import re

    rows: dict[float, list[tuple[float, str]]] = {}
    for x, y, text in re.findall(r'<text class="[^"]*-r\d+"[^>]* x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>',
                                 app.export_screenshot()):
        rows.setdefault(float(y), []).append((float(x), html.unescape(text).replace("\xa0", " ")))
    return "\n".join("".join(t for _, t in sorted(runs)) for _, runs in sorted(rows.items()))


async def loaded(pilot) -> None:
    """The catalogue read and drawn: its size label is on screen (under load the form's
    layout came after the first pause, and a snapshot caught `size` for `size (batch)`)."""
    await wait_for(pilot, lambda: pilot.app.catalogue_ready)
    await wait_for(pilot, lambda: "size (" in on_screen(pilot.app))
    await settle(pilot)


async def after_a_run(pilot) -> None:
    await loaded(pilot)
    await run_replay(pilot)
    await settle(pilot)


def test_main_screen_before_a_run(snap_compare):
    assert snap_compare(with_catalogue("two-backends"), terminal_size=(120, 40), run_before=loaded)


def test_main_screen_before_a_run_small_terminal(snap_compare):
    assert snap_compare(with_catalogue("two-backends"), terminal_size=(80, 24), run_before=loaded)


def test_main_screen_after_a_run(snap_compare):
    assert snap_compare(with_catalogue("two-backends"), terminal_size=(120, 40), run_before=after_a_run)


def test_compare_view(snap_compare):
    from couplescope.frontends.tui.compare_screen import CompareScreen

    async def before(pilot):
        await after_a_run(pilot)
        await pilot.press("c")
        await until(pilot, lambda: compare_shown(pilot.app), "the compare screen")
        await pilot.pause()   # (laid out)
        await settle(pilot)

    assert snap_compare(with_catalogue("two-backends"), terminal_size=(120, 40), run_before=before)


def test_telemetry_view(snap_compare):
    async def before(pilot):
        await after_a_run(pilot)
        await pilot.press("t")
        await settle(pilot)

    assert snap_compare(with_catalogue("telemetry"), terminal_size=(120, 40), run_before=before)


def test_help_screen(snap_compare):
    assert snap_compare(with_catalogue("two-backends"), terminal_size=(80, 24), press=["question_mark"])
