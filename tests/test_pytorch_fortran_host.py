"""The pytorch-fortran host: the user's pytorch-fortran, called from a Fortran driver of ours (issue 32).

Everywhere: how pytorch-fortran is found (--pytorch-fortran-dir, then pytorch_fort_proxy_DIR,
then CMAKE_PREFIX_PATH; its C++ proxy's package beside it), the one-line refusals, what
the generated program times in each of its forms, and the first step's check when a
library gives no gradients. Where pytorch-fortran is installed
(COUPLESCOPE_PYTORCH_FORTRAN_DIR names the prefix): real runs, inference and training,
checked, and the build reused.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile

import numpy as np
import pytest

from conftest import FAST, run_cli
from couplescope.backends.hosts import pytorch_fortran as pytorch_fortran_host
from couplescope.backends.hosts.driver import pytorch_fortran_program as program
from couplescope.backends.hosts.driver.pytorch_fortran_install import find_configs, why_not_found
from couplescope.protocol.spec import RunSpec
from couplescope.results.saved import iteration_records as records

PYTORCH_FORTRAN = os.environ.get("COUPLESCOPE_PYTORCH_FORTRAN_DIR", "")
needs_pytorch_fortran = pytest.mark.skipif(
    not PYTORCH_FORTRAN, reason="no pytorch-fortran install named: set COUPLESCOPE_PYTORCH_FORTRAN_DIR to its "
                                "prefix to run the pytorch-fortran host for real")
needs_fortran = pytest.mark.skipif(shutil.which("gfortran") is None or shutil.which("cmake") is None,
                                   reason="needs gfortran and cmake (apt-get install gfortran cmake)")
ENV_NAMES = ("pytorch_fort_proxy_DIR", "pytorch_proxy_DIR", "CMAKE_PREFIX_PATH")
TRAIN = ("--task", "train", "--train-call", "pytorch-fortran")


def fake_install(root, proxy=True):
    """A prefix laid out as pytorch-fortran's make scripts install it (lib/pytorch_fort_proxy/
    and lib/pytorch_proxy/, each with its package config): enough for discovery, which only
    reads the file system."""
    for name in ("pytorch_fort_proxy", *(("pytorch_proxy",) if proxy else ())):
        folder = root / "lib" / name
        folder.mkdir(parents=True)
        (folder / f"{name}-config.cmake").write_text(f"include(${{SELF_DIR}}/{name}.cmake)\n")
    return root


@pytest.fixture
def no_pytorch_fortran_env(monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


def test_it_is_found_from_the_option_then_its_package_dir_then_the_prefix_path(tmp_path, monkeypatch,
                                                                               no_pytorch_fortran_env):
    given, env_dir, prefix = (fake_install(tmp_path / n) for n in ("given", "env", "prefix"))
    assert find_configs() == (None, None, "")
    monkeypatch.setenv("CMAKE_PREFIX_PATH", f"/nowhere{os.pathsep}{prefix}")
    assert find_configs() == (str(prefix / "lib/pytorch_fort_proxy"), str(prefix / "lib/pytorch_proxy"),
                              "CMAKE_PREFIX_PATH")
    monkeypatch.setenv("pytorch_fort_proxy_DIR", str(env_dir / "lib/pytorch_fort_proxy"))   # the folder itself
    assert find_configs()[:2] == (str(env_dir / "lib/pytorch_fort_proxy"), str(env_dir / "lib/pytorch_proxy"))
    spec = RunSpec(model="simplenet", host="pytorch-fortran", pytorch_fortran_dir=str(given))   # a prefix
    assert find_configs(spec) == (str(given / "lib/pytorch_fort_proxy"), str(given / "lib/pytorch_proxy"),
                                  f"--pytorch-fortran-dir {given}")


def test_an_install_without_its_cxx_proxy_says_which_package_is_missing(tmp_path, no_pytorch_fortran_env):
    prefix = fake_install(tmp_path / "half", proxy=False)
    spec = RunSpec(model="simplenet", host="pytorch-fortran", pytorch_fortran_dir=str(prefix))
    assert why_not_found(spec) == (f"pytorch-fortran's pytorch_proxy-config.cmake (its C++ proxy library) is not "
                                   f"under {prefix}, beside pytorch_fort_proxy-config.cmake; set pytorch_proxy_DIR")


def test_without_it_the_host_is_refused_in_one_line_and_listed_with_why(no_pytorch_fortran_env):
    r = run_cli("--model", "simplenet", "--host", "pytorch-fortran", *FAST)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("couplescope: --host pytorch-fortran is unavailable: pytorch-fortran not found: "
                                "pass --pytorch-fortran-dir PREFIX or set pytorch_fort_proxy_DIR; --host native "
                                "runs without it")
    listed = run_cli("--list", env={"COLUMNS": "200"})
    words = re.sub(r"- ", "-", " ".join(listed.stdout.split()))   # the table wraps its last column, at hyphens too
    assert "pytorch-fortran unavailable the user's pytorch-fortran" in words
    assert "unavailable: pytorch-fortran not found: pass --pytorch-fortran-dir PREFIX" in words


def test_a_dir_without_pytorch_fortran_in_it_says_where_it_looked(tmp_path, no_pytorch_fortran_env):
    r = run_cli("--model", "simplenet", "--host", "pytorch-fortran", "--pytorch-fortran-dir", tmp_path, *FAST)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert f"no pytorch_fort_proxy-config.cmake under --pytorch-fortran-dir {tmp_path}" in r.stderr


def test_its_option_applies_to_its_host_only(no_pytorch_fortran_env):
    r = run_cli("--model", "simplenet", "--pytorch-fortran-dir", "/opt/pytorch-fortran", *FAST)
    assert r.returncode == 2 and "--pytorch-fortran-dir applies to --host pytorch-fortran" in r.stderr


@needs_fortran
@pytest.mark.parametrize("args, words", [
    (("--device", "cuda"), "--host pytorch-fortran makes CPU calls only so far, not --device cuda"),
    (("--dtype", "float16"), "real32 and real64 arrays (and integers), not --dtype float16"),
    (("--layout", "c"), "pytorch-fortran has no layout argument"),
    (("--task", "train"), "its torch_module's train: --train-call pytorch-fortran, not ftorch-operators"),
    ((*TRAIN, "--optimizer", "adam"), "one optimizer, create_optimizer_sgd, not --optimizer adam"),
    ((*TRAIN, "--model", "cgdrag"), "not adam (cgdrag's own; pass --optimizer sgd)"),
    ((*TRAIN, "--loss", "l1"), "its train makes the mse loss (mse_loss), not --loss l1"),
    ((*TRAIN, "--backend", "mpi"), "data-parallel training needs the gradients averaged"),
    (("--backend", "bridge"), "backend 'bridge' runs on the native or python or forpy host only, "
                              "not --host pytorch-fortran"),
])
def test_what_pytorch_fortran_cannot_make_is_refused_in_one_line(tmp_path, no_pytorch_fortran_env, args, words):
    prefix = fake_install(tmp_path / "pytorch-fortran")
    r = run_cli("--model", "simplenet", "--host", "pytorch-fortran", "--pytorch-fortran-dir", prefix, *args, *FAST)
    assert r.returncode == 2, r.stderr
    assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_the_host_serves_the_torchscript_backends_calls_and_trains_with_its_own_call():
    from couplescope import backends

    host = pytorch_fortran_host.HOST
    assert host.served(backends.get("torchscript")) == ("infer", "train")
    assert host.served(backends.get("bridge")) == ()
    assert not host.default_candidate and host.train_calls == ("pytorch-fortran",)


def timed_statements(source: str) -> list[str]:
    """Every statement of the generated `iteration` between its first and last clock read."""
    body = source.split("  subroutine iteration(k)", 1)[1].split("  end subroutine iteration", 1)[0]
    lines = [line.strip() for line in body.replace("&\n", "").splitlines() if line.strip()]
    clocks = [i for i, line in enumerate(lines) if line.startswith("call system_clock(")]
    return lines[clocks[0]:clocks[-1] + 1]


F32_1 = program.CallSignature((program.Array("float32", 1),), program.Array("float32", 1))
F64_2x3 = program.CallSignature((program.Array("float64", 2),) * 3, program.Array("float64", 2))
#: pytorch-fortran's calls, and nothing else, may stand between two clock reads
LIBRARY_CALL = re.compile(r"call (system_clock|model%(load|forward|train)|in\d+%(add_array|clear)"
                          r"|out\d+%to_array)\(")


@pytest.mark.parametrize("sig, calls", [
    (program.Signature((F32_1,)),
     ["call in1%add_array(x1_1)", "call model%forward(in1, out1)", "call out1%to_array(yp1)", "call in1%clear()"]),
    (program.Signature((F32_1,), grad_mode="inference"),
     ["call in1%add_array(x1_1)", "call model%forward(in1, out1, flags=module_use_inference_mode)",
      "call out1%to_array(yp1)", "call in1%clear()"]),
    (program.Signature((F64_2x3, F64_2x3), reload=True),
     [s for c in (1, 2) for s in ("call model%load(trim(model_path))",
                                  *(f"call in{c}%add_array(x{c}_{j})" for j in (1, 2, 3)),
                                  f"call model%forward(in{c}, out{c})", f"call out{c}%to_array(yp{c})",
                                  f"call in{c}%clear()")]),
    (program.Signature((F32_1,), task="train"), ["call model%train(in1, tg1, loss1)"]),
    (program.Signature((F64_2x3, F64_2x3), task="train"),
     ["call model%train(in1, tg1, loss1)", "call model%train(in2, tg2, loss2)"]),
], ids=["infer", "infer-inference-mode", "two-calls-reload", "train", "train-two-calls"])
def test_between_the_clock_reads_there_are_only_pytorch_fortrans_calls(sig, calls):
    """The issue's rule: the timed region holds the user's library and their compiler's code,
    and nothing of ours but the clock reads; each phase's calls in the order its examples
    make them, and the result's copy into the host array after the last clock read."""
    source = program.program(sig)
    timed = timed_statements(source)
    assert all(LIBRARY_CALL.match(s) for s in timed), [s for s in timed if not LIBRARY_CALL.match(s)]
    assert [s for s in timed if not s.startswith("call system_clock")] == calls
    per_call = len(sig.phases) + 1   # clock reads per workload call
    assert sum(s.startswith("call system_clock") for s in timed) == per_call * len(sig.calls)
    after = source.split("  subroutine iteration(k)", 1)[1].split("  end subroutine iteration", 1)[0]
    after = after.rsplit("call system_clock(", 1)[1]
    if sig.task == "train":
        assert "call in1%add_array(x1_1)" in source.split("case (\"load\")", 1)[1].split("case (", 1)[0]
        assert "step_loss = real(loss1, c_double)" in after
    else:
        assert [line.strip() for line in after.splitlines() if "= yp" in line] == \
            [f"y{c} = yp{c}" for c in range(1, len(sig.calls) + 1)]


