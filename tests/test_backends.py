"""Every catalogue model through every CPU coupling on every host that makes its calls (the
registries' matrix, tests/coupling_matrix.py), end to end in real worker processes; FTorch's
own published TorchScript files as user models on those hosts; and the
no-copy promise of the torchscript backend checked on real memory."""

import os
import tempfile

import numpy as np
import pytest

import couplescope
from couplescope import RunSpec
from couplescope.workloads import catalogue
from couplescope.results.saved import iteration_records as records
from coupling_matrix import couplings, runnable


SMALL = {"stride": 8, "cgdrag": 16, "simplenet": 1, "resnet18": 1, "deep-linear": 20,
         "toy-resnet": 13, "polynomial": 64}
#: (backend, its own settings, host) for every backend's inference calls on every host that
#: makes them, from the registries (tests/coupling_matrix.py)
COUPLINGS = couplings("infer")


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


def test_the_matrix_holds_every_host_and_a_backend_on_one_host_only():
    """Read from the registries: every host serves some backend, and a backend only the
    python host runs (cudagraph) is a row of its own."""
    from couplescope.backends import hosts

    assert {p.values[2] for p in COUPLINGS} == {h for h, _, tasks in hosts.table() if "infer" in tasks}
    assert [p.values[2] for p in COUPLINGS if p.values[0] == "cudagraph"] == ["python"]
    assert ("bridge", (("bridge_model", "eager"),), "native") in [p.values for p in COUPLINGS]


def _name(model, backend, settings, host) -> str:
    return "-".join([model, backend, *(str(value) for _, value in settings), host])


@pytest.fixture(scope="module")
def matrix():
    specs = [RunSpec(model=m, size=s, backend=b, host=h, warmup=1, iterations=2, profile_iterations=0,
                     name=_name(m, b, settings, h), **dict(settings))
             for m, s in SMALL.items() for b, settings, h in runnable(COUPLINGS)]
    doc = couplescope.run(specs)
    return {v["name"]: v for v in doc["variants"]}


@pytest.mark.parametrize("model", sorted(SMALL))
@pytest.mark.parametrize("backend,settings,host", COUPLINGS)
@pytest.mark.e2e
@pytest.mark.xdist_group("coupling-matrix")   # one worker builds the module's matrix (--dist loadgroup)
def test_model_passes_its_check_through_each_coupling(matrix, model, backend, settings, host):
    v = matrix[_name(model, backend, settings, host)]
    assert v["status"] == "finished", v["error"]
    assert v["checks_passed"], [it["max_rel_error"] for it in records(v)]
    assert v["stats"]["n"] == 2
    assert v["load_seconds"] > 0
    for it in records(v):
        assert {"marshal_in", "forward", "marshal_out"} <= set(it["phases"])
        assert it["phases"]["forward"] <= it["seconds"]


@pytest.mark.e2e
@pytest.mark.skipif(not os.path.isdir(FTORCH_FILES), reason=f"FTorch-benchmarks' files are not at {FTORCH_FILES}")
def test_ftorch_benchmarks_own_files_pass_on_both_hosts_as_user_models():
    """The real StrideNet and the trained cgdrag network, as a user's .pt files: direct and
    embedded (TorchScript inside Python), on the native and the python host."""
    cases = [("saved_large_stride_model_cpu.pt", ((24, 24),), "float32"),
             ("saved_cgdrag_model_cpu.pt", ((32, 40), (32, 1), (32, 1)), "float64")]
    couplings = [(b, h) for b, settings, h in runnable(COUPLINGS)
                 if b in ("torchscript", "bridge") and dict(settings).get("bridge_model", "torchscript") == "torchscript"]
    specs = [RunSpec(model=os.path.join(FTORCH_FILES, name), input_shape=shape, dtype=dtype,
                     backend=b, host=h, warmup=1, iterations=2, profile_iterations=0)
             for name, shape, dtype in cases for b, h in couplings]
    doc = couplescope.run(specs)
    assert len(doc["variants"]) == len(specs) >= 8
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
        try:
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
        finally:
            coupling.close()   # leaves the grad mode it entered at load: later tests in this process train
