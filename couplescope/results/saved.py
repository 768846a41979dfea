"""Saved runs read back: a run directory (or its results.json) as a results document.

`--plot` and `--compare` work from what a run left on disk, never from a live session,
so they can run anywhere later (a laptop, a CI job) without torch. A run can be named
by its directory or by a results document file, which is what `couplescope ... --json >
base.json` leaves. Errors are UsageErrors naming the path and what was wrong.
"""

from __future__ import annotations

import json
import os

from couplescope.protocol.errors import UsageError
from couplescope.results.builder import SCHEMA_VERSION, SCHEMAS_READ
from couplescope.results.call_columns import CallColumns

RESULTS_FILE = "results.json"


def results_path(path: str) -> str:
    """The results document a RUN argument names: DIR/results.json, or the file itself."""
    if os.path.isdir(path):
        inside = os.path.join(path, RESULTS_FILE)
        if not os.path.isfile(inside):
            runs = sorted(e for e in os.listdir(path) if os.path.isfile(os.path.join(path, e, RESULTS_FILE)))
            hint = f" (it holds runs: {', '.join(runs[:3])}{' ...' if len(runs) > 3 else ''}; name one)" if runs else ""
            raise UsageError(f"{path} is not a run directory: it has no {RESULTS_FILE}{hint}")
        return inside
    if not os.path.exists(path):
        raise UsageError(f"run not found: {path} (give a run directory or a results.json file)")
    return path


def load(path: str) -> dict:
    """The results document of a saved run, with `source` (the path given) added."""
    file = results_path(path)
    try:
        with open(file, encoding="utf-8") as f:
            document = json.load(f)
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{file} is not a results document (invalid JSON: {exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("variants"), list):
        raise UsageError(f"{file} is not a results document (no 'variants' list); "
                         "give a run directory made by --export or a file made by --json")
    if document.get("schema") not in SCHEMAS_READ:
        raise UsageError(f"{file} has results schema {document.get('schema')!r}; this couplescope reads "
                         f"schemas {', '.join(map(str, SCHEMAS_READ))} (it writes {SCHEMA_VERSION})")
    return {**document, "source": path}


def iteration_records(variant: dict) -> list[dict]:
    """A saved variant's calls, a record each (index, kind, seconds, phases, max_rel_error,
    passed, error, warmup, profiled, and round, rank, loss where they apply), whichever
    schema wrote them (couplescope.results.call_columns)."""
    return CallColumns.of_document(variant).records()


def timed_steps(variant: dict) -> list[dict]:
    """A saved variant's timed iteration records as its statistics saw them: one per step,
    under MPI the slowest rank's (couplescope.results.ranks)."""
    from couplescope.results.ranks import slowest_per_iteration

    return slowest_per_iteration([it for it in iteration_records(variant) if it["kind"] == "timed"])


def timed_seconds(variant: dict) -> list[float]:
    """A saved variant's timed steps' seconds (from its columns, but under MPI)."""
    calls = CallColumns.of_document(variant)
    if calls.ranked:
        return [it["seconds"] for it in timed_steps(variant)]
    return calls.seconds("timed").tolist()
