"""A variant's calls kept in columns (couplescope.results.call_columns) lose nothing: every
recorded real run (tests/fixtures/*.jsonl: MPI ranks, training losses, rounds, failed
checks, compiled models, a worker that died, all written by workers that sent float
seconds) gives back, call by call, exactly the calls its events stand for; results.json's
text is the document's JSON; a saved document reads back to the same calls; a batch in
this version's form (nanoseconds, one shared check value) reads as the old form does."""

from __future__ import annotations

import glob
import json
import math
import os

import pytest

from couplescope.protocol import columns, events
from couplescope.results.builder import ResultsBuilder
from couplescope.results.call_columns import CallColumns
from couplescope.results.document_text import readable_json

FIXTURES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "fixtures", "*.jsonl")))
#: a float second written by an older worker comes back to within half a nanosecond
HALF_NS = 0.5e-9


def built(evs) -> ResultsBuilder:
    b = ResultsBuilder("t")
    for ev in evs:
        b.on_event(ev)
    return b


def same_call(record: dict, call: events.Event) -> bool:
    """A record (call_columns) and the `iteration` event a worker would have written for it."""
    def same(a, b):
        return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b
    return (record["index"] == call.index and record["kind"] == call.kind
            and abs(record["seconds"] - call.seconds) <= HALF_NS
            and record["phases"].keys() == call.phases.keys()
            and all(abs(record["phases"][n] - v) <= HALF_NS for n, v in call.phases.items())
            and all(same(record[k], call[k]) for k in columns.CHECKS)
            and record.get("rank") == call.rank and same(record.get("loss"), call.get("loss")))


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_a_recorded_runs_calls_come_back_call_by_call_and_its_text_is_its_json(path):
    evs = events.read_jsonl(path)
    b = built(evs)
    for name, v in b.variants.items():
        calls = [c for ev in evs if ev.variant == name for c in ev.calls]
        assert len(v.iterations) == len(calls) == v.calls.count
        assert all(same_call(r, c) for r, c in zip(v.iterations, calls)), name
        rounds = {r.get("round") for r in v.iterations if r["kind"] == "timed"}
        assert None not in rounds if b.rounds is not None else rounds <= {None}, rounds
    text = b.document_text()
    assert json.loads(text) == json.loads(json.dumps(events.json_clean(b.document()), default=str))
    saved = json.loads(text)
    for v, again in zip(b.in_order(), saved["variants"]):   # a saved document reads back the same calls
        back = CallColumns.of_document(again).records()
        assert len(back) == len(v.iterations) and all(
            same_call(r, events.Iteration({**c, "event": "iteration"})) for r, c in zip(back, v.iterations))


def _batch(first: int, n: int, **fields) -> events.Event:
    """A batch as this version's worker writes it: nanoseconds, one value for a check
    every call shares."""
    return events.make("iterations", "v", **{
        "kind": "timed", "first_index": first, "ns": list(range(1000, 1000 + n)),
        "phases_ns": {"forward": list(range(900, 900 + n))}, "max_rel_error": 0.0, "passed": True, "error": None,
        **fields})


def test_batches_that_go_on_join_one_block_and_a_check_that_differs_becomes_a_column():
    calls = CallColumns()
    calls.add(_batch(1, 3))
    calls.add(_batch(4, 2))
    assert len(calls.blocks) == 1 and calls.blocks[0]["passed"] is True and calls.blocks[0]["ns"][-1] == 1001
    calls.add(_batch(6, 2, max_rel_error=[0.0, math.nan], passed=[True, False], error=[None, 'the "y" is ünïcode']))
    (block,) = calls.blocks
    assert block["passed"] == [True] * 6 + [False] and block["error"][-1] == 'the "y" is ünïcode'
    assert calls.failed == 1 and calls.not_finite
    calls.add(_batch(8, 1), round_number=2)              # another round: a block of its own
    calls.add(_batch(20, 1))                             # not the next call: a block of its own
    assert [b.get("round") for b in calls.blocks] == [None, 2, None]
    assert [r["index"] for r in calls.records()] == [1, 2, 3, 4, 5, 6, 7, 8, 20]
    assert calls.records()[0]["seconds"] == 1000 / 1e9 and calls.records()[0]["phases"] == {"forward": 9e-07}
    text = readable_json({"variants": [{"name": "v", "iterations": calls.document()}]})
    assert '"max_rel_error": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, "nan"]' in text
    back = CallColumns.of_document(json.loads(text)["variants"][0])
    assert math.isnan(back.records()[6]["max_rel_error"]) and back.records()[6]["error"] == 'the "y" is ünïcode'
    assert [r["index"] for r in back.records()] == [1, 2, 3, 4, 5, 6, 7, 8, 20] and back.failed == 1


def test_this_versions_batch_reads_as_an_older_workers_does():
    """The event's readers (seconds, phases, the checks, calls) give float seconds and a
    value per call, whichever form the worker wrote; conforms asks for one of the two."""
    line = events.dumps(_batch(1, 2, loss=[0.5, math.inf]))
    ev = events.parse(line)
    assert ev.seconds == [1e-06, 1.001e-06] and ev.phases == {"forward": [9e-07, 9.01e-07]}
    assert ev.passed == [True, True] and ev.count == 2 and ev.last_index == 2
    assert [c.seconds for c in ev.calls] == ev.seconds and ev.calls[1].loss == math.inf
    old = events.parse(json.dumps({**{k: v for k, v in ev.items() if k not in ("ns", "phases_ns")},
                                   "seconds": ev.seconds, "phases": ev.phases, "passed": [True, True],
                                   "max_rel_error": [0.0, 0.0], "error": [None, None], "loss": [0.5, "inf"]}))
    assert [dict(c) for c in old.calls] == [dict(c) for c in ev.calls]
    assert events.conforms(ev) is None and events.conforms(old) is None
    assert "lacks one of ns, seconds" in events.conforms({k: v for k, v in ev.items() if k != "ns"})


def test_a_run_in_rounds_writes_results_json_as_its_document_says(tmp_path):
    """Through the real pipeline (synthetic workers): each round's timed calls a block."""
    from couplescope.core import pipeline, synthetic
    from couplescope.protocol.spec import RunSpec

    a = RunSpec(model="simplenet", backend="torchscript", host="python", iterations=12, name="a")
    outcome = pipeline.run(synthetic.request([a, a.replace(backend="bridge", name="b")], export=str(tmp_path),
                                             rounds=3), [], workers=synthetic.SyntheticWorkers())
    (written,) = glob.glob(str(tmp_path / "*" / "results.json"))
    with open(written, encoding="utf-8") as f:
        text = f.read()
    assert text == readable_json(outcome.builder.document()) + "\n"
    doc = json.loads(text)
    assert [b.get("round") for b in doc["variants"][0]["iterations"] if b["kind"] == "timed"] == [1, 2, 3]