def test_the_arrays_are_declared_with_the_tensors_dimensions_reversed():
    """pytorch-fortran reads a Fortran array x(a, b) as the tensor (b, a): its users declare
    the arrays reversed, and so does the driver (over memory the host lays out row-major)."""
    source = program.program(program.Signature((F64_2x3,)))
    assert "call c_f_pointer(at(off_x1_1), x1_1, shape_x1_1(2:1:-1))" in source
    assert "call c_f_pointer(at(off_y1), y1, shape_y1(2:1:-1))" in source
    assert "layout_x1_1" not in source   # FTorch's layout argument: pytorch-fortran has none


def test_a_phase_one_host_does_not_make_is_a_dash_beside_the_other_hosts_phases():
    """`--host native,pytorch-fortran --task train`: pytorch-fortran's train is one call, the
    native host's step five phases; neither is shown as 0 ns where the host has no such
    phase, and the whole call still compares, paired by round."""
    from couplescope.frontends.cli.host_phases import host_phase_table
    from couplescope.results.builder import VariantResult
    from couplescope.results.call_columns import CallColumns
    from couplescope.results.phase_pairs import host_comparison

    def variant(name, host, phases):
        v = VariantResult(name)
        v.spec = {"model": "simplenet", "task": "train", "host": host, "name": name}
        v.calls = CallColumns.of_records(
            {"kind": "timed", "index": 3 * (r - 1) + i + 1, "round": r, "seconds": sum(phases.values()) * (1 + r / 100),
             "phases": phases, "max_rel_error": 0.0, "passed": True, "error": None} for r in (1, 2, 3) for i in range(3))
        return v

    native = variant("replica", "native", {"zero_grad": 1e-6, "forward": 17e-6, "loss": 15e-6,
                                           "backward": 38e-6, "step": 5e-6})
    real = variant("real", "pytorch-fortran", {"train": 70e-6})
    by_host = host_comparison([{"name": "real", "baseline": "real"}, {"name": "replica"}],
                              {"real": real, "replica": native})
    rows = {r["phase"]: r["cells"] for r in by_host["phases"]}
    assert rows["train"]["replica"] == {"median": None, "absent": True}
    assert rows["forward"]["real"] == {"median": None, "absent": True}
    assert rows["call"]["replica"]["ratio"] == pytest.approx(76 / 70) and rows["call"]["replica"]["low"]
    text = host_phase_table(by_host, {"real": "pytorch-fortran", "replica": "native"})
    lines = {line.split()[0]: line.split()[1:] for line in text.splitlines()[3:-1]}
    assert lines["forward"] == ["—", "17.0", "µs", "—"] and lines["train"] == ["70.0", "µs", "—", "—"]
    assert " 0 ns" not in text and text.endswith("—: that host has no such phase")


