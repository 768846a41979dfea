"""Pure statistics and the event protocol's JSON form."""

import math

import numpy as np

from couplescope.protocol import events
from couplescope.results import stats


def test_summary_matches_numpy():
    values = [3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0]
    s = stats.summarize(values)
    a = np.array(values)
    assert s["n"] == 8
    assert s["min"] == 1.0 and s["max"] == 9.0
    assert math.isclose(s["median"], float(np.median(a)))
    assert math.isclose(s["mean"], float(a.mean()))
    assert math.isclose(s["stddev"], float(a.std(ddof=1)))
    assert math.isclose(s["iqr"], float(np.percentile(a, 75) - np.percentile(a, 25)))


def test_noise_flag_and_warnings():
    quiet = stats.summarize([1.0, 1.01, 0.99, 1.0, 1.02])
    assert not quiet["noisy"]
    loud = stats.summarize([1.0, 2.0, 0.5, 3.0, 1.5])
    assert loud["noisy"]
    text = " ".join(stats.warnings_for(loud, first_seconds=10.0))
    assert "noisy" in text and "first" in text


def test_empty_and_single():
    assert stats.summarize([])["n"] == 0
    one = stats.summarize([2.0])
    assert one["median"] == 2.0 and one["stddev"] == 0.0 and one["iqr"] == 0.0


def test_events_roundtrip_nan_and_inf():
    ev = events.make("iteration", variant="v", index=1, kind="timed", seconds=0.5, phases={},
                     max_rel_error=float("nan"), passed=False, error=None)
    back = events.parse(events.dumps(ev))
    assert back["event"] == "iteration" and math.isnan(back["max_rel_error"])
    ev["max_rel_error"] = float("inf")
    assert events.parse(events.dumps(ev))["max_rel_error"] == float("inf")


def test_parse_ignores_stray_lines():
    assert events.parse("hello from a model") is None
    assert events.parse('{"not": "an event"}') is None
    assert events.parse("{broken json") is None


def test_timed_calls_still_warming_up_suggest_more_warmup():
    timed = [1.0, 0.9, 0.1, 0.1, 0.11, 0.1, 0.1, 0.1]
    text = " ".join(stats.warnings_for(stats.summarize(timed), None, timed))
    assert "first 2 timed call(s)" in text and "--warmup 3" in text
    assert "TorchScript" not in text   # only said of a TorchScript model
    scripted = " ".join(stats.warnings_for(stats.summarize(timed), None, timed, torchscript=True))
    assert "(TorchScript optimises over its first calls)" in scripted
    steady = [0.1, 0.11, 0.1, 0.1, 0.1]
    assert not any("warming up" in w for w in stats.warnings_for(stats.summarize(steady), None, steady))
