"""A library host's driver compiled with the user's compiler against their library, cached.

The driver's sources (the static couplescope_shared.f90, the program written for the
variant's signature, the host's CMakeLists.txt from fortran/<host>.cmake) are copied into
a cache directory named by a key over everything that changes what is built: the compiler (its path and `--version`), the
flags (FFLAGS, as CMake reads them), the library's install (its package config files and
the library files beside them, by name, size and modification time), the sources' text,
and cmake's version. CMake configures and builds it there; the executable's path is
written last (DIR/built), so a build killed half-way is never taken for a finished one.
Builds of one key take turns through a lock file, so MPI ranks or two runs at once never
build twice. A build reports progress (`say`) at each CMake step and every 15 s between.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field

from couplescope.protocol.errors import UsageError

HEARTBEAT_SECONDS = 15.0
DONE = "built"
FACTS = "couplescope-build.txt"
FORTRAN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fortran")


@dataclass
class DriverBuild:
    """One driver to build: where its cache lives, what goes into it, how CMake is called."""

    host: str                      # the host's name (the cache's folder)
    files: dict                    # file name -> text, written into the source directory
    compiler: str                  # the Fortran compiler command (FC, --fc)
    cmake_args: list = field(default_factory=list)
    #: files whose identity (name, size, mtime) is part of the key: the user's library
    identity_files: list = field(default_factory=list)
    what: str = "driver"           # in messages: "the ftorch driver"

    def key(self) -> str:
        compiler_path, compiler_version = compiler_identity(self.compiler)
        digest = hashlib.sha256()
        for part in (compiler_path or self.compiler, compiler_version, os.environ.get("FFLAGS", ""),
                     cmake_version(), *self.cmake_args):
            digest.update(part.encode() + b"\0")
        for path in sorted(self.identity_files):
            try:
                st = os.stat(path)
                digest.update(f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}".encode() + b"\0")
            except OSError:
                digest.update(f"{path}:missing".encode() + b"\0")
        for name in sorted(self.files):
            digest.update(name.encode() + b"\0" + self.files[name].encode() + b"\0")
        name = os.path.basename(compiler_path or self.compiler)
        safe = "".join(c if c.isalnum() or c in ".+-_" else "_" for c in name)
        return f"{safe}-{digest.hexdigest()[:16]}"


def fortran_compiler(spec=None) -> str:
    """--fc, else $FC, else gfortran (what CMake would take)."""
    return (getattr(spec, "fc", None) if spec is not None else None) or os.environ.get("FC") or "gfortran"


def missing_compiler(spec=None) -> str | None:
    """Why the driver's Fortran compiler cannot be run, in one line, or None."""
    fc = fortran_compiler(spec)
    if shutil.which(fc) is None:
        named = "--fc " + fc if getattr(spec, "fc", None) else ("FC=" + fc if os.environ.get("FC") else fc)
        return f"no Fortran compiler ({named} not found; install gfortran or pass --fc)"
    return None


def compiler_identity(command: str) -> tuple[str | None, str]:
    """(resolved path or None, first line of `--version`) of a compiler command."""
    path = shutil.which(command)
    if path is None:
        return None, ""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return os.path.realpath(path), ""
    return os.path.realpath(path), (out.splitlines() or [""])[0].strip()


def cmake_version() -> str:
    path = shutil.which("cmake")
    if path is None:
        return ""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return (out.splitlines() or [""])[0].strip()


def cache_dir(host: str, key: str) -> str:
    from couplescope.backends.native import cache_root

    return os.path.join(cache_root(), host, key)


def built(directory: str) -> str | None:
    """The driver's path when the build in `directory` finished, else None."""
    try:
        with open(os.path.join(directory, DONE)) as f:
            path = f.read().strip()
    except OSError:
        return None
    return path if os.path.exists(path) else None


def facts(directory: str) -> dict:
    """What CMake wrote of the build (compiler, flags, library, its libtorch): key=value lines."""
    out = {}
    try:
        with open(os.path.join(directory, "build", FACTS)) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("=")
                out[key] = value.strip()
    except OSError:
        pass
    return out


