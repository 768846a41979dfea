"""One temporary folder per couplescope process, removed on every exit path.

Everything couplescope writes that is not a result lives in one folder,
$TMPDIR/couplescope-<pid>-<random>/ ("the scratch folder"):

    .lock                  held (flock, shared) by the owner and by every worker using it
    traces-*/              trace files a worker wrote, until the parent moves them (export)
    app-runs-*/            the app's staged run directories, until exported or quit
    tensorboard-*.log      `couplescope --tensorboard`'s log
    worker-<pid>-*/        a worker's files: the model saved as TorchScript for the run
                           (920 KB for toy-resnet, 45 MB for resnet18), a trace it only
                           summarises

Why one folder: the pieces used to be separate folders (couplescope-tui-*,
couplescope-traces-*, a worker's couplescope-*), and every abnormal end (a signal, a
worker killed, a full disk) left some behind. Now the owner removes the whole folder
when it exits (atexit: normal ends, errors, and the signals couplescope.core.signals
turns into normal ends); a worker removes its own subfolder, its parent the rest.

SIGKILL leaves the folder, so creating one first sweeps the folders of owners that
died: a folder whose lock no process holds (flock is released by the kernel when its
holders die, whatever killed them; a pid could have been reused). A worker joins its
parent's folder by taking the lock too, so a parent killed while its worker still runs
(the worker is ending: couplescope.worker.main) never has the folder swept under it.
Other users' folders and folders without a lock are never touched.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time

PREFIX = "couplescope-"
LOCK = ".lock"
#: names a folder has while it is being created (swept only when old: not yet locked)
CREATING = ".couplescope-new-"
CREATING_MAX_AGE = 600.0

_lock = threading.Lock()
_state = {"folder": None, "owned": None, "fd": None}


def _flock(fd: int, shared: bool, wait: bool) -> bool:
    import fcntl

    flags = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if wait else fcntl.LOCK_NB)
    try:
        fcntl.flock(fd, flags)
        return True
    except BlockingIOError:
        return False
    except OSError:   # a file system without flock: use it, but never sweep anything there
        return shared


def _hold(folder: str) -> int | None:
    """A shared lock on `folder`'s lock file (kept open for the life of the process)."""
    try:
        fd = os.open(os.path.join(folder, LOCK), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    if not _flock(fd, shared=True, wait=False):
        os.close(fd)
        return None
    return fd


def sweep(parent: str | None = None) -> list[str]:
    """Remove scratch folders under `parent` ($TMPDIR) whose owners are gone; their paths."""
    parent = parent or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    uid = os.getuid()
    for name in names:
        path = os.path.join(parent, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid != uid or not os.path.isdir(path) or os.path.islink(path):
            continue
        if name.startswith(CREATING):
            if time.time() - st.st_mtime > CREATING_MAX_AGE:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
            continue
        if not name.startswith(PREFIX):
            continue
        try:
            fd = os.open(os.path.join(path, LOCK), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue   # no lock file: not ours to judge (an older couplescope's folder)
        try:
            if _flock(fd, shared=False, wait=False):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
        finally:
            os.close(fd)
    return removed


def _create() -> str:
    """A new scratch folder, locked before it gets its final name (so no sweep sees it unlocked)."""
    parent = tempfile.gettempdir()
    sweep(parent)
    staging = tempfile.mkdtemp(prefix=CREATING, dir=parent)
    with open(os.path.join(staging, LOCK), "w"):
        pass
    fd = _hold(staging)
    final = os.path.join(parent, f"{PREFIX}{os.getpid()}-{os.path.basename(staging)[len(CREATING):]}")
    os.rename(staging, final)
    _state["fd"] = fd
    return final


def folder() -> str:
    """This process's scratch folder, created on first use (raises OSError if $TMPDIR
    cannot be written). In a worker that joined its parent's, the worker's own subfolder."""
    with _lock:
        if _state["folder"] is None:
            _state["folder"] = _state["owned"] = _create()
            atexit.register(remove)
        return _state["folder"]


def join(parent_folder: str | None) -> str:
    """A worker's side: a subfolder of the parent's scratch folder (locked, so it is not
    swept while the worker runs), or a scratch folder of its own when the parent's is
    not there (started by hand; an MPI rank on another node)."""
    with _lock:
        if _state["folder"] is None and parent_folder:
            fd = _hold(parent_folder)
            if fd is not None:
                try:
                    own = tempfile.mkdtemp(prefix=f"worker-{os.getpid()}-", dir=parent_folder)
                except OSError:
                    os.close(fd)
                else:
                    _state.update(folder=own, owned=own, fd=fd)
                    atexit.register(remove)
                    return own
    return folder()


def make(prefix: str) -> str:
    """A new directory inside the scratch folder."""
    return tempfile.mkdtemp(prefix=f"{prefix}-", dir=folder())


def remove() -> None:
    """Remove what this process owns (its folder, or a worker's subfolder) and let go of
    the lock. Safe to call more than once, from a watchdog thread too."""
    owned, fd = _state["owned"], _state["fd"]
    _state.update(folder=None, owned=None, fd=None)
    if owned:
        shutil.rmtree(owned, ignore_errors=True)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
