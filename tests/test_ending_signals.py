"""A signal that ends a run is acted on even when the Ended its handler raised is lost.

Python runs a signal's handler wherever the main thread is. Raised in a finalizer or under
a library's bare `except:`, the Ended never reaches the session; a CI run lost a SIGTERM
that way and went on measuring. These tests send real signals to this process (inside
couplescope.core.ending's block, with its real handlers) and swallow the first Ended as
such a place would.
"""

from __future__ import annotations

import signal

import pytest

from couplescope.core import ending, pipeline, synthetic
from couplescope.protocol.listener import Listener
from couplescope.protocol.spec import RunSpec

SIMPLE = RunSpec(model="simplenet", warmup=1, iterations=6, profile_iterations=0)


def swallowed_sigterm() -> None:
    """SIGTERM to this process, its Ended lost as a bare `except:` loses it."""
    try:
        signal.raise_signal(signal.SIGTERM)
    except BaseException:   # noqa: BLE001  (what a careless library does)
        pass


class SwallowsAtTheFirstTimedCalls(Listener):
    def __init__(self) -> None:
        self.sent = False
        self.events_after = 0

    def on_event(self, ev):
        if self.sent:
            self.events_after += 1
        elif ev.event == "iterations" and ev.kind == "timed":
            self.sent = True
            swallowed_sigterm()


class SwallowsAtTheEndOfRoundOne(Listener):
    def round_done(self, builder, round_number):
        if round_number == 1:
            swallowed_sigterm()


def test_a_swallowed_sigterm_still_stops_the_run_at_its_next_event():
    listener = SwallowsAtTheFirstTimedCalls()
    with ending.signals_end_the_run():
        outcome = pipeline.run(synthetic.request([SIMPLE.replace(name="s"), SIMPLE.replace(name="never")]),
                               [listener], workers=synthetic.SyntheticWorkers())
    assert listener.sent
    assert outcome.exit_code == 143
    variants = outcome.builder.document()["variants"]
    assert [v["name"] for v in variants] == ["s"], "the second variant never starts"
    assert variants[0]["verdict"] == "stopped"


def test_a_swallowed_sigterm_between_rounds_ends_the_rounds_and_keeps_round_one():
    specs = [SIMPLE.replace(name="a", iterations=8), SIMPLE.replace(name="b", iterations=8)]
    with ending.signals_end_the_run():
        outcome = pipeline.run(synthetic.request(specs, rounds=4, order_seed=3), [SwallowsAtTheEndOfRoundOne()],
                               workers=synthetic.SyntheticWorkers())
    assert outcome.exit_code == 143
    for v in outcome.builder.document()["variants"]:
        assert v["verdict"] == "stopped"
        assert [r["round"] for r in v["rounds"]] == [1]


@pytest.fixture
def sigint_not_ignored():
    """A background job (CI, `nohup ... &`) starts with SIGINT ignored, and the block leaves
    an ignored signal ignored on purpose: here SIGINT has Python's own handler, then its own."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_later_signal_raises_until_the_first_is_taken_in_hand_then_is_ignored(sigint_not_ignored):
    with ending.signals_end_the_run():
        assert ending.pending() is None
        swallowed_sigterm()
        assert ending.pending() == signal.SIGTERM
        with pytest.raises(ending.Ended) as raised:
            signal.raise_signal(signal.SIGINT)
        assert raised.value.signum == signal.SIGTERM, "the run ends by the first signal"
        ending.acknowledge()
        assert ending.pending() is None
        signal.raise_signal(signal.SIGTERM)   # ignored: the run is being saved
        ending.raise_if_pending()
    assert ending.pending() is None, "nothing is left pending after the block"


def test_outside_the_block_nothing_is_pending():
    assert ending.pending() is None
    ending.raise_if_pending()
    ending.acknowledge()
