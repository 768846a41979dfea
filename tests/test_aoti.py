"""The aoti backend (torch.export + AOTInductor) and the bridge's torch.compile'd model.

The fast tests export for real (no worker): the example inputs are the host memory with
the layout's strides, and so are the exported program's inputs; what the cache key covers;
the refusals. The end-to-end tests compile real packages of small models (each compile is
about 30-50 s on a 2-core machine), so there are few: one run compiles every exportable
catalogue model once on the native host and reuses the package on the python host, and
the rest compile one small model each. They use a seed of this test session (part of the
cache key), so the first compile is cold in couplescope's cache whatever ran before, and
remove the packages they made when the session ends.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import textwrap

import pytest

import couplescope
from conftest import FAST
from couplescope import RunSpec
from couplescope.backends import aoti_package
from couplescope.backends.base import CouplingContext
from couplescope.backends.clock import PhaseClock
from couplescope.backends.host_memory import strides_for
from couplescope.protocol import scratch
from couplescope.protocol.errors import UsageError
from couplescope.workloads import catalogue
from couplescope.results.saved import iteration_records as records

#: part of every package key these tests make: a key no earlier run compiled
SEED = 1000 + os.getpid() % 100_000
#: every catalogue model that exports, at sizes that compile quickly (stride is refused)
EXPORTABLE = {"simplenet": 2, "polynomial": 8, "deep-linear": 3, "cgdrag": 16, "toy-resnet": 13,
              "resnet18": 1}

ITEM_MODULE = '''
import torch
from torch import nn


class ItemNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        scale = x.abs().max().item()
        if scale > 1.0:
            x = x / scale
        return self.fc(x)


def make_model(size, dtype, seed):
    return ItemNet()
'''

MLP_MODULE = '''
import numpy as np
import torch
from torch import nn


def make_model(size, dtype, seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).to(getattr(torch, dtype))


def make_inputs(size, seed):
    return [np.random.default_rng(seed).standard_normal((size, 6)).astype(np.float32)]
'''


def context(model: str, size: int, layout: str = "fortran", seed: int = 0, **spec) -> CouplingContext:
    """What the engine hands a coupling, built the engine's way (no worker)."""
    workload = catalogue.load(model)
    dtype = workload.dtype
    arrays = workload.host_arrays(size, dtype, seed)
    run = RunSpec(model=model, backend="aoti", size=size, layout=layout, seed=seed, **spec)
    return CouplingContext(spec=run, workload=workload, size=size, dtype=dtype, arrays=arrays,
                           outputs={}, calls=workload.calls(size), torchscript_path=None, clock=PhaseClock())


# -- fast: no worker ------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["fortran", "c"])
def test_example_inputs_are_the_host_memory_with_the_layouts_strides(layout):
    ctx = context("cgdrag", 6, layout)
    inputs = aoti_package.example_inputs(ctx)
    for name, tensor in zip(ctx.calls[0].inputs, inputs):
        array = ctx.arrays[name]
        assert tensor.shape == array.shape
        assert tensor.stride() == strides_for(array, layout)
        assert tensor.data_ptr() == array.ctypes.data   # the host memory itself, no copy
    assert inputs[0].stride() == ((1, 6) if layout == "fortran" else (40, 1))


@pytest.mark.parametrize("layout", ["fortran", "c"])
def test_the_exported_program_takes_the_host_layouts_strides(layout):
    """AOTInductor compiles for the strides of the exported program's inputs: they must be
    the host layout's, not the row-major strides of a default example tensor."""
    import torch

    ctx = context("simplenet", 3, layout)
    inputs = aoti_package.example_inputs(ctx)
    program = torch.export.export(ctx.workload.build(3, "float32", 0), inputs)
    values = {n.name: n.meta["val"] for n in program.graph.nodes if n.op == "placeholder"}
    [name] = program.graph_signature.user_inputs
    assert values[name].stride() == strides_for(ctx.arrays["x"], layout) == ((1, 3) if layout == "fortran" else (5, 1))


