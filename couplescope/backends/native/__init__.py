"""The native host: a C++ extension compiled on first use against the installed libtorch.

A simulation code calls its model from compiled code; this host does the same (host.cpp
says exactly what is inside each timed call), so what couplescope reports is what the
compiled code pays rather than what a Python loop pays.

It is built once per (torch version, compiler, Python, sources) into a cache directory
the user can see and override (COUPLESCOPE_CACHE, else $XDG_CACHE_HOME/couplescope, else
~/.cache/couplescope), by the parent before a worker starts (couplescope.core.runner:
the key is worked out once per run, and workers are handed the module's path), in a
subprocess (`python -m couplescope.backends.native.build DIR`) so the parent never
imports torch. Builds of the same key take turns through a lock file, so MPI ranks or two
runs at once never build twice or read a half-written module.

Everything here is cheap and torch-free except `load()`, which the worker calls.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from functools import lru_cache

_HERE = os.path.dirname(os.path.abspath(__file__))
#: the C++ files compiled into the one extension module (host.cpp defines the module)
SOURCES = tuple(os.path.join(_HERE, name) for name in ("host.cpp", "aoti_host.cpp", "train_host.cpp"))
#: the one translation unit the build compiles: it includes every SOURCE, so torch's headers
#: (most of a source's compile time) are parsed once, not once per source: 45 s of CPU for
#: the three, where compiled apart they took 113 s (g++ 12, -O2, this project's build machine)
UNITY = "couplescope_native_unity.cpp"
#: what the sources include from here, and the build's recipe (its flags, the unit): part
#: of the cache key too
HEADERS = (os.path.join(_HERE, "host_common.h"), os.path.join(_HERE, "build.py"))
MODULE_PREFIX = "couplescope_native"
#: the file in a build directory that says the build finished (its content: the module path)
DONE = "built"


def cache_root() -> str:
    """Where couplescope caches what it compiles (the native host, AOTInductor packages)."""
    explicit = os.environ.get("COUPLESCOPE_CACHE")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "couplescope")


def compiler() -> str:
    """The C++ compiler the build uses: $CXX, else c++ (torch.utils.cpp_extension's rule)."""
    return os.environ.get("CXX") or "c++"


@lru_cache(maxsize=8)
def _compiler_identity(cxx: str) -> tuple[str | None, str]:
    """(resolved path or None, first line of `--version`) of a compiler command."""
    path = shutil.which(cxx)
    if path is None:
        return None, ""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return path, ""
    return os.path.realpath(path), (out.splitlines() or [""])[0].strip()


def torch_version() -> str | None:
    """The installed torch's version, read from its metadata (no import)."""
    try:
        from importlib.metadata import version

        return version("torch")
    except Exception:
        return None


def _torch_include() -> str | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "include")


def unavailable() -> str | None:
    """Why the native host cannot be built here, in one line naming what is missing; None if it can."""
    cxx = compiler()
    path, _ = _compiler_identity(cxx)
    if path is None:
        named = f"CXX={cxx}" if os.environ.get("CXX") else "c++"
        return f"no C++ compiler ({named} not found; install g++ or set CXX)"
    include = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(include, "Python.h")):
        return f"no Python headers (Python.h not in {include}; install python3-dev)"
    torch_include = _torch_include()
    if torch_include is None:
        return "torch is not installed"
    if not os.path.exists(os.path.join(torch_include, "torch", "script.h")):
        return f"the installed torch has no C++ headers ({torch_include}/torch/script.h missing)"
    if importlib.util.find_spec("ninja") is None and shutil.which("ninja") is None:
        return "ninja is not installed (pip install ninja)"
    return None


def build_key() -> str:
    """The cache key: torch version, compiler, Python and every source, readable first."""
    cxx_path, cxx_version = _compiler_identity(compiler())
    return key_for(torch_version() or "none", cxx_path or compiler(), cxx_version,
                   sys.implementation.cache_tag, sources_digest())


def sources_digest() -> bytes:
    """Every compiled source and header and the build's recipe, each with its name: a change
    to any of them (or a file added to the build) makes a new key."""
    digest = hashlib.sha256()
    for path in (*SOURCES, *HEADERS):
        with open(path, "rb") as f:
            digest.update(os.path.basename(path).encode() + b"\0" + f.read() + b"\0")
    return digest.digest()


def key_for(torch: str, cxx_path: str, cxx_version: str, python: str, source: bytes) -> str:
    """torch-<version>-<compiler name>-<python tag>-<hash of everything>."""
    digest = hashlib.sha256("\0".join([torch, cxx_path, cxx_version, python]).encode() + source)
    name = os.path.basename(cxx_path)
    safe = "".join(c if c.isalnum() or c in ".+-_" else "_" for c in f"torch-{torch}-{name}-{python}")
    return f"{safe}-{digest.hexdigest()[:12]}"


def build_dir(key: str | None = None) -> str:
    return os.path.join(cache_root(), "native", key or build_key())


def module_name(key: str) -> str:
    return f"{MODULE_PREFIX}_{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def built_module(directory: str) -> str | None:
    """The compiled module's path when the build in `directory` finished, else None."""
    try:
        with open(os.path.join(directory, DONE)) as f:
            path = f.read().strip()
    except OSError:
        return None
    return path if os.path.exists(path) else None