def test_a_driver_that_aborts_on_an_uncaught_exception_is_said_in_its_exceptions_words(tmp_path):
    """pytorch-fortran rethrows libtorch's exceptions (after a printf that is lost with the
    process's stdout buffer): the C++ runtime prints "what(): ..." and aborts, and the
    backtraces after it (libtorch's frames, gfortran's) run past the lines kept."""
    from couplescope.backends.hosts.driver.process import DriverEnded, DriverProcess

    script = tmp_path / "driver.sh"
    script.write_text("#!/bin/sh\necho 'couplescope: ready'\nread command\n"
                      "echo \"terminate called after throwing an instance of 'c10::Error'\" >&2\n"
                      "echo '  what():  Attempted to read a PyTorch file with version 99' >&2\n"
                      "for i in $(seq 60); do echo \"frame #$i: in ???\" >&2; done\n"
                      "echo 'Backtrace for this error:' >&2\nkill -ABRT $$\n")
    script.chmod(0o755)
    driver = DriverProcess([str(script)], dict(os.environ), "the pytorch-fortran driver")
    with pytest.raises(DriverEnded) as ended:
        driver.ask("load", "loaded")
    driver.end()
    assert str(ended.value) == ("the pytorch-fortran driver stopped (signal 6): Attempted to read a PyTorch file "
                                "with version 99")