def test_the_cache_key_names_what_the_package_depends_on(monkeypatch):
    base = aoti_package.AotiPackage(context("simplenet", 3))
    same = aoti_package.AotiPackage(context("simplenet", 3))
    assert base.path == same.path and base.path.endswith(os.path.join("", aoti_package.PACKAGE))
    name = os.path.basename(base.directory)
    assert name.startswith("simplenet-3-float32-fortran-cpu-torch")
    others = [context("simplenet", 4), context("simplenet", 3, "c"), context("simplenet", 3, seed=1),
              context("cgdrag", 3)]
    assert len({base.directory, *(aoti_package.AotiPackage(c).directory for c in others)}) == 5
    assert base.directory.startswith(os.path.join(aoti_package.cache_dir(), ""))
    assert base.identity["model_source"] == aoti_package.model_source_digest(base.ctx.workload) != "unknown"
    assert {"torch", "cpu_flags", "machine", "inputs", "seed"} <= set(base.identity)
    monkeypatch.setenv("TORCHINDUCTOR_FREEZING", "1")        # inductor's settings change the package
    assert aoti_package.AotiPackage(context("simplenet", 3)).directory != base.directory
    monkeypatch.delenv("TORCHINDUCTOR_FREEZING")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/elsewhere")   # where torch caches does not
    assert aoti_package.AotiPackage(context("simplenet", 3)).directory == base.directory


def test_a_python_loop_over_the_elements_is_refused_before_export():
    """StrideNet exports by unrolling its loop (N^2 element copies); it is refused from one
    counted eager call, which stops at the limit."""
    import torch

    stride = catalogue.load("stride")
    x = torch.rand(128, 128)
    with pytest.raises(UsageError, match=r"^stride cannot be exported as a graph: one call runs more than 20,000"):
        aoti_package.refuse_unrollable("stride", stride.build(128, "float32", 0), (x,))
    ctx = context("cgdrag", 4)   # a real graph passes
    aoti_package.refuse_unrollable("cgdrag", ctx.workload.build(4, "float64", 0), aoti_package.example_inputs(ctx))


def test_an_export_error_becomes_one_line_naming_its_essence(tmp_path):
    import torch

    from couplescope.workloads.bridge_contract import import_by_path

    (tmp_path / "item_net.py").write_text(ITEM_MODULE)
    module = import_by_path(str(tmp_path / "item_net.py"), "couplescope_test_item_net")
    with pytest.raises(Exception) as caught:
        torch.export.export(module.make_model(1, "float32", 0), (torch.rand(3, 4),))
    line = aoti_package.export_refusal("item_net.py", caught.value)
    assert "\n" not in line and len(line) < 400
    assert line.startswith("item_net.py cannot be exported with torch.export: its forward branches on "
                           "a tensor's value (.item(), bool(tensor))")
    assert "Could not guard on data-dependent expression" in line
    assert "at item_net.py:13 in forward" in line   # `if scale > 1.0:`


def test_torchscript_files_are_refused_with_what_to_give_instead(command, tmp_path):
    import torch

    torch.jit.save(torch.jit.script(torch.nn.Linear(4, 4)), tmp_path / "net.pt")
    r = command("--model", tmp_path / "net.pt", "--input-shape", "2,4", "--backend", "aoti")
    assert r.returncode == 2
    [line] = r.stderr.strip().splitlines()
    assert "is TorchScript, which torch.export cannot read" in line
    assert "make_model(size, dtype, seed)" in line and "torch.export.save" in line


def test_an_exported_program_runs_on_aoti_only_and_compiled_is_not_reloaded(command, tmp_path):
    (tmp_path / "p.pt2").write_bytes(b"PK\x05\x06" + b"\0" * 18)   # an (empty) zip archive
    r = command("--model", tmp_path / "p.pt2", "--backend", "torchscript")
    assert r.returncode == 2 and "is an exported program (.pt2): run it with --backend aoti" in r.stderr
    r = command("--model", "simplenet", "--backend", "bridge", "--bridge-model", "compiled",
                "--reload-every-call")
    assert r.returncode == 2 and "would compile the model inside every timed call" in r.stderr


# -- end to end: real compiles -----------------------------------------------------------------

@pytest.fixture(scope="module")
def made_packages():
    """Package directories the tests made; removed at the end (they are keyed on SEED)."""
    made: set[str] = set()
    yield made
    for directory in made:
        shutil.rmtree(directory, ignore_errors=True)


def keep(made: set, doc: dict) -> None:
    for v in doc["variants"]:
        if v.get("compile", {}).get("package"):
            made.add(os.path.dirname(v["compile"]["package"]))


#: the model that also runs on the python host, finding the package the native host compiled:
#: that is the same for every model, and each variant is a worker of its own (about 4 s of
#: CPU, most of it importing torch)
ON_BOTH_HOSTS = "simplenet"
CATALOGUE_VARIANTS = [(m, "native") for m in sorted(EXPORTABLE)] + [(ON_BOTH_HOSTS, "python")]


