"""GPU paths: device transfers, synchronised timing and CUDA Graph replay.

Two halves. Without CUDA (these run everywhere): every way of asking for a GPU is
refused with "needs a CUDA device", exit code 2 and no traceback, and importing the
engine or the cudagraph backend neither imports torch nor initialises CUDA. With CUDA
(marked `cuda`, skipped with a reason where torch.cuda.is_available() is False): real
runs on the device through the real CLI, with their checks against the eager reference.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from torch import nn

from conftest import FAST, run_cli
from couplescope.results.saved import iteration_records as records

HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device "
                                                        "(torch.cuda.is_available() is False)")
no_cuda_here = pytest.mark.skipif(HAS_CUDA, reason="checks the refusals of a machine without CUDA")


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# -- without CUDA: refusals -------------------------------------------------------------

@no_cuda_here
def test_list_says_cudagraph_needs_a_cuda_device(command):
    r = command("--list")
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("cudagraph "))
    assert "unavailable: needs a CUDA device:" in row
    device_row = next(line for line in r.stdout.splitlines() if line.startswith("cuda "))
    assert "needs a CUDA device" in device_row


REFUSALS = [
    (["--model", "deep-linear", "--backend", "cudagraph"],
     "couplescope: backend 'cudagraph' is unavailable: needs a CUDA device: "),
    (["--model", "deep-linear", "--backend", "torchscript,cudagraph"],
     "couplescope: backend 'cudagraph' is unavailable: needs a CUDA device: "),
    (["--model", "simplenet", "--device", "cuda"],
     "couplescope: device 'cuda' is unavailable: needs a CUDA device: "),
    (["--model", "simplenet", "--device", "cuda:0", "--backend", "bridge", "--pinned"],
     "couplescope: device 'cuda:0' is unavailable: needs a CUDA device: "),
    (["--preset", "deep-linear-cudagraph"],
     "couplescope: preset deep-linear-cudagraph: device 'cuda' is unavailable: needs a CUDA device: "),
    (["--preset", "toy-resnet-cudagraph"],
     "couplescope: preset toy-resnet-cudagraph: device 'cuda' is unavailable: needs a CUDA device: "),
]


@no_cuda_here
@pytest.mark.parametrize("args,start", REFUSALS, ids=[" ".join(a) for a, _ in REFUSALS])
def test_asking_for_a_gpu_without_one_exits_2_with_one_line(command, tmp_path, args, start):
    r = command(*args, "--export", tmp_path / "runs", *FAST)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert one_line(r.stderr).startswith(start), r.stderr
    assert "==" not in r.stdout  # no variant started
    assert not (tmp_path / "runs").exists()  # nothing half-written


@no_cuda_here
@pytest.mark.e2e
def test_worker_refuses_too_when_validation_was_skipped():
    """A spec that reaches a worker unvalidated (Session used directly) still gets the
    one-line usage failure, not an AssertionError from a CPU-only torch."""
    from couplescope.core.session import Session
    from couplescope.protocol.spec import RunSpec

    specs = [RunSpec(model="simplenet", backend="cudagraph", device="cuda", iterations=1,
                     profile_iterations=0),
             RunSpec(model="simplenet", backend="cudagraph", iterations=1, profile_iterations=0,
                     name="graph-on-cpu")]
    builder = Session(specs).run()
    for v in builder.variants.values():
        assert v.status == "failed" and v.error_kind == "usage", (v.error, v.error_kind)
        assert "needs a CUDA device" in v.error and "\n" not in v.error
    assert builder.exit_code() == 2


@pytest.mark.e2e
def test_pinned_on_the_cpu_changes_nothing(cli):
    """--pinned only concerns device copies: on the CPU the run is the ordinary one."""
    r = cli("--model", "simplenet", "--pinned", "--json", *FAST)
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)["variants"][0]
    assert v["spec"]["pinned"] is True and v["checks_passed"]
    assert all(set(it["phases"]) == {"marshal_in", "forward", "marshal_out"} for it in records(v))


def test_importing_engine_and_gpu_modules_touches_no_cuda():
    """The engine, the backends and the GPU helpers import without torch; with torch
    imported and the backend asked whether it can run, CUDA is still not initialised
    (torch.cuda.is_available() asks the driver without creating a context)."""
    code = (
        "import sys\n"
        "import couplescope.worker.engine, couplescope.backends.cudagraph, couplescope.backends.torchscript\n"
        "import couplescope.backends.transfer, couplescope.backends.devices, couplescope.backends.base\n"
        "print('torch' in sys.modules)\n"
        "import torch\n"
        "from couplescope import backends\n"
        "reason = backends.unavailable('cudagraph')\n"
        "print(torch.cuda.is_initialized())\n"
        "print(reason)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    torch_imported, initialised, reason = out.stdout.splitlines()
    assert torch_imported == "False"
    assert initialised == "False"
    assert (reason == "None") == HAS_CUDA
    if not HAS_CUDA:
        assert reason.startswith("needs a CUDA device: ")


def test_capture_failure_message_names_the_model_and_the_real_cause(tmp_path):
    """The one-line reason comes from the first error of the chain, and from the error
    line of a TorchScript interpreter traceback, not from its header."""
    from couplescope.backends.cudagraph import CaptureError, capture_failure

    scripted = torch.jit.script(WrongMatmul())
    try:
        scripted(torch.ones(2, 2))
    except RuntimeError as exc:
        inner = exc
    assert str(inner).startswith("The following operation failed in the TorchScript interpreter")
    try:
        try:
            raise inner
        finally:  # what torch.cuda.graph's exit does after a failed capture
            raise RuntimeError("CUDA error: operation failed due to a previous error during capture\n"
                               "CUDA kernel errors might be asynchronously reported")
    except RuntimeError as outer:
        err = capture_failure("deep-linear", outer)
    assert isinstance(err, CaptureError)
    text = str(err)
    assert "\n" not in text
    assert text.startswith("CUDA Graph capture of model deep-linear failed: mat1 and mat2 shapes "
                           "cannot be multiplied (2x2 and 3x3); ")
    assert "must not synchronise with the host" in text


class WrongMatmul(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ torch.ones(3, 3)


# -- with CUDA: real runs on the device -------------------------------------------------

class SyncsInForward(nn.Module):
    """Correct on every backend that does not capture: `.item()` reads a device value on
    the host, which synchronises, which CUDA Graph capture forbids."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        largest = x.abs().max().item()
        return x * 2.0 + 0.0 * largest