# -- the first step's check, when the library gives no gradients -----------------------------

class WeightsOnly:
    """What the pytorch-fortran coupling hands the first step's check: the weights after the
    step (here the python host's real ones, or ones off by `error`), no gradients, and why."""

    no_gradients = "this library has no call that reads a gradient"

    def __init__(self, coupling, error: float = 0.0, say_why: bool = True) -> None:
        self.coupling, self.error = coupling, error
        if not say_why:
            self.no_gradients = None

    def state(self):
        return {name: (weight * (1 + self.error), None) for name, (weight, _) in self.coupling.state().items()}


@pytest.mark.parametrize("error, say_why, passed, words", [
    (0.0, True, True, "the first step's weights equal eager PyTorch's exactly; gradients not compared: "
                      "this library has no call that reads a gradient"),
    (1e-3, True, False, "the first step's weight of fc.weight differs from eager PyTorch's"),
    (0.0, False, False, "fc.weight has no gradient"),
], ids=["weights-right", "weights-wrong", "no-gradients-unexplained"])
def test_a_coupling_without_gradients_has_its_first_steps_weights_checked(error, say_why, passed, words):
    """A real first step (SimpleNet on the python host), its weights read back as pytorch-
    fortran's save gives them: right weights pass, saying the gradients were not compared;
    wrong ones fail; a coupling missing gradients without saying why still fails."""
    from couplescope import backends
    from couplescope.worker.engine import prepare

    import torch

    spec = RunSpec(model="simplenet", host="python", task="train", iterations=1, profile_iterations=0)
    # a worker's thread trains with autograd on; a test process may have had it turned off
    with tempfile.TemporaryDirectory() as tmp, torch.enable_grad():
        prepared = prepare(spec, backends.get(spec.backend), tmp)
        prepared.coupling.load()
        try:
            prepared.training.fill_next()
            prepared.coupling.call()
            check = prepared.training.check_first_step(WeightsOnly(prepared.coupling, error, say_why))
        finally:
            prepared.coupling.close()
    assert check["passed"] is passed and words in check["message"], check


# -- with a real pytorch-fortran ---------------------------------------------------------------

def _cache_env(tmp_path) -> dict:
    return {"COUPLESCOPE_CACHE": os.environ.get("COUPLESCOPE_CACHE", str(tmp_path / "cache"))}


