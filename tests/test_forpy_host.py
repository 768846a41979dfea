"""The forpy host: the bridge backend's calls made through the user's forpy, from Fortran (issue 32).

Everywhere: how forpy_mod.F90 is found (--forpy-source, then FORPY_SOURCE), the one-line
refusals, what the generated program times, how the driver's helper reads a failed call's
exception. Where forpy's source is at hand (COUPLESCOPE_FORPY_SOURCE names a forpy_mod.F90):
real runs, built with gfortran and CMake against this Python, inference and training, checked.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from conftest import FAST, run_cli
from couplescope.backends.hosts import forpy as forpy_host
from couplescope.backends.hosts.driver import forpy_program as program
from couplescope.backends.hosts.driver.forpy_install import find_source
from couplescope.protocol.spec import RunSpec

FORPY = os.environ.get("COUPLESCOPE_FORPY_SOURCE", "")
needs_forpy = pytest.mark.skipif(not FORPY, reason="no forpy source named: set COUPLESCOPE_FORPY_SOURCE to a "
                                                   "forpy_mod.F90 to run the forpy host for real")
needs_fortran = pytest.mark.skipif(shutil.which("gfortran") is None or shutil.which("cmake") is None,
                                   reason="needs gfortran and cmake (apt-get install gfortran cmake)")


def fake_forpy(folder):
    """A file that declares forpy's module where forpy_mod.F90 does: enough for discovery,
    which reads the file's first lines only."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "forpy_mod.F90"
    path.write_text("! Copyright (C) 2017-2020  Elias Rabel\n\nmodule forpy_mod\nend module forpy_mod\n")
    return path


@pytest.fixture
def no_forpy_env(monkeypatch):
    monkeypatch.delenv("FORPY_SOURCE", raising=False)


def test_forpy_is_found_from_the_option_then_forpy_source(tmp_path, monkeypatch, no_forpy_env):
    given, env_file = fake_forpy(tmp_path / "given"), fake_forpy(tmp_path / "env")
    assert find_source() == (None, "", None)
    monkeypatch.setenv("FORPY_SOURCE", str(env_file))
    assert find_source() == (str(env_file), f"FORPY_SOURCE={env_file}", None)
    spec = RunSpec(model="simplenet", backend="bridge", host="forpy", forpy_source=str(given))
    assert find_source(spec) == (str(given), f"--forpy-source {given}", None)
    folder = RunSpec(model="simplenet", backend="bridge", forpy_source=str(tmp_path / "given"))   # its folder
    assert find_source(folder)[0] == str(given)
    other = tmp_path / "other.F90"
    other.write_text("module something_else\nend module\n")
    path, looked, why = find_source(RunSpec(model="simplenet", backend="bridge", forpy_source=str(other)))
    assert path is None and why == f"{other} is not forpy's forpy_mod.F90 (no `module forpy_mod` in its first lines)"


def test_without_forpy_the_host_is_refused_in_one_line_and_listed_with_why(no_forpy_env):
    r = run_cli("--model", "simplenet", "--backend", "bridge", "--host", "forpy", *FAST)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("couplescope: --host forpy is unavailable: forpy not found: pass --forpy-source "
                                "FILE (its forpy_mod.F90) or set FORPY_SOURCE; --host native runs without it")
    listed = run_cli("--list", env={"COLUMNS": "200"})
    words = " ".join(listed.stdout.split())   # the table wraps its last column
    assert "forpy unavailable the user's forpy" in words
    assert "unavailable: forpy not found: pass --forpy-source FILE" in words


def test_a_forpy_source_that_is_not_forpy_says_so(tmp_path, no_forpy_env):
    (tmp_path / "forpy_mod.F90").write_text("program not_forpy\nend program\n")
    r = run_cli("--model", "simplenet", "--backend", "bridge", "--host", "forpy", "--forpy-source", tmp_path, *FAST)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "is not forpy's forpy_mod.F90" in r.stderr


