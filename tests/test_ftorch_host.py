"""The ftorch host: the user's FTorch, called from a Fortran driver of ours (issue 32).

Everywhere: how FTorch is found (--ftorch-dir, then FTorch_DIR, then CMAKE_PREFIX_PATH),
the one-line refusals, what the generated program times, and the driver build's cache (a
real gfortran and CMake build, skipped without them). Where FTorch is installed
(COUPLESCOPE_FTORCH_DIR names the prefix): real runs, inference and training, checked.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest

from conftest import FAST, run_cli
from couplescope.backends.hosts import ftorch as ftorch_host
from couplescope.backends.hosts.driver import build as driver_build
from couplescope.backends.hosts.driver import ftorch_program as program
from couplescope.backends.hosts.driver.ftorch_install import find_config
from couplescope.protocol.spec import RunSpec

FTORCH = os.environ.get("COUPLESCOPE_FTORCH_DIR", "")
needs_ftorch = pytest.mark.skipif(not FTORCH, reason="no FTorch install named: set COUPLESCOPE_FTORCH_DIR "
                                                     "to its prefix to run the ftorch host for real")
needs_fortran = pytest.mark.skipif(shutil.which("gfortran") is None or shutil.which("cmake") is None,
                                   reason="needs gfortran and cmake (apt-get install gfortran cmake)")
ENV_NAMES = ("FTorch_DIR", "CMAKE_PREFIX_PATH")


def fake_install(root, layout="lib/cmake/FTorch"):
    """A prefix holding an FTorchConfig.cmake where FTorch's `cmake --install` puts it:
    enough for discovery, which only reads the file system."""
    folder = root / layout
    folder.mkdir(parents=True)
    (folder / "FTorchConfig.cmake").write_text("# FTorch's package config\n")
    return root


@pytest.fixture
def no_ftorch_env(monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


def test_ftorch_is_found_from_the_option_then_ftorch_dir_then_the_prefix_path(tmp_path, monkeypatch,
                                                                              no_ftorch_env):
    given, env_dir, prefix = (fake_install(tmp_path / n) for n in ("given", "env", "prefix"))
    assert find_config() == (None, "")
    monkeypatch.setenv("CMAKE_PREFIX_PATH", f"/nowhere{os.pathsep}{prefix}")
    assert find_config()[0] == str(prefix / "lib/cmake/FTorch")
    monkeypatch.setenv("FTorch_DIR", str(env_dir / "lib/cmake/FTorch"))   # the folder itself
    assert find_config()[0] == str(env_dir / "lib/cmake/FTorch")
    spec = RunSpec(model="simplenet", host="ftorch", ftorch_dir=str(given))   # a prefix
    assert find_config(spec) == (str(given / "lib/cmake/FTorch"), f"--ftorch-dir {given}")
    lib64 = fake_install(tmp_path / "lib64prefix", "lib64/cmake/FTorch")
    assert find_config(RunSpec(model="simplenet", ftorch_dir=str(lib64)))[0] == str(lib64 / "lib64/cmake/FTorch")


def test_without_ftorch_the_host_is_refused_in_one_line_and_listed_with_why(no_ftorch_env):
    r = run_cli("--model", "simplenet", "--host", "ftorch", *FAST)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("couplescope: --host ftorch is unavailable: FTorch not found: pass "
                                "--ftorch-dir PREFIX or set FTorch_DIR; --host native runs without it")
    listed = run_cli("--list", env={"COLUMNS": "200"})
    row = next(line for line in listed.stdout.splitlines() if line.startswith("ftorch "))
    assert "unavailable" in row and "FTorch not found" in row


def test_an_ftorch_dir_without_ftorch_in_it_says_where_it_looked(tmp_path, no_ftorch_env):
    r = run_cli("--model", "simplenet", "--host", "ftorch", "--ftorch-dir", tmp_path, *FAST)
    assert r.returncode == 2
    assert f"no FTorchConfig.cmake under --ftorch-dir {tmp_path}" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_ftorch_options_apply_to_the_ftorch_host_only(no_ftorch_env):
    r = run_cli("--model", "simplenet", "--ftorch-dir", "/opt/ftorch", *FAST)
    assert r.returncode == 2 and "--ftorch-dir applies to --host ftorch" in r.stderr


@needs_fortran
@pytest.mark.parametrize("args, words", [
    (("--device", "cuda"), "--host ftorch makes CPU calls only so far, not --device cuda"),
    (("--dtype", "float16"), "not --dtype float16"),
    (("--grad-mode", "inference"), "no --grad-mode inference (it runs under no_grad)"),
    (("--task", "train", "--loss", "l1"), "not --loss l1"),
    (("--task", "train", "--train-call", "pytorch-fortran"), "--train-call ftorch-operators or ftorch-mse"),
    (("--backend", "bridge"), "backend 'bridge' runs on the native or python or forpy host only, not --host ftorch"),
    (("--backend", "mpi", "--task", "train"), "data-parallel training"),
])
def test_what_ftorch_cannot_make_is_refused_in_one_line(tmp_path, no_ftorch_env, args, words):
    prefix = fake_install(tmp_path / "ftorch")
    r = run_cli("--model", "simplenet", "--host", "ftorch", "--ftorch-dir", prefix, *args, *FAST)
    assert r.returncode == 2, r.stderr
    assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def timed_statements(source: str) -> list[str]:
    """Every statement of the generated `iteration` between its first and last clock read."""
    body = source.split("  subroutine iteration(k)", 1)[1].split("  end subroutine iteration", 1)[0]
    lines = [line.strip() for line in body.replace("&\n", "").splitlines() if line.strip()]
    clocks = [i for i, line in enumerate(lines) if line.startswith("call system_clock(")]
    return lines[clocks[0]:clocks[-1] + 1]


@pytest.mark.parametrize("sig", [
    program.Signature((program.CallSignature((program.Array("float32", 1),), program.Array("float32", 1)),)),
    program.Signature(tuple(program.CallSignature((program.Array("float64", 2),) * 3, program.Array("float64", 2))
                            for _ in range(2)), layout="c", reload=True),
    program.Signature((program.CallSignature((program.Array("float32", 1),), program.Array("float32", 1)),),
                      task="train"),
    program.Signature((program.CallSignature((program.Array("float64", 2),), program.Array("float64", 2)),),
                      task="train", train_call="ftorch-mse"),
], ids=["infer", "two-calls-layout-c-reload", "train-operators", "train-mse"])
def test_between_the_clock_reads_there_are_only_ftorchs_calls(sig):
    """The issue's rule: the timed region holds the user's library and their compiler's code,
    and nothing of ours but the clock reads."""
    timed = timed_statements(program.program(sig))
    ours = [s for s in timed if not re.match(r"call (system_clock|torch_\w+|optimizer%(zero_grad|step))\(", s)]
    assert not ours, ours
    calls = [s for s in timed if not s.startswith("call system_clock")]
    if sig.task == "train":
        assert calls[:5] == ["call optimizer%zero_grad()",
                             "call torch_model_forward(model, in1, out1, requires_grad=.true.)",
                             "call torch_tensor_from_array(loss1, loss_data1, torch_kCPU)",
                             "call torch_tensor_mean(loss1, (out1(1) - tg1(1)) ** 2)"
                             if sig.train_call == "ftorch-operators" else
                             "call torch_loss_mse(loss1, out1(1), tg1(1))",
                             "call torch_tensor_backward(loss1)"]
    elif sig.layout == "c":
        assert calls[0] == "call torch_model_load(model, trim(model_path), torch_kCPU)"
        assert "call torch_tensor_from_array(in1(1), x1_1, layout_x1_1, torch_kCPU)" in calls
    else:   # example 2's calls, in its order
        assert calls == ["call torch_tensor_from_array(in1(1), x1_1, torch_kCPU)",
                         "call torch_tensor_from_array(out1(1), y1, torch_kCPU)",
                         "call torch_model_forward(model, in1, out1)",
                         "call torch_delete(in1)", "call torch_delete(out1)"]


TRIVIAL_CMAKE = """cmake_minimum_required(VERSION 3.15)
project(couplescope_driver LANGUAGES Fortran)
add_executable(couplescope_driver driver.f90)
file(WRITE "${CMAKE_BINARY_DIR}/couplescope-build.txt" "compiler_id=${CMAKE_Fortran_COMPILER_ID}\\n")
"""


@needs_fortran
def test_a_driver_build_is_cached_by_compiler_flags_and_source(tmp_path, monkeypatch):
    """The same build twice compiles once; new flags or a new source build again. A real
    gfortran and CMake build of a trivial driver (no FTorch needed for the cache)."""
    monkeypatch.setenv("COUPLESCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("FFLAGS", raising=False)
    said = []
    files = {"CMakeLists.txt": TRIVIAL_CMAKE, "driver.f90": "program d\nprint *, 'driver'\nend program d\n"}
    build = driver_build.DriverBuild(host="test", files=files, compiler="gfortran", what="a test driver")
    path, seconds, directory = driver_build.ensure_built(build, said.append)
    assert os.access(path, os.X_OK) and seconds is not None and directory.startswith(str(tmp_path / "cache"))
    assert any("configured" in words for words in said) and driver_build.facts(directory)["compiler_id"] == "GNU"
    assert driver_build.ensure_built(build, said.append) == (path, None, directory)   # cached
    monkeypatch.setenv("FFLAGS", "-O1")
    flagged = driver_build.ensure_built(build)
    assert flagged[1] is not None and flagged[2] != directory
    changed = driver_build.DriverBuild(host="test", files={**files, "driver.f90": files["driver.f90"] + "\n"},
                                       compiler="gfortran")
    assert changed.key() != build.key()


@needs_fortran
def test_a_driver_that_does_not_compile_says_the_compilers_first_error(tmp_path, monkeypatch):
    monkeypatch.setenv("COUPLESCOPE_CACHE", str(tmp_path / "cache"))
    files = {"CMakeLists.txt": TRIVIAL_CMAKE, "driver.f90": "program d\ncall nothing_of_this_name(\nend program d\n"}
    with pytest.raises(driver_build.DriverBuildError, match=r"building a test driver failed: .*Error:.*full log"):
        driver_build.ensure_built(driver_build.DriverBuild(host="test", files=files, compiler="gfortran",
                                                           what="a test driver"))


def test_the_ftorch_host_serves_the_torchscript_backends_calls():
    from couplescope import backends

    assert ftorch_host.HOST.served(backends.get("torchscript")) == ("infer", "train")
    assert ftorch_host.HOST.served(backends.get("bridge")) == ()
    assert not ftorch_host.HOST.default_candidate   # only ever run when named


# -- with a real FTorch ----------------------------------------------------------------------

@needs_ftorch
@pytest.mark.e2e
def test_simplenet_through_the_users_ftorch_passes_and_reuses_its_build(tmp_path):
    env = {"COUPLESCOPE_CACHE": os.environ.get("COUPLESCOPE_CACHE", str(tmp_path / "cache"))}
    first = run_cli("--model", "simplenet", "--host", "ftorch", "--ftorch-dir", FTORCH, *FAST, "--json",
                    env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    again = run_cli("--model", "simplenet", "--host", "ftorch", "--ftorch-dir", FTORCH, *FAST, "--json",
                    env=env, timeout=600)
    assert again.returncode == 0 and "driver built in" not in again.stderr, again.stderr
    import json

    variant = json.loads(again.stdout)["variants"][0]
    assert variant["verdict"] == "passed" and set(variant["phases"]) == {"marshal_in", "forward", "marshal_out"}
    build = variant["host_build"]
    assert build["status"] == "cached" and build["library"]["library"] == "FTorch"
    assert build["library"]["compiler_id"] and build["library"]["torch_version"]


@needs_ftorch
@pytest.mark.e2e
def test_the_transposition_bug_fails_through_ftorch_too():
    r = run_cli("--model", "stride", "--size", "16", "--layout", "c", "--host", "ftorch", "--ftorch-dir",
                FTORCH, *FAST, timeout=600)
    assert r.returncode == 1 and "FAILED" in r.stdout


@needs_ftorch
@pytest.mark.e2e
def test_training_through_the_users_ftorch_checks_the_first_step_and_learns():
    r = run_cli("--model", "simplenet", "--host", "ftorch", "--ftorch-dir", FTORCH, "--task", "train",
                "--iterations", "3000", "--warmup", "1", "--profile-iterations", "0", "--telemetry-hz", "0",
                "--json", timeout=600)
    import json

    variant = json.loads(r.stdout)["variants"][0]
    training = variant["training"]
    assert training["gradient_check"]["passed"], training["gradient_check"]
    assert training["final_check"] is not None
    assert set(variant["phases"]) >= {"zero_grad", "forward", "loss", "backward", "step"}


def test_a_model_the_users_libtorch_cannot_load_is_one_line_naming_both_versions(tmp_path):
    """What the driver's death on torch_model_load becomes (FTorch prints "[ERROR]: ..." and
    exits): the user's libtorch, the torch that saved the file, FTorch's own words."""
    from couplescope.backends.hosts.driver.library_coupling import load_refusal

    facts = {"library_dir": "/opt/ftorch/lib/cmake/FTorch", "torch_version": "2.1.0"}
    error = ("the ftorch driver stopped (exit code 1): [ERROR]: version_ <= kMaxSupportedFileFormatVersion "
             "INTERNAL ASSERT FAILED")
    line = load_refusal(facts, "/tmp/x/simplenet.pt", "2.13.0+cpu", error)
    assert line == ("the FTorch at /opt/ftorch/lib/cmake/FTorch (libtorch 2.1.0) cannot load simplenet.pt "
                    "(saved by torch 2.13.0+cpu): [ERROR]: version_ <= kMaxSupportedFileFormatVersion "
                    "INTERNAL ASSERT FAILED")
    import zipfile

    users = tmp_path / "net.pt"
    with zipfile.ZipFile(users, "w") as z:
        z.writestr("net/version", "10\n")
    assert "(TorchScript file format 10)" in load_refusal(facts, str(users), None, "[ERROR]: no")


def synthetic_run(specs, **settings) -> str:
    """A synthetic run (made-up events: no torch, FTorch or compiler) through the real pipeline
    and printer; what it printed."""
    import io

    from couplescope.core import pipeline, synthetic
    from couplescope.frontends.cli.printer import HeadlessPrinter

    out, err = io.StringIO(), io.StringIO()
    printer = HeadlessPrinter(len(specs), out=out, err=err, quiet_iterations=True)
    pipeline.run(synthetic.request(specs, **settings), [printer], workers=synthetic.SyntheticWorkers())
    printer.close()
    return out.getvalue()


def test_the_same_calls_from_two_hosts_end_with_the_replica_beside_the_real_library_per_phase():
    base = RunSpec(model="simplenet", warmup=1, iterations=12, profile_iterations=0)
    text = synthetic_run([base.replace(host="ftorch", name="real"), base.replace(host="native", name="replica")],
                         rounds=3, order_seed=1, baseline="real")
    table = text.split("per phase, by host (median; ratio from same-round pairs, 95% interval):\n", 1)[1]
    header, rule, *rows = table.splitlines()[:6]
    assert header.split() == ["phase", "ftorch", "native", "native", "÷", "ftorch"]
    assert [r.split()[0] for r in rows[:4]] == ["marshal_in", "forward", "marshal_out", "call"]
    assert all(re.search(r"\d\.\d\dx \(\d\.\d\d–\d\.\d\d\)$", r) for r in rows[:4]), rows
    other_backend = synthetic_run([base.replace(host="native", name="a"),
                                   base.replace(host="python", backend="bridge", name="b")], rounds=3, order_seed=1)
    assert "per phase, by host" not in other_backend
