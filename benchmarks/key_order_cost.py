"""What the app's key-order check (tui/key_order.py) costs a key press.

Every key the app reads is first checked for a binding that moves the focus (tab,
escape out of a field ...): such a key acts at once and the keys after it wait for the
focus. The check has two steps: whether any node the key would reach binds it to a focus
move (`_may_move_focus`, every key), and, only then, Textual's `Screen.active_bindings`
(the binding that would act, with each node's check_action). This times both, in one
run, interleaved, with the focus in the form's iterations field (the Pick view at
80x24, no catalogue read), for a digit, a letter key of the app's, tab and escape;
it prints each one's median over the rounds, in microseconds. Then the checks every key
also meets since the app's own keys wait for the keys before them (`_binds`, for alt+letter;
`_acts_at_once`), and what the wait costs an app key: `s` (no run: it says why) read alone,
and read after a `5` typed in the field (it waits till the 5 has settled), from posting to
its answer on the top line, interleaved.

    python benchmarks/key_order_cost.py [--rounds 7] [--calls 500]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

KEYS = ("5", "r", "tab", "escape")


def per_call(function, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - start) / calls * 1e6


async def measure(rounds: int, calls: int) -> dict[str, list[float]]:
    from couplescope.frontends.tui.app import CoupleScopeApp

    app = CoupleScopeApp(load_catalogue=False)
    times: dict[str, list[float]] = {}
    async with app.run_test(size=(80, 24)) as pilot:
        app.main.query_one("#iterations").focus()
        await pilot.pause()
        for _ in range(rounds):
            for key in KEYS:
                times.setdefault(f"may move focus {key}", []).append(
                    per_call(lambda: app._may_move_focus(key), calls))
                times.setdefault(f"active_bindings {key}", []).append(
                    per_call(lambda: app.screen.active_bindings.get(key), calls))
                times.setdefault(f"acts at once {key}", []).append(
                    per_call(lambda: app._acts_at_once(key), calls))
                times.setdefault(f"binds alt+{key}", []).append(
                    per_call(lambda: app._binds(f"alt+{key}"), calls))
            for keys in (("s",), ("5", "s")):
                times.setdefault("answer to " + " ".join(keys), []).append(await answered(app, pilot, keys))
    return times


async def answered(app, pilot, keys) -> float:
    """Microseconds from posting `keys` (one read) to `s`'s answer on the top line."""
    from textual import events

    app.main.query_one("#iterations").value = ""
    app.set_status("")
    await pilot.pause()
    start = time.perf_counter()
    for key in keys:
        app.post_message(events.Key(key, key))
    while "no run is going" not in str(app.main.query_one("#status").render()):
        await asyncio.sleep(0)
    return (time.perf_counter() - start) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    for name, values in asyncio.run(measure(args.rounds, args.calls)).items():
        print(f"{name:24} {statistics.median(values):8.1f} us (median of {len(values)})")


if __name__ == "__main__":
    main()