def test_forpy_options_apply_to_the_forpy_host_only(tmp_path, no_forpy_env):
    r = run_cli("--model", "simplenet", "--backend", "bridge", "--forpy-source", fake_forpy(tmp_path), *FAST)
    assert r.returncode == 2 and "--forpy-source applies to --host forpy" in r.stderr


@needs_fortran
@pytest.mark.parametrize("args, words", [
    (("--device", "cuda"), "--host forpy makes CPU calls only so far, not --device cuda"),
    (("--dtype", "float16"), "not --dtype float16"),
    (("--layout", "c"), "Fortran-ordered views only"),
    (("--bridge-model", "compiled"), "not compiled"),
    (("--backend", "mpi", "--inner-backend", "bridge", "--task", "train"), "data-parallel training"),
    (("--backend", "torchscript"), "backend 'torchscript' runs on the native or python or ftorch or pytorch-fortran "
                                   "host only, not --host forpy"),
], ids=["gpu", "float16", "layout-c", "compiled", "mpi-train", "torchscript"])
def test_what_forpy_cannot_make_is_refused_in_one_line(tmp_path, no_forpy_env, args, words):
    source = fake_forpy(tmp_path / "forpy")
    base = ["--backend", "bridge"] if "--backend" not in args else []
    r = run_cli("--model", "simplenet", *base, "--host", "forpy", "--forpy-source", source, *args, *FAST)
    assert r.returncode == 2, r.stderr
    assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@needs_fortran
def test_a_module_forpy_cannot_import_by_name_is_refused(tmp_path, no_forpy_env):
    module = tmp_path / "my-model.py"
    module.write_text("def initialize(config): pass\ndef compute(inputs, output): pass\n"
                      "def reference(inputs): return inputs[0]\n")
    r = run_cli("--model", module, "--backend", "bridge", "--input-shape", "4", "--host", "forpy",
                "--forpy-source", fake_forpy(tmp_path / "forpy"), *FAST)
    assert r.returncode == 2 and "'my-model' is not a Python module name" in r.stderr, r.stderr


def timed_statements(source: str) -> list[str]:
    """Every statement of the generated `iteration` between its first and last clock read."""
    body = source.split("  subroutine iteration(k)", 1)[1].split("  end subroutine iteration", 1)[0]
    lines = [line.strip() for line in body.replace("&\n", "").splitlines() if line.strip()]
    clocks = [i for i, line in enumerate(lines) if line.startswith("call system_clock(")]
    return lines[clocks[0]:clocks[-1] + 1]


#: forpy's statements as its users write them, and the Fortran of a caller reading train's
#: return value (ierror checked, a tuple or a number); nothing else may stand between clock reads
FORPY_STATEMENT = re.compile(
    r"(call system_clock\(\w+\)"
    r"|(ie\d+|load_ie)\(\d+\) = (ndarray_create_nocopy|tuple_create|\w+%setitem|call_py|call_py_noret|import_py"
    r"|cast|cast_nonstrict|\w+%getitem)\(.*\)"
    r"|call \w+%destroy"
    r"|if \(ie\d+\(\d+\) == 0\) then|if \(is_tuple\(ret\d+\)\) then|else|end if)$")

A32, A64 = program.Array("float32", 2), program.Array("float64", 3)


