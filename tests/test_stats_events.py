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
    # the hint adds to the warm-up already made (10 warm-up calls were told --warmup 3)
    after_ten = " ".join(stats.warnings_for(stats.summarize(timed), None, timed, warmup=10))
    assert "--warmup 12 or more" in after_ten


def test_the_channel_sends_each_rank_s_waiting_calls_as_one_event():
    """Rank 0 of an MPI job writes every rank's iteration events; what waits for the next
    flush goes out as one `iterations` event per rank (and run of consecutive calls), the
    samples after them, whatever ended the wait last; expand gives the calls back."""
    import io

    from couplescope.worker.channel import EventChannel

    def it(rank, index, kind="timed"):
        return events.make("iteration", "v", index=index, kind=kind, seconds=0.001 * (rank + 1),
                           phases={"forward": 0.0005}, max_rel_error=0.0, passed=rank != 2 or index != 2,
                           error=None, rank=rank)

    out = io.StringIO()
    channel = EventChannel(out)
    channel.FLUSH_SECONDS = 3600.0   # nothing leaves until an event that does not wait
    sent = []
    for index in (1, 2, 3):
        for rank in (0, 1, 2):
            sent.append(it(rank, index))
            channel(sent[-1])
        if index == 1:
            channel(events.make("telemetry", "v", sample={}, node="n1"))
    sent.append(it(0, 5))    # not the next call of rank 0: a run of its own
    channel(sent[-1])
    assert out.getvalue() == ""
    channel(events.make("log", "v", message="done"))
    written = [events.parse(line) for line in out.getvalue().splitlines()]
    assert [(e["event"], e.get("rank"), e.get("first_index", e.get("index"))) for e in written] == [
        ("iterations", 0, 1), ("iterations", 1, 1), ("iterations", 2, 1), ("iteration", 0, 5),
        ("telemetry", None, None), ("log", None, None)]
    calls = [one for e in written for one in events.expand(e) if one["event"] == "iteration"]
    key = lambda e: (e["rank"], e["index"])  # noqa: E731
    assert sorted(({k: e[k] for k in ("rank", "index", "seconds", "passed", "phases")} for e in calls), key=key) \
        == sorted(({k: e[k] for k in ("rank", "index", "seconds", "passed", "phases")} for e in sent), key=key)
    assert [events.conforms(e) for e in written] == [None] * len(written)
