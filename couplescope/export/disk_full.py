"""What a run directory does when its disk fills: results.json first, no half-written file.

results.json is the small file that matters most (the statistics, every iteration, the
checks), so its room is claimed first: a reserve file of RESERVE_BYTES is written as soon
as the run directory exists and given back just before results.json is written, then
claimed again. A file that could not be finished is removed, never left cut short (a
reader would take a truncated events.jsonl or tfevents file for a whole one), and the run
says which files are missing. events.jsonl is the exception that is finished when it can
be: its lines are whole up to the first one that failed, the lines after that wait in
memory and are written when room comes back (the reserve given back at the end, files
removed); if it cannot be finished it is removed, since everything it held is in
results.json.

Room is claimed with fallocate where the file system supports it, else by writing bytes
that do not compress (a compressing file system would store zeros in no room at all).
"""

from __future__ import annotations

import errno
import os

#: room kept for results.json (a run of a few variants of tens of iterations writes 20-60 KB;
#: a bigger one also has the files that could not be finished to take room from)
RESERVE_BYTES = 64 * 1024
#: the reserve's name in the run directory (hidden; removed when the run ends)
RESERVE_NAME = ".results.json.reserve"

_CHUNK = os.urandom(4096)


def remove_quietly(path: str) -> bool:
    """Remove a file that could not be finished; True when it is gone (or never was)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


class Reserve:
    """Room on the run directory's disk held for results.json."""

    def __init__(self, folder: str) -> None:
        self.path = os.path.join(folder, RESERVE_NAME)
        self.held = 0

    def claim(self, size: int = RESERVE_BYTES) -> int:
        """Hold up to `size` bytes, as many as there is room for; return how many."""
        self.release()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError:
            return 0
        try:
            try:
                os.posix_fallocate(fd, 0, size)
                self.held = size
            except (OSError, AttributeError):   # no room for all of it, or no fallocate here
                os.ftruncate(fd, 0)
                self.held = _fill(fd, size)
        finally:
            os.close(fd)
        return self.held

    def release(self) -> None:
        """Give the room back (before results.json is written, and when the run ends)."""
        remove_quietly(self.path)
        self.held = 0


def _fill(fd: int, size: int) -> int:
    written = 0
    while written < size:
        try:
            n = os.write(fd, _CHUNK[:min(len(_CHUNK), size - written)])
        except OSError:
            break
        if n <= 0:
            break
        written += n
    return written


class EventsFile:
    """events.jsonl, appended one whole line at a time and written at once (a run killed
    half way keeps every event before it).

    A line that cannot be written (a full disk) is cut off again (the file is truncated
    to its last whole line, which needs no room) and kept in memory with every line after
    it, until `finish()` writes them or `remove()` gives the file up."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.whole = 0                       # bytes of the file that are whole lines
        self.waiting: list[bytes] = []       # lines not written yet, in order
        self.removed = False

    @property
    def complete(self) -> bool:
        return not self.waiting and not self.removed

    def append(self, line: str) -> OSError | None:
        """Write one line (or queue it behind lines still waiting); the error of a line
        that could not be written, None otherwise."""
        data = line.encode("utf-8")
        if self.removed:
            return None
        if self.waiting or self._fd is None:
            self.waiting.append(data)
            return None
        error = self._write(data)
        if error is not None:
            self.waiting.append(data)
        return error

    def finish(self) -> bool:
        """Write the lines still waiting; True when the file is complete."""
        if self.removed:
            return False
        while self.waiting:
            if self._fd is None:
                try:
                    self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
                except OSError:
                    return False
            if self._write(self.waiting[0]) is not None:
                return False
            self.waiting.pop(0)
        return True

    def _write(self, data: bytes) -> OSError | None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:
            self._cut_back()
            return exc
        self.whole += len(data)
        return None

    def _cut_back(self) -> None:
        """Truncate to the last whole line and close: a reader never sees half a line."""
        try:
            os.ftruncate(self._fd, self.whole)
        except OSError:
            pass
        self.close()

    def remove(self) -> None:
        """Give the file up: it could not be finished."""
        self.close()
        self.waiting.clear()
        self.removed = True
        remove_quietly(self.path)

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