@pytest.fixture(scope="module")
def catalogue_run(made_packages):
    """Every exportable catalogue model on the native host (compiling its package), then one
    on the python host (the same package, from the cache)."""
    specs = [RunSpec(model=m, size=EXPORTABLE[m], backend="aoti", host=h, seed=SEED, warmup=1, iterations=2,
                     profile_iterations=0)
             for m, h in CATALOGUE_VARIANTS]
    doc = couplescope.run(specs, rounds=1)   # one after the other: native compiles, python finds it
    keep(made_packages, doc)
    return {(v["spec"]["model"], v["spec"]["host"]): v for v in doc["variants"]}


def test_exportable_covers_the_catalogue_but_stride():
    assert set(EXPORTABLE) == set(catalogue.model_names()) - {"stride"}


@pytest.mark.e2e
@pytest.mark.xdist_group("aoti-catalogue")
@pytest.mark.parametrize("model,host", CATALOGUE_VARIANTS)
def test_every_exportable_catalogue_model_passes_through_aoti(catalogue_run, model, host):
    v = catalogue_run[(model, host)]
    assert v["status"] == "finished", v["error"]
    assert v["checks_passed"], [it["max_rel_error"] for it in records(v)]
    assert v["stats"]["n"] == 2
    for it in records(v):
        assert {"marshal_in", "forward", "marshal_out"} <= set(it["phases"])
    compile_ = v["compile"]
    assert compile_["compiler"] == "AOTInductor" and os.path.exists(compile_["package"])
    if host == "native":   # compiled here, for the first time: its own number, not the load's
        assert compile_["status"] == "compiled"
        assert compile_["seconds"] > 1.0 and 0 < compile_["export_seconds"] < compile_["seconds"]
        assert v["load_seconds"] < compile_["seconds"]
        assert os.path.exists(os.path.join(os.path.dirname(compile_["package"]), "compile.json"))
    else:                  # the same key: the native variant's package, from the cache
        assert compile_ == {**compile_, "status": "cached", "seconds": 0.0}
        assert compile_["package"] == catalogue_run[(model, "native")]["compile"]["package"]


@pytest.mark.e2e
@pytest.mark.xdist_group("aoti-catalogue")
def test_compiles_keep_inductor_s_precompiled_headers_for_the_next(catalogue_run):
    """AOTInductor's two precompiled headers (about 15 s of every compile) are kept in
    torch's compile cache, not in the worker's temporary folder that goes with it."""
    headers = os.path.join(scratch.inductor_cache(), "precompiled_headers")
    assert len(glob.glob(os.path.join(headers, "*.h.gch"))) >= 2, headers


@pytest.mark.e2e
@pytest.mark.xdist_group("aoti-catalogue")
def test_a_second_run_reuses_the_package_and_says_so(cli, tmp_path, catalogue_run):
    r = cli("--model", "cgdrag", "--size", EXPORTABLE["cgdrag"], "--backend", "aoti", "--seed", SEED,
            "--export", tmp_path / "runs", *FAST)
    assert r.returncode == 0, r.stderr
    assert "AOTInductor package from the cache, compile 0 s: " in r.stdout
    [run] = os.listdir(tmp_path / "runs")
    doc = json.loads((tmp_path / "runs" / run / "results.json").read_text())
    [v] = doc["variants"]
    assert v["compile"]["status"] == "cached" and v["compile"]["seconds"] == 0.0
    assert v["compile"]["package"] == catalogue_run[("cgdrag", "native")]["compile"]["package"]
    [row] = doc["comparison"]
    assert row["compile_status"] == "cached" and row["compile_seconds"] == 0.0
    table = r.stdout.split("comparison (overhead = call minus forward):")[1]
    assert " compile " in table.splitlines()[1] and " cached " in table


@pytest.mark.e2e
def test_a_layout_c_run_fails_its_checks_as_with_torchscript(cli, tmp_path, made_packages):
    """The package is exported for the (wrong) row-major view and called on it: the memory
    is read transposed, as the torchscript backend reads it, and both fail their checks."""
    r = cli("--model", "deep-linear", "--size", "2", "--layout", "c", "--backend", "torchscript,aoti",
            "--seed", SEED, "--export", tmp_path / "runs", *FAST)
    [run] = os.listdir(tmp_path / "runs")
    doc = json.loads((tmp_path / "runs" / run / "results.json").read_text())
    keep(made_packages, doc)
    assert r.returncode == 1, r.stderr
    by_backend = {v["spec"]["backend"]: v for v in doc["variants"]}
    for backend in ("torchscript", "aoti"):
        v = by_backend[backend]
        assert v["status"] == "finished" and not v["checks_passed"], backend
        assert all(not it["passed"] and it["max_rel_error"] > 0.1 for it in records(v)), backend
    assert by_backend["aoti"]["compile"]["status"] == "compiled"


