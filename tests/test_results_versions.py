"""Results written by an older couplescope still load, plot, compare and form series.

tests/fixtures/results-ad75b4d.json is the results.json of a real run made by main at
commit ad75b4d (`couplescope --model simplenet --backend torchscript,bridge --iterations
20 --rounds 2 --export DIR`), committed as it was written and never edited: every later
version is tested against it. A spec option added since then is read at its declared
default where an old document has no key (couplescope.results.sweeps.series_key), so
adding an option splits no series (a trial option, --input-seed, once split every saved
run from every new one). The same documents against a new real run:
tests/test_results_versions_e2e.py."""

from __future__ import annotations

import copy
import json
import os

import pytest

from couplescope.protocol import option, options
from couplescope.results import regression, saved, sweeps
from couplescope.results.builder import SCHEMA_VERSION
from couplescope.results.call_columns import CallColumns

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "results-ad75b4d.json")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def old() -> dict:
    return saved.load(FIXTURE)


@pytest.fixture
def new_option(monkeypatch):
    """An option this version does not have, declared as a later version would declare it
    (--input-seed: the inputs' own seed, default None: the weights' seed)."""
    added = option.Option("input_seed", int, None, "seed for the inputs alone", "how to measure", low=0,
                          metavar="N", default_text="--seed's")
    monkeypatch.setattr(options, "OPTIONS", options.OPTIONS + (added,))
    monkeypatch.setattr(options, "SPEC_OPTIONS", options.SPEC_OPTIONS + (added,))
    monkeypatch.setattr(sweeps, "SPEC_OPTIONS", options.SPEC_OPTIONS, raising=False)
    monkeypatch.setitem(options.BY_NAME, "input_seed", added)
    return added


def written_later(document: dict, size: int | None = None, **spec) -> dict:
    """The fixture's run as a later version writes it: every spec with the keys that
    version has (`spec`), the model at `size`, the calls in this version's blocks of
    columns (schema 2: results/call_columns.py)."""
    later = copy.deepcopy(document)
    later["schema"] = SCHEMA_VERSION
    for v in later["variants"]:
        v["spec"].update(spec)
        v["iterations"] = CallColumns.of_document(v).document()
        if size is not None:
            v["model"]["size"] = v["spec"]["size"] = size
    return later


def test_the_old_results_document_loads():
    doc = old()
    assert [v["name"] for v in doc["variants"]] == ["simplenet-torchscript", "simplenet-bridge-torchscript"]
    assert all(len(saved.timed_seconds(v)) == 20 for v in doc["variants"])
    assert doc["rounds"]["rounds"] == 2


def test_the_old_documents_calls_read_back_call_by_call_from_its_records_and_as_blocks():
    """Schema 1 listed a record per call; read as this version's blocks and back, each
    call is the same (its seconds to the nanosecond the blocks keep)."""
    doc = old()
    later = written_later(doc)
    for v, w in zip(doc["variants"], later["variants"]):
        listed = v["iterations"]
        assert len(w["iterations"]) < len(listed) == 1 + 20 + 3   # a block per kind and round
        for read in (saved.iteration_records(v), saved.iteration_records(w)):
            assert [(r["index"], r["kind"], r.get("round"), r["passed"]) for r in read] == \
                [(r["index"], r["kind"], r.get("round"), r["passed"]) for r in listed]
            assert all(abs(a["seconds"] - b["seconds"]) <= 0.5e-9 and a["phases"].keys() == b["phases"].keys()
                       for a, b in zip(read, listed))
        assert saved.timed_seconds(w) == pytest.approx(saved.timed_seconds(v), abs=0.5e-9)


def test_an_option_added_later_splits_no_series(new_option):
    """The old document has no input_seed; the new one has it at its default (None): the
    same series. The option's own value, when set, is still a different series."""
    doc = old()
    later = written_later(doc, size=2, input_seed=None)
    for a, b in zip(doc["variants"], later["variants"]):
        assert sweeps.series_key(a, doc["environment"]) == sweeps.series_key(b, later["environment"])
    both = doc["variants"] + later["variants"]
    envs = [doc["environment"]] * 2 + [later["environment"]] * 2
    assert sweeps.series(both, envs) == [[0, 2], [1, 3]]   # by key alone (a plot adds the run)
    seeded = written_later(doc, size=2, input_seed=7)
    assert sweeps.series(doc["variants"] + seeded["variants"], envs) == []


def test_an_option_declared_not_to_split_a_series_does_not(new_option, monkeypatch):
    """Whether an option splits a series is said on its declaration (Option.series), not in
    a list elsewhere."""
    quiet = option.Option("input_seed", int, None, "seed for the inputs alone", "how to measure", series=False)
    monkeypatch.setattr(sweeps, "SPEC_OPTIONS", options.SPEC_OPTIONS[:-1] + (quiet,))
    doc = old()
    seeded = written_later(doc, size=2, input_seed=7)
    assert sweeps.series_key(doc["variants"][0], doc["environment"]) == \
        sweeps.series_key(seeded["variants"][0], seeded["environment"])


def test_the_options_that_split_no_series_are_declared_so():
    """What only names a variant, is the sweep's axis or says how long to measure."""
    assert {o.name for o in options.SPEC_OPTIONS if not o.series} == {
        "name", "size", "warmup", "iterations", "seed", "profile_iterations", "profile_max_ops"}


def test_the_old_document_compares_with_a_later_one(new_option, tmp_path, cli):
    """--compare pairs the variants by name: a verdict for each, none "only in" one side."""
    later = tmp_path / "later.json"
    later.write_text(json.dumps(written_later(old(), input_seed=None)))
    r = cli("--compare", FIXTURE, later, "--json")
    assert r.returncode in (0, 5), r.stdout + r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)["variants"]}
    assert set(rows) == {"simplenet-torchscript", "simplenet-bridge-torchscript"}
    assert all(row["verdict"] not in (regression.ONLY_BASE, regression.ONLY_NEW, regression.EMPTY)
               for row in rows.values())


def test_the_old_document_plots_with_a_later_one(new_option, tmp_path, cli):
    """Both runs in one picture, every variant a box; the old run at size 1 and the later
    one at size 2 are two runs, not one sweep: a series is one run's variant, as the app's
    compare draws it (docs/plots.md)."""
    from couplescope.export import plots

    later_doc = written_later(old(), size=2, input_seed=None)
    later = tmp_path / "later.json"
    later.write_text(json.dumps(later_doc))
    picture = tmp_path / "both.png"
    r = cli("--plot", FIXTURE, later, "--output", picture)
    assert r.returncode == 0, r.stderr
    assert picture.read_bytes()[:8] == PNG_MAGIC
    items = plots.entries([old(), {**later_doc, "source": str(later)}])
    assert len(items) == 4 and plots._series(items) == []