@pytest.mark.parametrize("sig", [
    program.Signature((program.CallSignature((A32,), A32),)),
    program.Signature(tuple(program.CallSignature((A32, A64), A32) for _ in range(2)), reload=True),
    program.Signature((program.CallSignature((program.Array("float32", 1),), program.Array("float32", 1)),),
                      task="train"),
], ids=["infer", "two-calls-two-inputs-reload", "train"])
def test_between_the_clock_reads_there_are_only_forpys_calls(sig):
    """The issue's rule: the timed region holds forpy's code and the embedded Python call,
    and nothing of ours but the clock reads."""
    timed = timed_statements(program.program(sig))
    ours = [s for s in timed if not FORPY_STATEMENT.match(s)]
    assert not ours, ours
    if sig.task == "train":
        assert 'ie1(8) = call_py(ret1, bridge_module, "train", args1)' in timed
        assert "ie1(2) = ndarray_create_nocopy(nd_t1, t1)" in timed   # the target, where the output was
        assert "ie1(9) = cast(done_loss1, ret1)" in timed and "ie1(12) = cast_nonstrict(loss1, ret1)" in timed
    elif sig.reload:
        assert timed[:5] == ["call system_clock(load_t0)", "call bridge_module%destroy",
                             "load_ie(1) = import_py(bridge_module, trim(module_name))",
                             'load_ie(2) = call_py_noret(bridge_module, "initialize", init_args)',
                             "call system_clock(load_t1)"]
        assert "ie2(5) = ins2%setitem(0, nd_x2_1)" in timed and "ie2(6) = ins2%setitem(1, nd_x2_2)" in timed
    else:   # the bridge contract's call, as FTorch-benchmarks' forpy programs make it
        assert timed == ["call system_clock(c1_t0)",
                         "ie1(1) = ndarray_create_nocopy(nd_x1_1, x1_1)",
                         "ie1(2) = ndarray_create_nocopy(nd_y1, y1)",
                         "ie1(3) = tuple_create(ins1, 1)", "ie1(4) = ins1%setitem(0, nd_x1_1)",
                         "ie1(5) = tuple_create(args1, 2)", "ie1(6) = args1%setitem(0, ins1)",
                         "ie1(7) = args1%setitem(1, nd_y1)",
                         "call system_clock(c1_t1)",
                         'ie1(8) = call_py(ret1, bridge_module, "compute", args1)',
                         "call system_clock(c1_t2)",
                         "call ret1%destroy", "call args1%destroy", "call ins1%destroy",
                         "call nd_x1_1%destroy", "call nd_y1%destroy",
                         "call system_clock(c1_t3)"]


def test_the_host_phases_land_in_the_phase_clocks_columns():
    """The row the driver writes: the whole, then every phase the clock knows, so the host's
    marshal_in and marshal_out and the module's phases add into the same row."""
    from couplescope.backends.clock import PHASES

    source = program.program(program.Signature((program.CallSignature((A32,), A32),)))
    assert program.ROW == 1 + len(PHASES)
    assert f"    row({2 + PHASES.index('marshal_in')}) = clock_seconds(c1_t0, c1_t1, rate)" in source
    assert f"    row({2 + PHASES.index('marshal_out')}) = clock_seconds(c1_t2, c1_t3, rate)" in source


def test_a_failed_calls_exception_is_the_one_under_the_system_errors_it_caused():
    """forpy's err_print hands the pending exception to sys.excepthook: the helper keeps
    "Type: first line", and, when a later call of the iteration ran with it pending (a
    SystemError over it), the exception that started it."""
    from couplescope.backends.hosts.driver import forpy_side

    try:
        try:
            raise KeyError("nope")
        except KeyError:
            raise SystemError("<built-in function asarray> returned a result with an exception set")
    except SystemError as exc:
        forpy_side._keep_error(type(exc), exc, None)
    assert forpy_side.last_error() == "KeyError: 'nope'"
    assert forpy_side.last_error() == ""   # read once
    try:
        try:
            raise KeyError("inner")
        except KeyError:
            raise ValueError("the module's own, raised while handling another")
    except ValueError as exc:
        forpy_side._keep_error(type(exc), exc, None)
    assert forpy_side.last_error() == "ValueError: the module's own, raised while handling another"


def test_the_forpy_host_serves_the_bridge_backends_calls():
    from couplescope import backends

    assert forpy_host.HOST.served(backends.get("bridge")) == ("infer", "train")
    assert forpy_host.HOST.served(backends.get("torchscript")) == ()
    assert not forpy_host.HOST.default_candidate   # only ever run when named


# -- with a real forpy -----------------------------------------------------------------------