@pytest.mark.e2e
def test_stride_is_refused_in_one_line_with_exit_2_leaving_nothing(cli, tmp_path):
    before = set(os.listdir(aoti_package.cache_dir())) if os.path.isdir(aoti_package.cache_dir()) else set()
    r = cli("--model", "stride", "--backend", "aoti", "--export", tmp_path / "runs", *FAST)
    assert r.returncode == 2
    [line] = [ln for ln in r.stderr.splitlines() if ln.startswith("couplescope:")]
    assert line.startswith("couplescope: stride cannot be exported as a graph: one call runs more than")
    assert not (tmp_path / "runs").exists()
    after = set(os.listdir(aoti_package.cache_dir())) if os.path.isdir(aoti_package.cache_dir()) else set()
    assert not {d for d in after - before if d.startswith("stride-")}


@pytest.mark.e2e
def test_a_user_module_that_branches_on_item_is_refused_naming_the_line(cli, tmp_path):
    (tmp_path / "item_net.py").write_text(ITEM_MODULE)
    r = cli("--model", tmp_path / "item_net.py", "--input-shape", "3,4", "--backend", "aoti", *FAST)
    assert r.returncode == 2
    [line] = [ln for ln in r.stderr.splitlines() if ln.startswith("couplescope:")]
    assert "cannot be exported with torch.export: its forward branches on a tensor's value" in line
    assert "at item_net.py:13 in forward" in line


@pytest.mark.e2e
def test_a_user_module_and_an_exported_program_pass_through_aoti(cli, tmp_path, made_packages):
    """What a user who leaves TorchScript brings: a .py that makes the nn.Module (and its
    inputs), or the program they exported themselves (row-major, as torch.export.export
    is usually called: couplescope exports it again for the host's layout)."""
    import torch

    from couplescope.workloads.bridge_contract import import_by_path

    (tmp_path / "mlp.py").write_text(textwrap.dedent(MLP_MODULE))
    mlp = import_by_path(str(tmp_path / "mlp.py"), "couplescope_test_mlp")
    program = torch.export.export(mlp.make_model(5, "float32", SEED).eval(), (torch.randn(5, 6),))
    torch.export.save(program, tmp_path / "mlp.pt2")
    for model, extra in ((tmp_path / "mlp.py", ["--size", "5"]), (tmp_path / "mlp.pt2", [])):
        runs = tmp_path / f"runs-{model.suffix[1:]}"
        r = cli("--model", model, "--backend", "aoti", "--seed", SEED, *extra, "--export", runs, *FAST)
        [run] = os.listdir(runs)
        doc = json.loads((runs / run / "results.json").read_text())
        keep(made_packages, doc)
        assert r.returncode == 0, r.stderr
        [v] = doc["variants"]
        assert v["checks_passed"] and v["compile"]["status"] in ("compiled", "cached")
        assert v["model"]["inputs"] == {"x0": [5, 6]}


@pytest.mark.e2e
def test_the_bridge_compiled_model_reports_its_compile_apart_from_the_load(cli, tmp_path):
    r = cli("--model", "simplenet", "--size", "3", "--backend", "bridge", "--bridge-model", "compiled",
            "--host", "native,python", "--export", tmp_path / "runs", *FAST)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("compiled with torch.compile in ") == 2
    [run] = os.listdir(tmp_path / "runs")
    doc = json.loads((tmp_path / "runs" / run / "results.json").read_text())
    for v in doc["variants"]:
        assert v["checks_passed"] and v["spec"]["bridge_model"] == "compiled"
        assert v["compile"]["compiler"] == "torch.compile" and v["compile"]["status"] == "compiled"
        assert v["compile"]["seconds"] > 0
        # the first call compiled during the load: no timed call compiles again
        timed = [it["seconds"] for it in records(v) if it["kind"] == "timed"]
        assert max(timed) < v["compile"]["seconds"]


def test_the_bridge_compiled_model_refuses_an_unrollable_model():
    from couplescope.backends import bridge_module

    with pytest.raises(UsageError, match="^stride cannot be exported as a graph"):
        bridge_module.initialize({"model": "stride", "size": 128, "dtype": "float32", "seed": 0,
                                  "device": "cpu", "bridge_model": "compiled", "torchscript_path": None,
                                  "phase": None, "threads": None, "grad_mode": "no_grad"})
