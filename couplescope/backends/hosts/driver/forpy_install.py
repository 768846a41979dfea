"""Where the user's forpy is, and the Python the driver embeds: found as forpy's users find them.

forpy is one Fortran file, forpy_mod.F90, that projects copy into their tree and compile
with the rest of their code; it has no install and no version. The forpy host takes the
file the user names: --forpy-source FILE (or the folder holding forpy_mod.F90), else
$FORPY_SOURCE. The driver embeds the Python that runs couplescope (this interpreter, a
venv's included), linked as forpy's README links it (`python3-config --ldflags --embed`;
here CMake's FindPython3 Development.Embed for that interpreter). Cheap: files,
environment variables and sysconfig only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import sysconfig

from couplescope.backends.hosts.driver.build import missing_compiler

FILE_NAME = "forpy_mod.F90"
ENV_NAME = "FORPY_SOURCE"
NOT_FOUND = f"forpy not found: pass --forpy-source FILE (its {FILE_NAME}) or set {ENV_NAME}"
#: what forpy_mod.F90 declares, in its first lines
MODULE_LINE = "module forpy_mod"


def find_source(spec=None) -> tuple[str | None, str, str | None]:
    """(the forpy_mod.F90 named, or None; where it was looked for; why what was named is not
    forpy, or None): --forpy-source, else $FORPY_SOURCE."""
    given = getattr(spec, "forpy_source", None) if spec is not None else None
    if given:
        path, source = given, f"--forpy-source {given}"
    elif os.environ.get(ENV_NAME):
        path = os.environ[ENV_NAME]
        source = f"{ENV_NAME}={path}"
    else:
        return None, "", None
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.isdir(path):
        path = os.path.join(path, FILE_NAME)
    if not os.path.isfile(path):
        return None, source, f"{path} does not exist"
    if not is_forpy(path):
        return None, source, f"{path} is not forpy's {FILE_NAME} (no `{MODULE_LINE}` in its first lines)"
    return os.path.realpath(path), source, None


def is_forpy(path: str) -> bool:
    """The file declares forpy's module near its top (forpy_mod.F90 does, after its licence)."""
    try:
        with open(path, errors="replace") as f:
            head = f.read(20000)
    except OSError:
        return False
    return any(line.strip().lower() == MODULE_LINE for line in head.splitlines())


def source_digest(path: str) -> str:
    """What identifies a forpy_mod.F90 (forpy has no version): its sha256's first 16 hex digits."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def python_headers() -> str | None:
    """The embedded Python's Python.h, or None when its headers are not installed."""
    path = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    return path if os.path.isfile(path) else None


def python_library() -> str:
    """The libpython the driver links (what `python3-config --ldflags --embed` names)."""
    return os.path.join(sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("LDLIBRARY") or "")


def missing_tools(spec=None) -> str | None:
    """Why the forpy driver cannot be built here (a compiler, cmake, Python's headers)."""
    if python_headers() is None:
        return (f"the headers of this Python ({sys.executable}) are not installed, and forpy's "
                "driver embeds it (install python3-dev)")
    return missing_compiler(spec) or (None if shutil.which("cmake") else
                                      "cmake not found (the forpy driver is built with CMake)")