def _cache_env(tmp_path) -> dict:
    return {"COUPLESCOPE_CACHE": os.environ.get("COUPLESCOPE_CACHE", str(tmp_path / "cache"))}


@needs_forpy
@pytest.mark.e2e
def test_stride_through_the_users_forpy_passes_and_reuses_its_build(tmp_path):
    env = _cache_env(tmp_path)
    args = ("--model", "stride", "--size", "16", "--backend", "bridge", "--host", "forpy", "--forpy-source", FORPY,
            *FAST, "--json")
    first = run_cli(*args, env=env, timeout=900)
    assert first.returncode == 0, first.stderr
    again = run_cli(*args, env=env, timeout=900)
    assert again.returncode == 0 and "driver built in" not in again.stderr, again.stderr
    variant = json.loads(again.stdout)["variants"][0]
    assert variant["verdict"] == "passed"
    assert {"marshal_in", "forward", "marshal_out"} <= set(variant["phases"])
    build = variant["host_build"]
    assert build["status"] == "cached" and build["library"]["library"] == "forpy"
    assert build["library"]["compiler_id"] and build["library"]["python_version"]


CHATTY = '''
import numpy as np
calls = 0
def initialize(config):
    global _phase
    _phase = config["phase"]
def compute(inputs, output):
    global calls
    calls += 1
    print(f"call {calls} from the driver")
    with _phase("forward"):
        output[...] = FORM
def reference(inputs):
    return 3.0 * np.asarray(inputs[0])
'''


@needs_forpy
@pytest.mark.e2e
@pytest.mark.parametrize("form, verdict, words", [
    ("3.0 * inputs[0]", 0, "call 1 from the driver"),
    ("np.ones(7)", 1, "(ValueError: could not broadcast input array from shape (7,) into shape (4,))"),
    ("{}['nope']", 1, "(KeyError: 'nope')"),
], ids=["prints", "wrong-shape", "raises"])
def test_a_users_module_through_forpy_prints_fails_and_raises_as_on_the_other_hosts(tmp_path, form, verdict,
                                                                                     words):
    (tmp_path / "mine.py").write_text(CHATTY.replace("FORM", form))
    r = run_cli("--model", tmp_path / "mine.py", "--backend", "bridge", "--input-shape", "4", "--host", "forpy",
                "--forpy-source", FORPY, *FAST, env=_cache_env(tmp_path), timeout=900)
    assert r.returncode == verdict, r.stderr
    assert words in r.stdout + r.stderr


@needs_forpy
@pytest.mark.e2e
def test_reloading_through_forpy_imports_and_initialises_inside_the_call(tmp_path):
    (tmp_path / "mine.py").write_text(CHATTY.replace("FORM", "3.0 * inputs[0]"))
    r = run_cli("--model", tmp_path / "mine.py", "--backend", "bridge", "--input-shape", "4", "--host", "forpy",
                "--forpy-source", FORPY, "--reload-every-call", *FAST, "--json", env=_cache_env(tmp_path),
                timeout=900)
    assert r.returncode == 0, r.stderr
    assert "load" in json.loads(r.stdout)["variants"][0]["phases"]


@needs_forpy
@pytest.mark.e2e
def test_training_through_the_users_forpy_checks_the_first_step_and_learns(tmp_path):
    r = run_cli("--model", "simplenet", "--backend", "bridge", "--host", "forpy", "--forpy-source", FORPY,
                "--task", "train", "--iterations", "10000", "--warmup", "1", "--profile-iterations", "0",
                "--telemetry-hz", "0", "--json", env=_cache_env(tmp_path), timeout=900)
    assert r.returncode == 0, r.stderr
    variant = json.loads(r.stdout)["variants"][0]
    training = variant["training"]
    assert training["gradient_check"]["passed"], training["gradient_check"]
    assert training["final_check"]["passed"], training["final_check"]
    assert {"zero_grad", "forward", "loss", "backward", "step", "marshal_in"} <= set(variant["phases"])
