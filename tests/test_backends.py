"""Every catalogue model through every CPU coupling, end to end in real worker processes,
and the no-copy promise of the torchscript backend checked on real memory."""

import tempfile

import numpy as np
import pytest

import couplescope
from couplescope import RunSpec
from couplescope.workloads import catalogue


SMALL = {"stride": 8, "cgdrag": 16, "simplenet": 1, "resnet18": 1, "deep-linear": 20,
         "toy-resnet": 13, "polynomial": 64}
COUPLINGS = [("torchscript", "torchscript"), ("bridge", "torchscript"), ("bridge", "eager")]


def test_small_sizes_cover_the_catalogue():
    assert set(SMALL) == set(catalogue.model_names())


@pytest.fixture(scope="module")
def matrix():
    specs = [RunSpec(model=m, size=s, backend=b, bridge_model=bm, warmup=1, iterations=2,
                     profile_iterations=0)
             for m, s in SMALL.items() for b, bm in COUPLINGS]
    doc = couplescope.run(specs)
    return {(v["spec"]["model"], v["spec"]["backend"], v["spec"]["bridge_model"]): v
            for v in doc["variants"]}


@pytest.mark.parametrize("model", sorted(SMALL))
@pytest.mark.parametrize("backend,bridge_model", COUPLINGS)
@pytest.mark.e2e
def test_model_passes_its_check_through_each_coupling(matrix, model, backend, bridge_model):
    v = matrix[(model, backend, bridge_model)]
    assert v["status"] == "finished", v["error"]
    assert v["checks_passed"], [it["max_rel_error"] for it in v["iterations"]]
    assert v["stats"]["n"] == 2
    assert v["load_seconds"] > 0
    for it in v["iterations"]:
        assert {"marshal_in", "forward", "marshal_out"} <= set(it["phases"])
        assert it["phases"]["forward"] <= it["seconds"]


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