class MatmulChain(nn.Module):
    """Few kernels, much GPU work (float64 matmuls): the launch cost is tiny beside the
    device time, so a forward phase measured at its launch cost would be far too short."""

    def __init__(self, n: int, depth: int = 8) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.weight = nn.Parameter(torch.randn(n, n, generator=gen, dtype=torch.float64) / n ** 0.5,
                                   requires_grad=False)
        self.depth = depth

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.depth):
            x = torch.tanh(x @ self.weight)
        return x


def run_json(*args):
    r = run_cli(*args, "--json", "--telemetry-hz", "0", timeout=900)
    doc = json.loads(r.stdout) if r.stdout.strip() else None
    return r, doc


def timed(variant):
    return [it for it in records(variant) if not it["warmup"] and not it["profiled"]]


def by_backend(doc):
    return {v["spec"]["backend"]: v for v in doc["variants"]}


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("pinned", [False, True], ids=["pageable", "pinned"])
@pytest.mark.parametrize("model,size", [("simplenet", None), ("cgdrag", 64)])
def test_device_transfers_pass_their_checks(model, size, pinned):
    args = ["--model", model, "--device", "cuda", "--backend", "torchscript,bridge", *FAST]
    args += ["--size", str(size)] if size else []
    args += ["--pinned"] if pinned else []
    r, doc = run_json(*args)
    assert r.returncode == 0, r.stderr
    for v in doc["variants"]:
        assert v["checks_passed"], (v["name"], v["error"])
        assert v["spec"]["device"] == "cuda" and v["spec"]["pinned"] == pinned
        for it in timed(v):
            assert {"marshal_in", "h2d", "forward", "d2h"} <= set(it["phases"]), it["phases"]
            assert all(it["phases"][p] > 0 for p in ("h2d", "forward", "d2h"))
    # FTorch: the result is copied straight into the host array, so no marshal_out on a GPU
    assert all("marshal_out" not in it["phases"] for it in timed(by_backend(doc)["torchscript"]))


@pytest.mark.cuda
@requires_cuda
def test_pinned_host_arrays_are_page_locked_copies():
    import numpy as np

    from couplescope.backends.devices import page_locked

    host = {"x": np.asfortranarray(np.arange(12.0).reshape(3, 4)), "y": np.zeros((5,), np.float32)}
    pinned = page_locked(host)
    for name, a in host.items():
        p = pinned[name]
        assert torch.from_numpy(p).is_pinned()
        assert p.shape == a.shape and p.dtype == a.dtype and np.array_equal(p, a)
        assert p.flags.f_contiguous == a.flags.f_contiguous
        assert p.ctypes.data != a.ctypes.data


