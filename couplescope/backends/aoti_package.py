"""The aoti backend's packages: export with torch.export, compile with AOTInductor, cache.

A package is made from the eager model and example inputs that are the host arrays
themselves, wrapped as the coupling wraps them: the host layout's shapes *and strides*
(column-major by default, FTorch's rule in couplescope.backends.host_memory). AOTInductor
compiles for the strides it was shown, so a package exported from row-major examples
would be handed column-major memory at every call; exporting from the host's own view
makes the package and the coupling agree (and `--layout c` makes both read the memory the
wrong way round, which the checks catch, as with TorchScript).

Compiling takes tens of seconds (a small MLP: 36 s cold, 10 s with torch's own compile
cache warm, on a 2-core machine), so packages are cached in
`<cache root>/aoti/<model>-<size>-<dtype>-<layout>-<device>-torch<version>-<digest>/`
(the cache root is couplescope.backends.native.cache_root(): COUPLESCOPE_CACHE, else
~/.cache/couplescope). The digest covers what the package depends on beyond the readable
name: the model's source (a catalogue model's module, a user's .py or .pt2 file), the
seed (the weights), the input signature, torch's full version, this CPU's instruction
flags (a package runs the vector instructions of the CPU it was compiled on) and inductor's
settings from the environment (TORCHINDUCTOR_FREEZING=1 and the like). Compiles of
the same key take turns through a lock file, a package is written under a temporary name
and renamed when complete, so two runs (or an interrupted one) never leave a broken
package. A hit reports zero compile time and says so.

What cannot be exported is refused before anything is measured, in one line naming the
essence of the export error (UsageError: exit code 2). A forward that loops in Python over
the elements of its input (StrideNet) does not fail to export: torch.export traces Python,
so it unrolls the loop into one graph node per step, N^2 element copies (StrideNet at
N = 32: 6153 nodes and 27 s to export; at N = 512 it would never finish). So before
exporting, one eager call is counted (a TorchDispatchMode that stops at the limit) and a
model that dispatches more than MAX_GRAPH_OPERATORS operators per call is refused.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import time

from couplescope.protocol.errors import UsageError

#: bump when the way packages are made changes: every cached package is then remade
RECIPE = 1
#: operators one eager call may dispatch before the model is refused as unrollable (the
#: largest catalogue graph, deep-linear at L = 1000, is about 3 000; StrideNet at N = 512
#: is about 1.3 million)
MAX_GRAPH_OPERATORS = 20_000
PACKAGE = "model.pt2"
COMPILER = "AOTInductor"


def cache_dir() -> str:
    from couplescope.backends.native import cache_root

    return os.path.join(cache_root(), "aoti")


class AotiPackage:
    """The package of one variant: where it is cached, and `ensure()` to make it."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        readable, self.identity = describe(ctx)
        digest = hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()[:12]
        self.directory = os.path.join(cache_dir(), f"{readable}-{digest}")
        self.path = os.path.join(self.directory, PACKAGE)
        self.report: dict | None = None

    def ensure(self) -> dict:
        """The package exists after this; returns the model_compiled fields: status
        "compiled" with the seconds taken, or "cached" with zero. Raises UsageError for a
        model that cannot be exported."""
        if self.report is None:
            self.report = self._cached() or self._compile_locked()
        return self.report

    def _cached(self) -> dict | None:
        if not os.path.exists(self.path):
            return None
        return {"status": "cached", "seconds": 0.0, "compiler": COMPILER, "package": self.path}

    def _compile_locked(self) -> dict:
        os.makedirs(self.directory, exist_ok=True)
        lock_path = os.path.join(self.directory, ".lock")
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)   # another run may be compiling this key: wait
            cached = self._cached()
            if cached:
                return cached
            for stale in glob.glob(os.path.join(self.directory, ".tmp-*")):
                shutil.rmtree(stale, ignore_errors=True)   # left by a compile that was killed
            # written in a folder of its own under the package's final name (the archive's
            # top folder is named after the file), then moved into place when complete
            tmp = os.path.join(self.directory, f".tmp-{os.getpid()}")
            os.makedirs(tmp, exist_ok=True)
            try:
                report = compile_package(self.ctx, os.path.join(tmp, PACKAGE))
                os.replace(os.path.join(tmp, PACKAGE), self.path)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                _remove_empty(self.directory, lock_path)   # a refused model leaves no trace
                raise
            shutil.rmtree(tmp, ignore_errors=True)
            report["package"] = self.path
            with open(os.path.join(self.directory, "compile.json"), "w") as f:
                json.dump({**self.identity, **report, "created": time.time()}, f, indent=1)
            return report