@needs_pytorch_fortran
@pytest.mark.e2e
def test_simplenet_through_the_users_pytorch_fortran_passes_and_reuses_its_build(tmp_path):
    env = _cache_env(tmp_path)
    args = ("--model", "simplenet", "--host", "pytorch-fortran", "--pytorch-fortran-dir", PYTORCH_FORTRAN,
            *FAST, "--json")
    first = run_cli(*args, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    again = run_cli(*args, env=env, timeout=600)
    assert again.returncode == 0 and "driver built in" not in again.stderr, again.stderr
    assert "pytorch-fortran's forward has no no_grad guard" in again.stderr
    variant = json.loads(again.stdout)["variants"][0]
    assert variant["verdict"] == "passed" and set(variant["phases"]) == {"marshal_in", "forward", "marshal_out"}
    build = variant["host_build"]
    assert build["status"] == "cached" and build["library"]["library"] == "pytorch-fortran"
    assert build["library"]["compiler_id"] and build["library"]["torch_version"]
    assert build["library"]["forward_flags"] == "none (autograd on)"


@needs_pytorch_fortran
@pytest.mark.e2e
def test_arrays_of_rank_two_reach_the_model_unchanged_through_pytorch_fortran(tmp_path):
    """cgdrag's inputs are (columns, levels) with columns != levels: read the wrong way
    round, its forward would refuse them or its check fail."""
    r = run_cli("--model", "cgdrag", "--size", "16", "--host", "pytorch-fortran", "--pytorch-fortran-dir",
                PYTORCH_FORTRAN, "--grad-mode", "inference", *FAST, "--json", env=_cache_env(tmp_path), timeout=600)
    assert r.returncode == 0, r.stderr
    variant = json.loads(r.stdout)["variants"][0]
    assert variant["verdict"] == "passed" and variant["host_build"]["library"]["forward_flags"] == \
        "module_use_inference_mode"


@needs_pytorch_fortran
@pytest.mark.e2e
def test_training_through_the_users_pytorch_fortran_checks_its_first_step_and_learns(tmp_path):
    r = run_cli("--model", "simplenet", "--host", "pytorch-fortran", "--pytorch-fortran-dir", PYTORCH_FORTRAN,
                *TRAIN, "--iterations", "10000", "--warmup", "1", "--profile-iterations", "0",
                "--telemetry-hz", "0", "--json", env=_cache_env(tmp_path), timeout=900)
    assert r.returncode == 0, r.stderr
    variant = json.loads(r.stdout)["variants"][0]
    training = variant["training"]
    check = training["gradient_check"]
    assert check["passed"] and check["max_rel_error"] <= 1e-4 and "gradients not compared" in check["message"]
    assert training["final_check"]["passed"], training["final_check"]
    losses = [it["loss"] for it in records(variant)]
    assert losses[-1] < 1e-3 * losses[0]
    assert set(variant["phases"]) == {"train"} and variant["phases"]["train"]["median"] > 0


@needs_pytorch_fortran
@pytest.mark.e2e
def test_a_model_saved_through_pytorch_fortran_is_its_save(tmp_path):
    """--save-model is pytorch-fortran's own save: the file it writes loads in torch and holds
    the trained weights."""
    import torch

    saved = tmp_path / "trained.pt"
    r = run_cli("--model", "simplenet", "--host", "pytorch-fortran", "--pytorch-fortran-dir", PYTORCH_FORTRAN,
                *TRAIN, "--iterations", "50", *FAST[:2], *FAST[4:], "--save-model", saved,
                env=_cache_env(tmp_path), timeout=600)
    assert r.returncode == 0, r.stderr
    weight = torch.jit.load(str(saved)).fc.weight.detach().numpy()
    assert weight.shape == (5, 5) and not np.allclose(weight, 2 * np.eye(5))   # trained off its start, 2I


@needs_pytorch_fortran
def test_a_model_the_users_libtorch_cannot_load_is_one_line_naming_both_versions(tmp_path):
    """The real driver given a TorchScript file of a format no libtorch reads (its version
    record set to 99): the worker's one line names the pytorch-fortran, its libtorch and
    libtorch's own words."""
    import zipfile

    from couplescope import backends
    from couplescope.protocol.errors import UsageError
    from couplescope.worker.engine import prepare

    spec = RunSpec(model="simplenet", host="pytorch-fortran", pytorch_fortran_dir=PYTORCH_FORTRAN, iterations=1,
                   profile_iterations=0)
    prepared = prepare(spec, backends.get(spec.backend), str(tmp_path))
    try:
        path = prepared.coupling.ctx.torchscript_path
        with zipfile.ZipFile(path) as z:
            members = [(info, z.read(info)) for info in z.infolist()]
        with zipfile.ZipFile(path, "w") as z:
            for info, data in members:
                z.writestr(info, b"99\n" if info.filename.endswith("/version") else data)
        with pytest.raises(UsageError) as refused:
            prepared.coupling.load()
    finally:
        prepared.coupling.close()
    words = str(refused.value)
    assert "\n" not in words and words.startswith("the pytorch-fortran at ") and "(libtorch 2." in words
    assert "cannot load simplenet.pt (saved by torch " in words, words
    assert re.search(r"\): \S.*Attempted to read a PyTorch file with version 99, but the maximum supported version "
                     r"for reading is \d+", words), words   # libtorch's words, not the backtrace's