@pytest.mark.cuda
@requires_cuda
def test_phases_are_device_true(tmp_path):
    """Phases add up to no more than the call, and forward lasts as long as the GPU works
    (CUDA events around the same module), not as long as its launches take."""
    n = 1024
    path = tmp_path / "chain.pt"
    torch.jit.save(torch.jit.script(MatmulChain(n)), str(path))
    r, doc = run_json("--model", path, "--input-shape", f"{n},{n}", "--dtype", "float64",
                      "--device", "cuda", "--warmup", "2", "--iterations", "5",
                      "--profile-iterations", "0")
    assert r.returncode == 0, r.stderr
    v = doc["variants"][0]
    assert v["checks_passed"]
    for it in timed(v):
        assert it["phases"]["forward"] > 0
        assert sum(it["phases"].values()) <= it["seconds"] * (1 + 1e-9) + 1e-7, it
    forward = sorted(it["phases"]["forward"] for it in timed(v))[len(timed(v)) // 2]

    module = torch.jit.load(str(path), map_location="cuda").eval()
    x = torch.rand(n, n, dtype=torch.float64, device="cuda").t()  # the host's column-major strides
    gpu = []
    with torch.inference_mode():
        for _ in range(3):
            module(x)
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            module(x)
            end.record()
            end.synchronize()
            gpu.append(start.elapsed_time(end) / 1000.0)
    gpu_median = sorted(gpu)[len(gpu) // 2]
    assert forward >= 0.5 * gpu_median, (forward, gpu_median)


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("model,size,extra", [("deep-linear", 250, []), ("toy-resnet", 16, []),
                                              ("toy-resnet", 16, ["--pinned"]), ("cgdrag", 64, [])],
                         ids=["deep-linear", "toy-resnet", "toy-resnet-pinned", "cgdrag-two-graphs"])
def test_graph_replay_passes_the_checks(model, size, extra):
    r, doc = run_json("--model", model, "--size", str(size), "--device", "cuda",
                      "--backend", "torchscript,cudagraph", *FAST, *extra)
    assert r.returncode == 0, r.stderr
    graph = by_backend(doc)["cudagraph"]
    assert graph["status"] == "finished" and graph["checks_passed"], graph["error"]
    assert graph["load_seconds"] > 0  # load, warm-up and capture
    for it in timed(graph):
        assert set(it["phases"]) == {"marshal_in", "h2d", "forward", "d2h"}, it["phases"]
        assert it["max_rel_error"] <= graph["model"]["tolerance"]


@pytest.mark.cuda
@requires_cuda
def test_graph_recaptured_every_call_with_reload():
    r, doc = run_json("--model", "simplenet", "--device", "cuda", "--backend", "cudagraph",
                      "--reload-every-call", *FAST)
    assert r.returncode == 0, r.stderr
    v = doc["variants"][0]
    assert v["checks_passed"] and all("load" in it["phases"] for it in timed(v))


@pytest.mark.cuda
@requires_cuda
def test_capture_failure_is_one_line_and_the_run_goes_on(tmp_path):
    path = tmp_path / "syncs.pt"
    torch.jit.save(torch.jit.script(SyncsInForward()), str(path))
    r, doc = run_json("--model", path, "--input-shape", "4,4", "--dtype", "float32",
                      "--device", "cuda", "--backend", "cudagraph,torchscript", *FAST)
    assert r.returncode == 1, r.stderr  # a variant broke; no bad input
    graph, direct = by_backend(doc)["cudagraph"], by_backend(doc)["torchscript"]
    assert graph["status"] == "failed" and graph["error_kind"] == "error"
    assert graph["error"].startswith(f"CUDA Graph capture of model {path} failed: "), graph["error"]
    assert "\n" not in graph["error"]
    assert direct["status"] == "finished" and direct["checks_passed"]  # the run went on
    assert f"couplescope: {graph['name']}: CUDA Graph capture of model" in r.stderr


@pytest.mark.cuda
@requires_cuda
def test_cudagraph_needs_a_cuda_device_argument(cli):
    r = cli("--model", "simplenet", "--backend", "cudagraph", *FAST)
    assert r.returncode == 2
    assert "needs --device cuda or cuda:N" in one_line(r.stderr)
    count = torch.cuda.device_count()
    r = cli("--model", "simplenet", "--device", f"cuda:{count}", *FAST)
    assert r.returncode == 2
    assert f"only {count} CUDA device" in one_line(r.stderr)


@pytest.mark.cuda
@requires_cuda
def test_row_major_misread_fails_on_the_gpu_too():
    r, doc = run_json("--model", "stride", "--size", "16", "--layout", "c", "--device", "cuda",
                      "--backend", "torchscript,cudagraph", *FAST)
    assert r.returncode == 1
    assert all(not v["checks_passed"] for v in doc["variants"])


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("preset", ["deep-linear-cudagraph", "toy-resnet-cudagraph"])
def test_gpu_presets_run_and_pass(preset):
    r, doc = run_json("--preset", preset, *FAST)
    assert r.returncode == 0, r.stderr
    assert {v["spec"]["backend"] for v in doc["variants"]} == {"torchscript", "cudagraph"}
    assert all(v["checks_passed"] for v in doc["variants"])
