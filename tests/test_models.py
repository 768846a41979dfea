"""The model catalogue, with real torch at small sizes.

What a coupling backend relies on: host arrays are column-major, builds are reproducible
from a seed, the TorchScript form survives save/load and, run on the column-major memory
as torch.from_numpy sees it (strides kept), passes the workload's own check; while the
same memory wrongly read as row-major fails it wherever that changes the data.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from couplescope.workloads import catalogue
from couplescope.workloads.base import numpy_dtype

# small sizes keep the whole file in a few seconds; other models use their default
SMALL = {"stride": 8, "cgdrag": 16, "resnet18": 1, "deep-linear": 20, "toy-resnet": 13,
         "polynomial": 64, "simplenet": 3}
EXPECTED_MODELS = {"stride", "cgdrag", "resnet18", "deep-linear", "toy-resnet", "polynomial",
                   "simplenet"}
NAMES = catalogue.model_names()


def small_size(name):
    return SMALL.get(name, catalogue.load(name).default_size)


@functools.cache
def prepared(name):
    """(workload, size, eager module, host arrays, expected) at the small size, seed 0."""
    w = catalogue.load(name)
    size = small_size(name)
    w.validate_size(size)
    module = w.build(size, w.dtype, 0)
    arrays = w.host_arrays(size, w.dtype, 0)
    return w, size, module, arrays, w.expected(module, arrays, size)


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """The TorchScript form of each model after a torch.jit.save / torch.jit.load round trip."""
    cache = {}

    def get(name):
        if name not in cache:
            w, size, module, arrays, _ = prepared(name)
            example = tuple(torch.from_numpy(arrays[n]) for n in w.calls(size)[0].inputs)
            path = tmp_path_factory.mktemp("ts") / f"{name}.pt"
            torch.jit.save(w.script(module, example), str(path))
            cache[name] = torch.jit.load(str(path))
        return cache[name]

    return get


def run(ts, w, size, arrays, to_tensor):
    out = {}
    with torch.inference_mode():
        for call in w.calls(size):
            out[call.output] = ts(*[to_tensor(arrays[n]) for n in call.inputs]).numpy().copy()
    return out


def column_major(a):
    t = torch.from_numpy(a)
    assert t.stride() == tuple(s // a.itemsize for s in a.strides)  # no copy, strides kept
    return t


def misread_row_major(a):
    """The host memory read in storage order as if it were row-major: a silent transpose."""
    return torch.from_numpy(a.ravel(order="K")).reshape(a.shape)


def layout_matters(arrays, names):
    """Whether row-major and column-major differ for any input (two or more dims above 1)."""
    return any(sum(d > 1 for d in arrays[n].shape) >= 2 for n in names)


def test_catalogue_lists_the_reference_models():
    assert EXPECTED_MODELS <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_metadata(name):
    w = catalogue.load(name)
    assert w.name == name
    assert w.summary and w.size_name and w.size_help
    w.validate_size(w.default_size)
    for size in w.sweep:
        w.validate_size(size)
    assert w.tolerance(w.dtype) > 0


@pytest.mark.parametrize("name", NAMES)
def test_host_arrays_are_column_major(name):
    w, size, _, arrays, _ = prepared(name)
    for call in w.calls(size):
        for n in call.inputs:
            assert n in arrays
    for n, a in arrays.items():
        assert a.dtype == numpy_dtype(w.dtype), n
        assert a.flags.f_contiguous, n
        if sum(d > 1 for d in a.shape) >= 2:  # a (n, 1) array is both orders at once
            assert not a.flags.c_contiguous, n


@pytest.mark.parametrize("name", NAMES)
def test_build_is_deterministic_for_a_seed(name):
    w, size, module, arrays, _ = prepared(name)
    rng_before = torch.random.get_rng_state()
    again = w.build(size, w.dtype, 0)
    if name != "simplenet":  # its nn.Linear draws an init it then overwrites with 2I
        assert torch.equal(rng_before, torch.random.get_rng_state())  # global RNG untouched
    s1, s2 = module.state_dict(), again.state_dict()
    assert s1.keys() == s2.keys()
    assert all(torch.equal(s1[k], s2[k]) for k in s1)
    assert not again.training
    arrays2 = w.host_arrays(size, w.dtype, 0)
    assert all(np.array_equal(arrays[k], arrays2[k]) for k in arrays)
    if name != "simplenet":  # simplenet's weights and inputs are fixed by design
        other = w.host_arrays(size, w.dtype, 1)
        assert any(not np.array_equal(arrays[k], other[k]) for k in arrays)
        s3 = w.build(size, w.dtype, 1).state_dict()
        params = [k for k in s1 if s1[k].is_floating_point()]
        if params:
            assert any(not torch.equal(s1[k], s3[k]) for k in params)


@pytest.mark.parametrize("name", NAMES)
def test_torchscript_on_column_major_memory_passes(name, scripted):
    w, size, _, arrays, expected = prepared(name)
    outputs = run(scripted(name), w, size, arrays, column_major)
    assert set(outputs) == set(expected)
    err = w.check(outputs, expected, arrays)
    assert err <= w.tolerance(w.dtype), err


@pytest.mark.parametrize("name", NAMES)
def test_column_major_memory_read_as_row_major_fails(name, scripted):
    w, size, _, arrays, expected = prepared(name)
    outputs = run(scripted(name), w, size, arrays, misread_row_major)
    err = w.check(outputs, expected, arrays)
    inputs = {n for call in w.calls(size) for n in call.inputs}
    if layout_matters(arrays, inputs):
        assert not err <= w.tolerance(w.dtype), err
    else:  # e.g. polynomial's (batch, 1): both readings are the same data
        assert err <= w.tolerance(w.dtype), err


@pytest.mark.parametrize("name", ["stride", "cgdrag", "resnet18", "deep-linear", "toy-resnet"])
def test_layout_bug_is_visible_for(name):
    w, size, _, arrays, _ = prepared(name)
    inputs = {n for call in w.calls(size) for n in call.inputs}
    assert layout_matters(arrays, inputs)


@pytest.mark.parametrize("name", NAMES)
def test_nan_fails_and_wrong_shape_is_infinite(name):
    w, size, _, arrays, expected = prepared(name)
    first = next(iter(expected))
    bad = {k: v.copy() for k, v in expected.items()}
    bad[first].flat[-1] = np.nan
    err = w.check(bad, expected, arrays)
    assert not err <= w.tolerance(w.dtype)
    wrong = dict(expected)
    wrong[first] = np.zeros(expected[first].size + 1, dtype=expected[first].dtype)
    assert w.check(wrong, expected, arrays) == float("inf")


@pytest.mark.parametrize("name", NAMES)
def test_dtype_is_respected(name):
    w = catalogue.load(name)
    size = small_size(name)
    dtype = "float64" if w.dtype != "float64" else "float32"
    module = w.build(size, dtype, 0)
    assert all(p.dtype == getattr(torch, dtype) for p in module.state_dict().values()
               if p.is_floating_point())
    arrays = w.host_arrays(size, dtype, 0)
    assert all(a.dtype == np.dtype(dtype) for a in arrays.values())


def test_stride_check_is_the_reference_check():
    w, size, module, arrays, expected = prepared("stride")
    assert w.check(expected, expected, arrays) == 0.0
    unnegated = {"y": 2 * arrays["x"]}
    assert w.check(unnegated, expected, arrays) == pytest.approx(2.0)
    # the analytic reference is what the eager loop computes
    with torch.inference_mode():
        eager = module(torch.from_numpy(arrays["x"])).numpy()
    np.testing.assert_array_equal(eager, expected["y"])


def test_stride_is_scripted_not_traced(scripted):
    ts = scripted("stride")
    assert "for i in range" in ts.code  # the loop survives; a trace would unroll it
    with pytest.raises(ValueError, match="at least 2"):
        catalogue.load("stride").validate_size(1)


def test_simplenet_expected_is_exact():
    w = catalogue.load("simplenet")
    arrays = w.host_arrays(1, "float32", 0)
    expected = w.expected(w.build(1, "float32", 0), arrays, 1)
    np.testing.assert_array_equal(expected["y"], np.array([0, 2, 4, 6, 8], dtype=np.float32))


def test_cgdrag_makes_two_calls_per_step():
    w, size, _, arrays, expected = prepared("cgdrag")
    calls = w.calls(size)
    assert [c.output for c in calls] == ["drag_u", "drag_v"]
    assert [c.inputs for c in calls] == [("wind_u", "lat", "ps"), ("wind_v", "lat", "ps")]
    assert arrays["wind_u"].shape == (size, 40) and arrays["lat"].shape == (size, 1)
    assert expected["drag_u"].shape == (size, 40) and expected["drag_u"].dtype == np.float64
    assert not np.array_equal(expected["drag_u"], expected["drag_v"])


def test_toy_resnet_rejects_too_small_images():
    w = catalogue.load("toy-resnet")
    with pytest.raises(ValueError, match="13"):
        w.validate_size(12)
    w.validate_size(13)


def test_deep_linear_sweeps_the_reference_depths():
    w = catalogue.load("deep-linear")
    assert w.sweep == (250, 500, 750, 1000) and w.default_size == 250
    _, size, module, _, expected = prepared("deep-linear")
    assert len(module.layers) == size
    assert 0.1 < np.abs(expected["y"]).max() < 10  # orthogonal init keeps values O(1)


def test_resnet18_is_resnet18():
    _, _, module, _, expected = prepared("resnet18")
    n_params = sum(p.numel() for p in module.parameters())
    assert n_params == 11_689_512  # torchvision's resnet18 count
    assert expected["y"].shape == (1, 1000)
