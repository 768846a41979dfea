"""Presets: every bundled one loads; errors name the file and the key or line."""

import pytest

from couplescope import backends
from couplescope.backends import hosts, native
from couplescope.core import presets
from couplescope.protocol.errors import UsageError
from couplescope.core.validation import validate


def test_required_presets_ship():
    for name in ("stride512", "cgdrag", "simplenet", "resnet18", "toy-resnet", "deep-linear"):
        assert name in presets.preset_names()


@pytest.mark.parametrize("name", presets.preset_names())
def test_every_bundled_preset_builds_specs(name):
    description, specs = presets.load_preset(name)
    assert description and specs
    for spec in specs:
        if spec.device.startswith("cuda") or spec.backend == "cudagraph":
            continue  # validated where CUDA exists; refusal tested in test_gpu
        if spec.host is not None and hosts.unavailable(spec.host, spec):
            # a preset that asks for a host this machine lacks (the native host without a C++
            # compiler; real-ftorch's ftorch host without an FTorch install): refused for
            # that, saying so
            with pytest.raises(UsageError, match=f"--host {spec.host} is unavailable"):
                validate(spec)
            continue
        if backends.unavailable(spec.backend, spec):
            # not installable here (no C++ compiler for aoti, no mpi4py): every other check
            # comes first, so the spec is refused for that and only that
            with pytest.raises(UsageError, match=f"backend '{spec.backend}' is unavailable"):
                validate(spec)
            continue
        validate(spec)


def test_stride512_is_the_reference_benchmark():
    _, specs = presets.load_preset("stride512")
    assert [(s.backend, s.bridge_model) for s in specs] == [
        ("torchscript", "torchscript"), ("bridge", "torchscript"), ("bridge", "eager")]
    assert all(s.model == "stride" and s.size == 512 and s.warmup == 1 and s.iterations == 10
               for s in specs)


def test_deep_linear_sweeps_the_reference_sizes():
    _, specs = presets.load_preset("deep-linear")
    assert [s.size for s in specs] == [250, 500, 750, 1000]


def test_overrides_apply_to_every_variant():
    _, specs = presets.load_preset("stride512", {"size": 16, "iterations": 2})
    assert {(s.size, s.iterations) for s in specs} == {(16, 2)}


def write(tmp_path, text):
    path = tmp_path / "p.toml"
    path.write_text(text)
    return str(path)


def test_unknown_key_names_file_and_key(tmp_path):
    path = write(tmp_path, '[defaults]\nmodel = "simplenet"\n[[variant]]\nbackennd = "bridge"\n')
    with pytest.raises(UsageError, match=r"p\.toml.*unknown key 'backennd' in \[\[variant\]\] 1"):
        presets.load_preset(path)


def test_malformed_toml_names_the_line(tmp_path):
    path = write(tmp_path, '[defaults]\nmodel = "simplenet"\niterations = = 3\n')
    with pytest.raises(UsageError, match=r"p\.toml: invalid TOML.*line 3"):
        presets.load_preset(path)


def test_wrong_type_names_the_key(tmp_path):
    path = write(tmp_path, '[defaults]\nmodel = "simplenet"\niterations = "ten"\n')
    with pytest.raises(UsageError, match=r"'iterations'.*must be a whole number"):
        presets.load_preset(path)


def test_unknown_preset_lists_choices():
    with pytest.raises(UsageError, match="stride512"):
        presets.locate("no-such-preset")


def test_a_size_list_replaces_a_presets_own_sizes():
    """--size 25,50 on a preset that sweeps L = 250 ... 1000 runs L = 25 and 50 only (it ran
    every size of each list, 48 variants named -250-25 that ran at 25)."""
    from couplescope.core import request

    asked = request.build(request.RunOptions(preset="deep-linear-sweep", sizes=[25, 50]))
    assert sorted({s.size for s in asked.specs}) == [25, 50] and len(asked.specs) == 6
    assert all(s.name.endswith(f"-{s.size}") and s.name.count("-25") + s.name.count("-50") == 1
               for s in asked.specs)
    own = request.build(request.RunOptions(preset="deep-linear-sweep"))
    assert sorted({s.size for s in own.specs}) == [250, 500, 750, 1000]


def test_a_name_given_with_a_preset_goes_before_each_of_its_variants_names(monkeypatch):
    """--preset simplenet --name myrun: myrun-direct-torchscript, ... (it renamed all three
    myrun, numbered myrun-1..3, which said nothing of which was which); a preset of one
    variant takes the name as it is."""
    from couplescope.core import request
    from couplescope.core.request import RunOptions

    monkeypatch.setattr(backends, "unavailable", lambda name, spec=None: None)   # names only
    monkeypatch.setattr(native, "unavailable", lambda: None)
    preset_names = [v["name"] for v in presets.read(presets.locate("simplenet"))[1]]
    named = request.build(RunOptions(preset="simplenet", overrides={"name": "myrun"}))
    assert [s.name for s in named.specs] == [f"myrun-{n}" for n in preset_names]
    one = request.build(RunOptions(preset="simplenet-mpi", overrides={"name": "myrun"}))
    assert [s.name for s in one.specs] == ["myrun"]


def test_values_by_option_are_what_the_preset_sets():
    found = presets.values_by_option("simplenet-train")
    _, variants, _ = presets.read(presets.locate("simplenet-train"))
    assert found["task"] == ["train"] and found["iterations"] == [variants[0]["iterations"]]
    assert found["backend"] == list(dict.fromkeys(v["backend"] for v in variants))
    assert "seed" not in found   # what it does not set is the default's
