"""Where temporary files live: one folder per couplescope process, removed on every exit.

Before, each piece made its own folder in /tmp (the app's staged runs, the traces'
staging, the worker's saved TorchScript copy of the model, a trace without --export), and
each was left behind whenever the run ended abnormally: a SIGTERM, a closed terminal, a
SIGKILLed worker, a full disk. Now the parent makes one folder,
`$TMPDIR/couplescope-run-<pid>-<start>-XXXX`, puts its own temporary files in it and hands
it to every worker as TMPDIR (so whatever a worker, torch or a user's module writes with
tempfile lands there too); the folder is removed when the process exits (normally, on an
exception, or on a handled signal). A process killed with SIGKILL cannot clean up, so every
start first sweeps the folders whose process (pid and start time) no longer exists.

Standard library only: the parent, the worker and the exporters all use it.
"""

from __future__ import annotations

import atexit
import getpass
import os
import re
import shutil
import tempfile

PREFIX = "couplescope-run-"
_NAME = re.compile(rf"^{PREFIX}(\d+)-(\d+)-")
#: the process's folder, made on first use
_folder: str | None = None
_registered: list = []


def _start_time(pid: int) -> int:
    """The process's start time in clock ticks since boot (Linux), 0 where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[19])   # field 22 of stat; the name and state come first
    except (OSError, IndexError, ValueError):
        return 0


def _alive(pid: int, start: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True   # another user's process with that pid: not ours to judge
    return not start or not _start_time(pid) or _start_time(pid) == start


def sweep(root: str | None = None) -> list[str]:
    """Remove the folders of couplescope processes that no longer exist; return them."""
    root = root or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        match = _NAME.match(name)
        if match and not _alive(int(match.group(1)), int(match.group(2))):
            path = os.path.join(root, name)
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def folder() -> str:
    """This process's temporary folder (made, after a sweep, on first use). Raises OSError
    when the temporary directory cannot be written."""
    global _folder
    if _folder is None or not os.path.isdir(_folder):
        sweep()
        pid = os.getpid()
        _folder = tempfile.mkdtemp(prefix=f"{PREFIX}{pid}-{_start_time(pid)}-")
        if not _registered:
            atexit.register(remove)
            _registered.append(True)
    return _folder


def subfolder(prefix: str) -> str:
    """A new folder inside this process's temporary folder."""
    return tempfile.mkdtemp(prefix=prefix, dir=folder())


def worker_env() -> dict:
    """What a worker needs so that its temporary files land in a folder of its own inside
    this process's (the caller removes it when the worker has ended). torch's compile
    cache, which it keeps under the temporary directory by default, stays where it was."""
    return {"TMPDIR": subfolder("worker-"), "TORCHINDUCTOR_CACHE_DIR": inductor_cache()}


def inductor_cache() -> str:
    """torch's compile cache: TORCHINDUCTOR_CACHE_DIR, else where torch keeps it by default
    (under the temporary directory as this process sees it, not a worker's own)."""
    return os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(tempfile.gettempdir(),
                                                                      f"torchinductor_{_user()}")


def _user() -> str:
    """The user name as torch's inductor names its default cache folder
    (torch._inductor.runtime.cache_dir_utils.default_cache_dir), so that a worker's compiles
    share the cache of the user's other torch programs."""
    try:
        name = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        name = f"uid_{os.getuid()}"
    return re.sub(r'[\\/:*?"<>|]', "_", name)


def remove() -> None:
    """Remove this process's folder (idempotent; atexit calls it too)."""
    global _folder
    if _folder is not None:
        shutil.rmtree(_folder, ignore_errors=True)
        _folder = None
