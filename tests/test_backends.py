"""Every catalogue model through every CPU coupling on both hosts, end to end in real worker
processes; FTorch's own published TorchScript files as user models on both hosts; and the
no-copy promise of the torchscript backend checked on real memory."""

import os
import tempfile

import numpy as np
import pytest

import couplescope
from couplescope import RunSpec
from couplescope.workloads import catalogue


SMALL = {"stride": 8, "cgdrag": 16, "simplenet": 1, "resnet18": 1, "deep-linear": 20,
         "toy-resnet": 13, "polynomial": 64}
COUPLINGS = [("torchscript", "torchscript"), ("bridge", "torchscript"), ("bridge", "eager")]
HOSTS = ("native", "python")
#: FTorch-benchmarks' own files (../shared/data/ftorch-benchmarks, see its README)
def _ftorch_files() -> str:
    """COUPLESCOPE_FTORCH_FILES, else shared/data/ftorch-benchmarks beside an ancestor of the checkout."""
    if os.environ.get("COUPLESCOPE_FTORCH_FILES"):
        return os.environ["COUPLESCOPE_FTORCH_FILES"]
    here = os.path.dirname(os.path.abspath(__file__))
    while os.path.dirname(here) != here:
        here = os.path.dirname(here)
        candidate = os.path.join(here, "shared", "data", "ftorch-benchmarks")
        if os.path.isdir(candidate):
            return candidate
    return "shared/data/ftorch-benchmarks (not found above the checkout; set COUPLESCOPE_FTORCH_FILES)"


FTORCH_FILES = _ftorch_files()


def test_small_sizes_cover_the_catalogue():
    assert set(SMALL) == set(catalogue.model_names())


@pytest.fixture(scope="module")
def matrix():
    specs = [RunSpec(model=m, size=s, backend=b, bridge_model=bm, host=h, warmup=1, iterations=2,
                     profile_iterations=0)
             for m, s in SMALL.items() for b, bm in COUPLINGS for h in HOSTS]
    doc = couplescope.run(specs)
    return {(v["spec"]["model"], v["spec"]["backend"], v["spec"]["bridge_model"], v["spec"]["host"]): v
            for v in doc["variants"]}


@pytest.mark.parametrize("model", sorted(SMALL))
@pytest.mark.parametrize("backend,bridge_model", COUPLINGS)
@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.e2e
@pytest.mark.xdist_group("coupling-matrix")   # one worker builds the module's matrix (--dist loadgroup)
def test_model_passes_its_check_through_each_coupling(matrix, model, backend, bridge_model, host):
    v = matrix[(model, backend, bridge_model, host)]
    assert v["status"] == "finished", v["error"]
    assert v["checks_passed"], [it["max_rel_error"] for it in v["iterations"]]
    assert v["stats"]["n"] == 2
    assert v["load_seconds"] > 0
    for it in v["iterations"]:
        assert {"marshal_in", "forward", "marshal_out"} <= set(it["phases"])
        assert it["phases"]["forward"] <= it["seconds"]


@pytest.mark.e2e
@pytest.mark.skipif(not os.path.isdir(FTORCH_FILES), reason=f"FTorch-benchmarks' files are not at {FTORCH_FILES}")
def test_ftorch_benchmarks_own_files_pass_on_both_hosts_as_user_models():
    """The real StrideNet and the trained cgdrag network, as a user's .pt files: direct and
    embedded (TorchScript inside Python), on the native and the python host."""
    cases = [("saved_large_stride_model_cpu.pt", ((24, 24),), "float32"),
             ("saved_cgdrag_model_cpu.pt", ((32, 40), (32, 1), (32, 1)), "float64")]
    specs = [RunSpec(model=os.path.join(FTORCH_FILES, name), input_shape=shape, dtype=dtype,
                     backend=b, host=h, warmup=1, iterations=2, profile_iterations=0)
             for name, shape, dtype in cases for b in ("torchscript", "bridge") for h in HOSTS]
    doc = couplescope.run(specs)
    assert len(doc["variants"]) == 8
    for v in doc["variants"]:
        assert v["status"] == "finished", (v["name"], v["error"])
        assert v["checks_passed"] and v["stats"]["n"] == 2, v["name"]


def test_torchscript_coupling_wraps_host_memory_without_a_copy():
    from couplescope import backends
    from couplescope.worker.engine import prepare

    spec = RunSpec(model="cgdrag", size=8, profile_iterations=0)
    with tempfile.TemporaryDirectory() as tmp:
        prepared = prepare(spec, backends.get(spec.backend), tmp)
        coupling = prepared.coupling
        coupling.load()
        for name, array in prepared.arrays.items():
            tensor = coupling.wrap(name, array)
            assert tensor.data_ptr() == array.ctypes.data
            assert np.array_equal(tensor.numpy(), array)
        before = {n: o.ctypes.data for n, o in prepared.outputs.items()}
        prepared.poison_outputs()
        coupling.call()
        assert {n: o.ctypes.data for n, o in prepared.outputs.items()} == before
        err, passed, _ = prepared.check()
        assert passed and err <= prepared.tolerance
