"""A variant's one-word outcome and how the tables print it: one vocabulary for the
headless table, results.json and the app (VariantResult.verdict, .said_verdict)."""

from __future__ import annotations

from couplescope.protocol.step_words import NOT_JUDGED

#: a variant's one-word outcome, as every front end shows it (VariantResult.verdict); a
#: passed training variant whose learning task was not judged is said `not judged`
VERDICTS = ("running", "passed", "failed", "error", "stopped")


def verdict_word(verdict: str) -> str:
    """How tables print a verdict: PASSED, FAILED, ERROR, STOPPED, running, not judged."""
    return verdict if verdict in ("running", NOT_JUDGED) else verdict.upper()
