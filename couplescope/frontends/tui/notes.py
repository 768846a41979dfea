"""The log's lines for a run's events: what the app says about them in plain words.

Called by the app for every event, before the views (the log shows notes from all runs,
the views only what they follow). A pure function of the event and its run, so the words
are tested without an app.
"""

from __future__ import annotations

from couplescope.frontends import formatting as fmt
from couplescope.frontends.tui.watch_widgets import calls_done
from couplescope.protocol import step_words

#: the most lines of a worker's output the log shows
OUTPUT_LINES = 20


def shows_output(record, variant: str) -> bool:
    """A user module's print()s, or the output of a variant that did not finish."""
    v = record.builder.variants.get(variant)
    return v is not None and fmt.shows_output(v.spec, v.status == "finished")


def notes_for(record, ev: dict) -> list[tuple[str, str]]:
    """(text, level) lines for one event: level is info, warning or error."""
    kind, variant = ev["event"], ev.get("variant")
    if kind == "model_loaded":
        return [(f"{variant}: model loaded in {fmt.seconds(ev.get('seconds'))} "
                 f"(size {ev.get('size')}, {ev.get('dtype')})", "info")]
    if kind == "variant_failed":
        if ev.get("kind") == "interrupted":   # as the top line and the watch view say it
            v = record.builder.variants.get(variant)
            if v is not None and v.calls.count:
                return [(f"{variant}: {record.stopped_words()}: what it measured is kept", "warning")]
            return [(f"{variant}: {record.stopped_words()} before {record.first_call(variant)}: nothing measured",
                     "warning")]
        return [(f"{variant}: {ev.get('reason')}", "error")]
    if kind == "diagnostic":
        return [(f"warning: {ev.get('message')}", "warning")]
    if kind == "log":
        return [(f"{variant}: {ev.get('message')}", "info")]
    if kind == "worker_output" and shows_output(record, variant):
        lines = (ev.get("lines") or [])[-OUTPUT_LINES:]
        more = f" (the last {len(lines)} of {ev['total']} lines)" if ev.get("total", 0) > len(lines) else ""
        return [(f"{variant} printed{more}:\n" + "\n".join(lines), "info")]   # text: the log is no markup
    if kind == "variant_finished" and (ev.get("summary") or {}).get("training"):
        v = record.builder.variants.get(variant)
        word, text = training_verdict(ev["summary"]["training"], v and calls_done(v))
        return [(f"{variant}: {text}", "error" if word == "FAILED" else "info")] if text else []
    if kind == "rounds_planned":
        return [(f"interleaved: {ev['rounds']} rounds, the variants' order shuffled in each "
                 f"(order seed {ev['seed']})", "info")]
    if kind == "model_compiled":
        return [(f"{variant}: {fmt.compiled_line(ev)}", "info")]
    if kind == "trace_written":
        return [(f"{variant}: trace written", "info")]
    if kind == "host_build" and ev.get("status") != "cached":   # a first build: minutes
        text = build_text(ev)
        # the heartbeat ("... so far") goes to the status line only (app.STATUS)
        return [(f"{variant}: {text}", "info")] if ev.get("status") == "built" or "so far" not in text else []
    return []


def training_verdict(training: dict, made: dict[str, int] | None = None) -> tuple[str | None, str]:
    """A training variant's learning-task verdict: (PASSED, FAILED or None when it was not
    judged, its words) from the worker's summary: `[training] PASSED shift by one place:
    input 1..5 gives [5. 1. 2. 3. 4.]; expected ...`, the learned output in the words of
    the model's task ("" when the worker said nothing); not judged for too few steps, the
    steps by kind as Watch counts them (`made`: calls_done's, which train the model) and
    the iterations field to set."""
    final = training.get("final_check") or {}
    if final.get("passed") is not None:
        word = "PASSED" if final["passed"] else "FAILED"
        return word, f"[training] {word} {final.get('check', '')}: {final.get('message', '')}"
    if final.get("steps_needed") and training.get("steps") is not None:
        # too few steps: the app's field to set, not the command line's flag the worker names
        # ("use --iterations 10000" told an app user an option of another front end)
        needed = final["steps_needed"]
        said = step_words.not_judged(made or {"timed": training["steps"]}, needed)
        return None, f"[training] {said}; set iterations to {fmt.thousands(needed)} (Pick, p)"
    return None, f"[training] {final['message']}" if final.get("message") else ""


def ending_notes(record) -> list[tuple[str, str]]:
    """What the log says when a run in rounds ends: each variant's paired ratio to its
    baseline (the compare view ranks against the fastest median, with no interval), the
    pairs its ratios cannot rank, and the noise verdict (couplescope.results.noise), as
    the headless command prints them."""
    builder = record.builder
    if builder.rounds is None:
        return []
    from couplescope.results import noise

    rows = builder.comparison()
    found = noise.verdict(builder, rows)
    return ([(line, "info") for line in (ratio_line(r) for r in rows) if line]
            + [(line, "info") for line in found["unranked"]]
            + ([(f"noise: {found['line']}", "warning")] if found["line"] else []))


def ratio_line(row: dict) -> str | None:
    """"b: 1.20x a from same-round pairs (95% interval 1.15–1.26, by round 1.12–1.30)";
    where the rounds are too few for an interval narrower than their range (5 rounds:
    paired.range_only), the range alone: "(by round 2.13–4.70; 5 rounds: too few for a
    narrower interval)" (it read "95% interval 2.13–4.70, by round 2.13–4.70")."""
    from couplescope.results.paired import range_only, unpaired

    base = row.get("baseline")
    if not base or base == row["name"] or row.get("ratio") is None:
        return None
    if unpaired(row):
        return (f"{row['name']}: {row['ratio']:.2f}x {base}, unpaired (fewer than two rounds in "
                "common: the medians' ratio)")
    spread = row.get("ratio_spread") or [row["ratio_low"], row["ratio_high"]]
    if range_only(row):
        return (f"{row['name']}: {row['ratio']:.2f}x {base} from same-round pairs (by round "
                f"{row['ratio_low']:.2f}–{row['ratio_high']:.2f}; {row.get('paired_rounds')} rounds: too few "
                "for a narrower interval)")
    return (f"{row['name']}: {row['ratio']:.2f}x {base} from same-round pairs (95% interval "
            f"{row['ratio_low']:.2f}–{row['ratio_high']:.2f}, by round {spread[0]:.2f}–{spread[1]:.2f})")


def build_text(ev: dict) -> str:
    """A host_build event in words: what is happening, or how long the build took."""
    what = f"{ev['host']} driver" if ev.get("host") else "native host"
    return ev.get("message") or f"{what} built in {fmt.seconds(ev.get('seconds'))}"


def build_words(ev: dict) -> tuple[str, ...]:
    """The top line while a variant's host builds, in its forms: the build's own words (a
    compiler's step, the cache's folder), then what it does in a line that fits 80 columns
    (the folder's path wrapped it); the log (t) keeps every step."""
    said = f"{ev['variant']}: {build_text(ev)}"
    if ev.get("status") != "building":
        return (said,)
    return said, f"{ev['variant']}: building its host (first use; t shows each step)", \
        f"{ev['variant']}: building its host (first use)"