def _remove_empty(directory: str, lock_path: str) -> None:
    """Remove a cache directory that holds nothing but its lock file."""
    try:
        if set(os.listdir(directory)) <= {os.path.basename(lock_path)}:
            os.remove(lock_path)
            os.rmdir(directory)
    except OSError:
        pass


# -- what a package depends on ----------------------------------------------------------

def describe(ctx) -> tuple[str, dict]:
    """(the readable part of the cache directory's name, everything the digest covers)."""
    from couplescope.backends.native import torch_version

    spec, workload = ctx.spec, ctx.workload
    name = os.path.basename(workload.name) if hasattr(workload, "path") else workload.name
    device = ctx.device.split(":")[0]
    torch = torch_version() or "none"
    readable = "-".join([name, str(ctx.size), ctx.dtype, spec.layout, device, f"torch{torch}"])
    readable = re.sub(r"[^A-Za-z0-9.+_-]", "_", readable)
    identity = {"recipe": RECIPE, "model": workload.name, "model_source": model_source_digest(workload),
                "size": ctx.size, "dtype": ctx.dtype, "layout": spec.layout, "device": device,
                "seed": spec.seed, "torch": torch, "inputs": input_signature(ctx),
                "machine": platform.machine(), "cpu_flags": cpu_flags_digest(),
                "compiler_settings": compiler_settings()}
    return readable, identity


def compiler_settings() -> dict:
    """Inductor's settings from the environment (TORCHINDUCTOR_FREEZING=1, PyTorch's
    suggestion for CPU inference, and the like): they change the package, so they are part
    of its key. Where torch keeps its own caches is not."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith(("TORCHINDUCTOR_", "AOT_INDUCTOR_")) and "CACHE_DIR" not in k}


def model_source_digest(workload) -> str:
    """The digest of the file the model comes from: a user's own file, or the catalogue
    model's module (a changed model must not load a stale package)."""
    path = getattr(workload, "path", None) or getattr(sys.modules.get(type(workload).__module__), "__file__", None)
    if not path or not os.path.exists(path):
        return "unknown"
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def input_signature(ctx) -> list:
    """Per input of a call: name, shape, the host layout's element strides, dtype."""
    from couplescope.backends.host_memory import strides_for

    call = ctx.calls[0]
    return [[n, list(ctx.arrays[n].shape), list(strides_for(ctx.arrays[n], ctx.spec.layout)),
             str(ctx.arrays[n].dtype)] for n in call.inputs]


