"""results.json's iterations written from the lines the builder made as the batches came
(couplescope.results.iteration_text) are exactly what json's encoder writes from the
document: every recorded real run (tests/fixtures/*.jsonl: MPI ranks, training losses,
rounds, failed checks, compiled models, a worker that died), and made-up batches with
what the template must not write itself (NaN, a missing phase, an error message with
quotes and non-ASCII, a percent sign in a phase's name)."""

from __future__ import annotations

import glob
import json
import math
import os

import pytest

from couplescope.protocol import events
from couplescope.results.builder import ResultsBuilder
from couplescope.results.iteration_text import readable_json

FIXTURES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "fixtures", "*.jsonl")))


def built(evs) -> tuple[ResultsBuilder, ResultsBuilder]:
    kept, plain = ResultsBuilder("t", keep_text=True), ResultsBuilder("t")
    for ev in evs:
        kept.on_event(ev)
        plain.on_event(ev)
    return kept, plain


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_a_recorded_runs_results_text_is_json_encoders(path):
    kept, plain = built(events.read_jsonl(path))
    text = kept.document_text()
    assert text == readable_json(plain.document())
    assert json.loads(text)["variants"] == json.loads(json.dumps(plain.document()["variants"], default=str))


def _batch(variant: str, first: int, **columns) -> events.Event:
    n = len(columns["seconds"])
    fields = {"kind": "timed", "first_index": first, "phases": {}, "max_rel_error": [0.0] * n,
              "passed": [True] * n, "error": [None] * n, **columns}
    return events.make("iterations", variant, **fields)


def test_what_the_template_leaves_to_the_encoder_is_written_as_the_encoder_writes_it():
    start = events.make("run_started", "v", spec={"model": "m", "task": "train"}, environment={})
    batches = [
        _batch("v", 1, seconds=[1e-05, 2.5e-05], phases={"forward": [9e-06, 2e-05], "odd%name": [1e-06, 5e-06]}),
        _batch("v", 3, seconds=[3e-05, 4e-05], phases={"forward": [2e-05, None]}),          # a phase missing
        _batch("v", 5, seconds=[5e-05], max_rel_error=[math.nan], passed=[False],
               error=['the "output" is wrong: ünïcode']),                                      # NaN, a message
        _batch("v", 6, seconds=[6e-05, 7e-05], max_rel_error=[math.inf, 0.5], passed=[False, True],
               error=["x", None]),
        _batch("v", 8, seconds=[8e-05], loss=[0.25]),                                          # a training step
        _batch("v", 9, seconds=[9e-05], loss=[math.inf], passed=[False], error=["diverged"]),   # and its end
    ]
    kept, plain = built([start, *batches])
    assert kept.document_text() == readable_json(plain.document())
    lines = kept.document_text().splitlines()
    assert any('"max_rel_error": "nan"' in line for line in lines)
    assert any('"odd%name": 1e-06' in line for line in lines)
    # outside the iterations too (the comparison's last loss): a string, as JSON has no infinity
    assert json.loads(kept.document_text())["comparison"][0]["last_loss"] == "inf"


def test_a_run_in_rounds_writes_results_json_from_the_lines_as_the_encoder_would(tmp_path):
    """Through the real pipeline (synthetic workers): each timed call tagged with its round."""
    from couplescope.core import pipeline, synthetic
    from couplescope.protocol.spec import RunSpec

    a = RunSpec(model="simplenet", backend="torchscript", host="python", iterations=12, name="a")
    outcome = pipeline.run(synthetic.request([a, a.replace(backend="bridge", name="b")], export=str(tmp_path),
                                             rounds=3), [], workers=synthetic.SyntheticWorkers())
    (written,) = glob.glob(str(tmp_path / "*" / "results.json"))
    with open(written, encoding="utf-8") as f:
        text = f.read()
    assert text == readable_json(outcome.builder.document()) + "\n"
    assert '"round": 3' in text
