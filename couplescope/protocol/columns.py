"""Calls in columns: how a batch of calls travels (the `iterations` event) and how
results.json keeps a variant's calls, and the rules the two share.

A microsecond model makes hundreds of thousands of calls, and for each the worker writes
its figures, the parent reads them and results.json holds them: any cost per value is
paid several times per call, beside a call of a few microseconds (docs/architecture.md,
"What the harness costs"). So:

- Times are whole nanoseconds (`ns`, and `phases_ns` per phase). The hosts' clocks count
  nanoseconds (C++ steady_clock, Python's perf_counter), so nothing measured is lost,
  and an integer's JSON text costs a sixth of a float's to write and a third to read
  (Python writes a float by searching its shortest exact digits). The seconds a
  consumer reads are `ns / 1e9`, the very double a native host's clock gave.
- A check column (`max_rel_error`, `passed`, `error`) may be one value standing for every
  call: the calls whose outputs are byte-identical to the ones judged share that one
  result (couplescope.backends.batch), and nearly every batch is such.

Older workers (and any worker that times in float seconds) write `seconds` and `phases`
in seconds and a value per call; both forms are read.
"""

from __future__ import annotations

#: the columns of a check's result, per call or one value for all
CHECKS = ("max_rel_error", "passed", "error")

_PER_SECOND = 1e9
_seconds_of = _PER_SECOND.__rtruediv__   # n -> n / 1e9 (map runs it without a Python frame)


def to_ns(seconds: list) -> list:
    """Float seconds in whole nanoseconds (None stays None: a phase a call did not have)."""
    return [None if s is None else round(s * _PER_SECOND) for s in seconds]


def to_seconds(ns: list) -> list:
    """Nanoseconds as float seconds (None stays None)."""
    try:
        return list(map(_seconds_of, ns))
    except TypeError:   # a None among them (a phase some calls did not have)
        return [None if n is None else n / _PER_SECOND for n in ns]


def per_call(value, count: int) -> list:
    """A check column as a value per call (one value standing for all of them, repeated)."""
    return value if isinstance(value, list) else [value] * count


def shared(column: list):
    """The column's one value when every call has the same (of one type: True is not 1),
    else the column itself."""
    if column and column.count(column[0]) == len(column) and len(set(map(type, column))) == 1:
        return column[0]
    return column


def same_value(a, b) -> bool:
    """Two check values that one value can stand for (NaN is not equal to itself: never)."""
    return type(a) is type(b) and a == b


def iteration_columns(kind: str, first_index: int, records: list[dict]) -> dict:
    """The fields of an `iterations` event from per-call records (index, seconds, phases,
    max_rel_error, passed, error), in order: times in nanoseconds, a check column that
    every call shares as its one value (the rules above)."""
    names = []
    for r in records:
        names.extend(n for n in r["phases"] if n not in names)
    fields = {"kind": kind, "first_index": first_index,
              "ns": to_ns([r["seconds"] for r in records]),
              "phases_ns": {n: to_ns([r["phases"].get(n) for r in records]) for n in names},
              **{k: shared([r[k] for r in records]) for k in CHECKS}}
    if any("loss" in r for r in records):   # training steps
        fields["loss"] = [r.get("loss", float("nan")) for r in records]
    return fields