def cpu_flags_digest() -> str:
    """This CPU's instruction-set flags (Linux /proc/cpuinfo): AOTInductor compiles for the
    vector instructions it finds, so a cache shared between node types must tell them apart."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    flags = sorted(set(line.split(":", 1)[1].split()))
                    return hashlib.sha256(" ".join(flags).encode()).hexdigest()[:16]
    except OSError:
        pass
    return platform.processor() or "unknown"


# -- making a package ---------------------------------------------------------------------

def example_inputs(ctx) -> tuple:
    """The first call's inputs as the coupling hands them over: tensors over the host
    memory with the layout's strides (on the run's device). Every call of an iteration must
    have the same signature: a package is compiled for one."""
    from couplescope.backends.host_memory import HostTensors, strides_for

    signatures = {tuple((ctx.arrays[n].shape, strides_for(ctx.arrays[n], ctx.spec.layout),
                         str(ctx.arrays[n].dtype)) for n in call.inputs) for call in ctx.calls}
    if len(signatures) > 1:
        raise UsageError(f"{ctx.workload.name}: its calls pass inputs of different shapes; an "
                         "AOTInductor package is compiled for one set of input shapes")
    wrap = HostTensors(ctx.arrays, ctx.spec.layout)
    tensors = [wrap(n, ctx.arrays[n]) for n in ctx.calls[0].inputs]
    if ctx.device != "cpu":
        tensors = [t.to(ctx.device) for t in tensors]   # dense tensors keep their strides
    return tuple(tensors)


def compile_package(ctx, package_path: str) -> dict:
    """Export the eager model on the host-layout example inputs and compile it into
    `package_path`. Returns the model_compiled fields (status, seconds, export_seconds)."""
    import torch

    name = ctx.workload.name
    t0 = time.perf_counter()
    inputs = example_inputs(ctx)
    eager = ctx.eager   # the engine's: built once, already the reference's
    if ctx.device != "cpu":
        eager = eager.to(ctx.device)
    refuse_unrollable(name, eager, inputs)
    try:
        with torch.no_grad():
            exported = torch.export.export(eager, inputs)
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(export_refusal(name, exc)) from None
    t1 = time.perf_counter()
    keep_precompiled_headers()
    torch._inductor.aoti_compile_and_package(exported, package_path=package_path)
    t2 = time.perf_counter()
    return {"status": "compiled", "seconds": t2 - t0, "export_seconds": t1 - t0, "compiler": COMPILER}


def keep_precompiled_headers() -> None:
    """Have AOTInductor keep its precompiled headers in its compile cache, where they are
    reused by the next compile. Inductor puts them under `default_cache_dir()`, which it
    computes from the temporary directory when its module is imported and which ignores
    TORCHINDUCTOR_CACHE_DIR; a worker's temporary directory is its own and removed when it
    ends (couplescope.protocol.scratch), so every compile rebuilt the two headers: 15 s of a
    small model's 35-55 s compile on a 2-core machine (measured: 54.6 s, then 21.1 s for the
    next model once they are kept). They go in torch's compile cache (TORCHINDUCTOR_CACHE_DIR,
    which the worker keeps where torch would have it: /tmp/torchinductor_<user>), about 280
    MB, as they would outside couplescope. Private names, looked up and left alone if a
    torch release renames them."""
    try:
        from torch._inductor import codecache
        from torch._inductor.runtime.cache_dir_utils import cache_dir as inductor_cache
    except ImportError:
        return
    if hasattr(codecache, "_HEADER_DIR") and hasattr(codecache, "_HEADER_LOCK_DIR"):
        headers = os.path.join(inductor_cache(), "precompiled_headers")
        codecache._HEADER_DIR = headers
        codecache._HEADER_LOCK_DIR = os.path.join(headers, "locks")


def count_operators(module, inputs, limit: int) -> int:
    """Operators one eager call dispatches, counted up to limit + 1 (then it stops)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class OverLimit(Exception):
        pass

    class Counter(TorchDispatchMode):
        count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.count += 1
            if self.count > limit:
                raise OverLimit()
            return func(*args, **(kwargs or {}))

    counter = Counter()
    try:
        with torch.no_grad(), counter:
            module(*inputs)
    except OverLimit:
        pass
    return counter.count


def refuse_unrollable(name: str, module, inputs, limit: int = MAX_GRAPH_OPERATORS) -> None:
    """Refuse a model whose one call dispatches more operators than a graph should hold:
    Python loops over data, which tracing unrolls into the graph (StrideNet)."""
    count = count_operators(module, inputs, limit)
    if count > limit:
        raise UsageError(f"{name} cannot be exported as a graph: one call runs more than {limit:,} "
                         "operators (a Python loop over the input's elements, which torch.export "
                         "would unroll into the graph one step at a time); aoti and the compiled "
                         "bridge model need a forward made of tensor operations")


#: export errors whose cause has a name a user recognises
_HINTS = (
    (re.compile(r"data-dependent|GuardOnDataDependent|\.item\(\)", re.I),
     "its forward branches on a tensor's value (.item(), bool(tensor)), which a graph cannot "
     "do (torch.cond can)"),
)


def export_refusal(name: str, exc: BaseException) -> str:
    """One line: the model, the kind of problem, the export error's first line and where in
    the model's own code it was raised."""
    from couplescope.backends.base import essential_line

    text = f"{type(exc).__name__}: {exc}"
    first = (essential_line(str(exc)) or type(exc).__name__).split(".  ")[0]
    hint = next((h for pattern, h in _HINTS if pattern.search(text)), None)
    where = _model_frame(exc)
    parts = [f"{name} cannot be exported with torch.export"]
    if hint:
        parts.append(f": {hint}")
    parts.append(f" ({first[:200]}{f' at {where}' if where else ''})")
    return "".join(parts)


def _model_frame(exc: BaseException) -> str | None:
    """file:line in function of the deepest traceback frame outside torch: the model's own
    line that export could not follow."""
    import traceback

    import torch

    torch_dir = os.path.dirname(torch.__file__)
    here = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith((torch_dir, here)) and not f.filename.startswith("<")]
    if not frames:
        return None
    frame = frames[-1]
    return f"{os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}"
