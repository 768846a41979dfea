"""The profiler's operator-count probe leaves a training variant as it found it.

The probe (couplescope.worker.operator_probe) makes one unreported iteration before the
profiled window; for --task train that is an optimizer step, which must not train the
model: the steps reported are the steps that trained it. Real torch, the real couplings
(python and native hosts, the torchscript and bridge backends), Adam (whose state a step
changes too).
"""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

from couplescope.backends import native
from couplescope.protocol.spec import RunSpec

needs_native = pytest.mark.skipif(native.unavailable() is not None,
                                  reason=f"the native host cannot be built here: {native.unavailable()}")
HOSTS = [pytest.param("native", marks=needs_native), "python"]


def _losses(prepared, steps: int, first: int) -> list[float]:
    from couplescope.worker.measure import measure

    losses = []
    measure(prepared, lambda name, **f: losses.append(f["loss"]), "timed", steps, first=first)
    return losses


@pytest.mark.e2e
@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("backend", ["torchscript", "bridge"])
def test_probes_stopped_anywhere_in_a_step_leave_the_training_as_it_was(backend, host):
    """Two identical variants make two steps; then one of them is probed, in full and
    stopped at every operator of the step (a probe over budget stops mid-step, after some
    weights or optimizer state were written); then both make two more steps. Their losses
    and weights must be equal: the probes trained nothing. On main the probe's step stayed
    (its weights, Adam's moments, the next step's data drawn)."""
    from couplescope import backends
    from couplescope.worker.engine import prepare, seed_steps
    from couplescope.worker.operator_probe import count_operators

    spec = RunSpec(model="simplenet", task="train", backend=backend, host=host, bridge_model="torchscript",
                   optimizer="adam", threads=1, warmup=0, iterations=4, profile_iterations=0, seed=5)
    with tempfile.TemporaryDirectory() as tmp_probed, tempfile.TemporaryDirectory() as tmp_plain:
        probed = prepare(spec, backends.get(backend), tmp_probed)
        plain = prepare(spec, backends.get(backend), tmp_plain)
        try:
            runs = {}
            for name, prepared in (("probed", probed), ("plain", plain)):
                prepared.coupling.load()
                seed_steps(spec)
                runs[name] = _losses(prepared, 2, 1)
                if name == "probed":
                    whole = count_operators(probed, 100_000)
                    assert whole and whole > 20          # a whole step was seen (forward to step)
                    for limit in range(1, whole):     # stopped after 1, 2, ... operators
                        assert count_operators(probed, limit) > limit
                runs[name] += _losses(prepared, 2, 3)
            assert runs["probed"] == runs["plain"]
            weights_probed, weights_plain = probed.coupling.state(), plain.coupling.state()
            assert weights_probed.keys() == weights_plain.keys() and weights_plain
            for name in weights_plain:
                np.testing.assert_array_equal(weights_probed[name][0], weights_plain[name][0])
        finally:
            probed.coupling.close()
            plain.coupling.close()


@pytest.mark.e2e
def test_a_profiled_training_run_is_the_steps_it_reports(tmp_path):
    """A real run with the profiled window (its probe included) ends with the weights of
    the same number of steps made without profiling: 1 warm-up + 2 timed + 2 profiled = 5
    steps, against 1 + 4 timed. On main the probe's unreported sixth step trained it."""
    import torch

    from couplescope.frontends.api import run as run_specs

    base = RunSpec(model="simplenet", task="train", host="python", optimizer="adam", threads=1,
                   warmup=1, seed=2)
    specs = [base.replace(iterations=2, profile_iterations=2, save_model=str(tmp_path / "profiled.pt"),
                          name="profiled"),
             base.replace(iterations=4, profile_iterations=0, save_model=str(tmp_path / "plain.pt"),
                          name="plain")]
    profiled, plain = run_specs(specs)["variants"]
    assert profiled["profile"]["status"] == "ok" and profiled["profile"]["operators_per_iteration"] > 0
    assert profiled["training"]["steps"] == plain["training"]["steps"] == 5
    trained = torch.jit.load(str(tmp_path / "profiled.pt")).state_dict()
    expected = torch.jit.load(str(tmp_path / "plain.pt")).state_dict()
    assert trained.keys() == expected.keys()
    for name in expected:
        assert torch.equal(trained[name], expected[name]), name