def ensure_built(say=lambda message: None, key: str | None = None) -> tuple[str, float | None]:
    """The compiled module's path, building it first if needed: (path, build seconds or
    None when it came from the cache). `say(message)` reports progress; `key` is the
    build key when the caller has worked it out already. Raises NativeBuildError with
    the compiler's last lines when the build fails."""
    import fcntl
    import time

    key = key or build_key()
    directory = build_dir(key)
    path = built_module(directory)
    if path:
        return path, None
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # another run may be building this key: wait for it
        path = built_module(directory)
        if path:
            return path, None
        say(f"building the native host for torch {torch_version()} with {compiler()} "
            f"(first use, {BUILD_TIME}) in {directory}")
        t0 = time.monotonic()
        log = os.path.join(directory, "build.log")
        env = {**os.environ, "PATH": os.pathsep.join([*_tool_dirs(), os.environ.get("PATH", "")])}
        env.setdefault("MAX_JOBS", "2")
        command = [sys.executable, "-m", "couplescope.backends.native.build", directory, module_name(key)]
        code = _build(command, env, log, lambda step: say(f"native host: {step} "
                                                          f"({time.monotonic() - t0:.0f} s so far)"))
        path = built_module(directory)
        if code != 0 or not path:
            raise NativeBuildError(_failure_line(log), log)
        return path, time.monotonic() - t0


#: what a first build takes, as measured (docs/hosts.md): a fresh cache, 2 shared cores
BUILD_TIME = "1 to 4 minutes on 2 cores"
#: how often a build says it is still going (ninja speaks only when a step has finished,
#: and compiling host.cpp alone takes most of a minute)
HEARTBEAT_SECONDS = 15.0


def _build(command: list[str], env: dict, log: str, step) -> int:
    """Run the build, keeping its output in `log`; `step(words)` is called when ninja
    finishes a step (a source compiled, the module linked) and every HEARTBEAT_SECONDS in
    between, so a build of a minute or more never looks hung. A build interrupted (Ctrl-C,
    SIGTERM) is ended, not left compiling."""
    import threading

    waiting = [unity_names()]   # the sources compile as one unit (UNITY)
    done = threading.Event()

    def heartbeat():
        while not done.wait(HEARTBEAT_SECONDS):
            step(f"still compiling {', '.join(waiting)}" if waiting else "still linking")

    with open(log, "w") as out:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                text=True, errors="replace", bufsize=1)
        beat = threading.Thread(target=heartbeat, name="couplescope-build-heartbeat", daemon=True)
        beat.start()
        try:
            for line in proc.stdout:
                out.write(line)
                out.flush()
                finished = build_step(line)
                if finished:
                    words, source = finished
                    if source is not None:
                        waiting.clear()
                    step(words)
            return proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            done.set()
            proc.stdout.close()


def unity_names() -> str:
    """What the one unit compiles, in words: "host.cpp, aoti_host.cpp, train_host.cpp"."""
    return ", ".join(os.path.basename(source) for source in SOURCES)


def build_step(line: str) -> tuple[str, str | None] | None:
    """A ninja status line (printed when the step has finished) in words, and the source it
    compiled: "[1/2] c++ ... -c .../couplescope_native_unity.cpp -o ....o" is ("compiled
    host.cpp, aoti_host.cpp, train_host.cpp (one unit), 1 of 2 steps done", UNITY); the
    link is ("linked, 2 of 2 steps done", None)."""
    match = re.match(r"\[(\d+)/(\d+)\] (.*)", line.strip())
    if not match:
        return None
    n, total, what = match.groups()
    source = re.search(r" -c (\S+)", what)
    name = os.path.basename(source.group(1)) if source else None
    said = f"{unity_names()} (one unit)" if name == UNITY else name
    action = f"compiled {said}" if name else "linked" if " -shared" in what else what.split(" ")[0]
    return f"{action}, {n} of {total} steps done", name


def _tool_dirs() -> list[str]:
    """Where ninja lives: the `ninja` package's own directory and this Python's scripts."""
    dirs = [os.path.dirname(sys.executable), sysconfig.get_paths().get("scripts", "")]
    spec = importlib.util.find_spec("ninja")
    if spec is not None and spec.origin:
        dirs.append(os.path.join(os.path.dirname(spec.origin), "data", "bin"))
    return [d for d in dirs if d and os.path.isdir(d)]


def _failure_line(log: str) -> str:
    """The first compiler error in the build log, or its last line."""
    try:
        with open(log, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return "no build log"
    for line in lines:
        if "error" in line.lower() and not line.startswith(("[", "FAILED")):
            return line[:300]
    return (lines[-1] if lines else "the build printed nothing")[:300]


class NativeBuildError(RuntimeError):
    def __init__(self, line: str, log: str) -> None:
        super().__init__(f"building the native host failed: {line} (full log: {log}); "
                         "--host python runs without it")
        self.log = log


def load(path: str):
    """Import the compiled module (worker side; torch must be imported first so libtorch's
    symbols are there)."""
    import importlib.machinery

    import torch  # noqa: F401

    name = os.path.basename(path).split(".")[0]
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def module_for_worker():
    """The compiled module in the worker: the one the parent built (or found in the
    cache) for this run, named in NATIVE_MODULE_ENV, or, for a worker started without
    such a parent (a rank started by hand), the one of this installation's build key,
    built now if it must be."""
    from couplescope.protocol.contract import NATIVE_MODULE_ENV

    path = os.environ.get(NATIVE_MODULE_ENV, "")
    if not (path and os.path.exists(path)):
        path, _ = ensure_built()
    return load(path)