def driver_files(cmake_lists: str, program_text: str, *static: str) -> dict:
    """A driver's sources: the generated program (driver.f90), the host's CMakeLists.txt
    (fortran/<cmake_lists>) and our static Fortran (couplescope_shared.f90, and the host's
    own files named in `static`)."""
    files = {"driver.f90": program_text}
    for name, source in (("couplescope_shared.f90", "couplescope_shared.f90"), ("CMakeLists.txt", cmake_lists),
                         *((name, name) for name in static)):
        with open(os.path.join(FORTRAN_DIR, source)) as f:
            files[name] = f.read()
    return files


class DriverBuildError(UsageError):
    """The driver did not compile: the compiler's first error, and where the whole log is."""


def ensure_built(build: DriverBuild, say=lambda words: None) -> tuple[str, float | None, str]:
    """(the driver's path, build seconds or None when it came from the cache, the build
    directory). Raises DriverBuildError naming the first error."""
    import fcntl

    key = build.key()
    directory = cache_dir(build.host, key)
    path = built(directory)
    if path:
        return path, None, directory
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # another process may be building this key: wait
        path = built(directory)
        if path:
            return path, None, directory
        source = os.path.join(directory, "src")
        os.makedirs(source, exist_ok=True)
        for name, text in build.files.items():
            with open(os.path.join(source, name), "w") as f:
                f.write(text)
        work = os.path.join(directory, "build")
        log = os.path.join(directory, "build.log")
        t0 = time.monotonic()
        say(f"building {build.what} with {build.compiler} (first use) in {directory}")
        configure = ["cmake", "-S", source, "-B", work, "-DCMAKE_BUILD_TYPE=Release",
                     f"-DCMAKE_Fortran_COMPILER={build.compiler}", *build.cmake_args]
        compile_ = ["cmake", "--build", work]
        with open(log, "w") as out:
            for step, command in (("configured", configure), ("compiled and linked", compile_)):
                code = _run(command, out, lambda words: say(f"{build.what}: {words} "
                                                            f"({time.monotonic() - t0:.0f} s so far)"))
                if code != 0:
                    raise DriverBuildError(f"building {build.what} failed: {failure_line(log)} "
                                           f"(full log: {log})")
                say(f"{build.what}: {step} ({time.monotonic() - t0:.0f} s so far)")
        executable = os.path.join(work, "couplescope_driver")
        if not os.path.exists(executable):
            raise DriverBuildError(f"building {build.what} made no executable (full log: {log})")
        tmp = os.path.join(directory, f".{DONE}.tmp")
        with open(tmp, "w") as f:
            f.write(executable + "\n")
        os.replace(tmp, os.path.join(directory, DONE))
        return executable, time.monotonic() - t0, directory


def _run(command: list[str], out, step) -> int:
    """Run one CMake command, its output kept in `out`; `step(words)` on each target it
    finishes and every HEARTBEAT_SECONDS in between. Interrupted (Ctrl-C, SIGTERM), it is
    ended, not left running."""
    import threading

    done = threading.Event()

    def heartbeat():
        while not done.wait(HEARTBEAT_SECONDS):
            step("still building")

    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", bufsize=1)
    beat = threading.Thread(target=heartbeat, name="couplescope-driver-build-heartbeat", daemon=True)
    beat.start()
    try:
        for line in proc.stdout:
            out.write(line)
            out.flush()
            match = re.match(r"\[\s*(\d+)%\] Building Fortran object .*?/([^/]+)\.o$", line.strip())
            if match:
                step(f"compiling {match.group(2)} ({match.group(1)}%)")
        return proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        done.set()
        proc.stdout.close()


def failure_line(log: str) -> str:
    """The first error in a build log (CMake's or the compiler's), else its last line."""
    try:
        with open(log, errors="replace") as f:
            lines = [line.rstrip() for line in f if line.strip()]
    except OSError:
        return "no build log"
    for i, line in enumerate(lines):
        if line.lstrip().startswith("Error:") or "CMake Error" in line or line.lstrip().startswith("error:"):
            detail = line.strip()
            if "CMake Error" in line and i + 2 < len(lines):   # CMake says what on the next lines
                detail = " ".join(part.strip() for part in lines[i:i + 3])
            return detail[:300]
    return (lines[-1] if lines else "the build printed nothing")[:300]
