"""Errors that mean "the user asked for something we cannot do".

The CLI turns a UsageError into one line on stderr and exit code 2, and a WriteError into
one line and exit code 3, with no traceback (`--debug` shows it). Anything else escaping is a bug and keeps its traceback.
"""


class UsageError(Exception):
    """Bad input: an unknown name, a value out of range, a file that is not what it should be.

    The message is one line that names the problem and, where there is a fixed set, the
    valid choices.
    """

    #: the option (its name) whose value is refused, where the refusal is about one: the
    #: app marks that field (a value fine in itself, refused beside the others: `--save-model`
    #: on an inference run)
    option: str | None = None

    @classmethod
    def about(cls, option: str, message: str) -> "UsageError":
        error = cls(message)
        error.option = option
        return error


class WriteError(Exception):
    """A file the user asked for could not be written (a full disk, no permission): one
    line and exit code 3, as for a run whose results could not be written. Not bad input:
    the same command succeeds once there is room."""


def choices_text(choices) -> str:
    """Render a set of valid choices the same way in every message."""
    return ", ".join(sorted(str(c) for c in choices))
