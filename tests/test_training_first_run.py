"""A new user's training runs, for real: the documented first command passes, fewer
steps than the task needs are not judged (and a model saved from them says so), a real
user's TorchScript file (FTorch-benchmarks' cgdrag network) trains on both hosts, and a
pytorch-fortran-style module with no reference(inputs) trains through the bridge, its
`done` honoured."""

from __future__ import annotations

import json
import os
import textwrap

import numpy as np
import pytest

from couplescope.backends import native
from couplescope.core import request
from couplescope.workloads import catalogue
from couplescope.results.saved import iteration_records as records

needs_native = pytest.mark.skipif(native.unavailable() is not None,
                                  reason=f"the native host cannot be built here: {native.unavailable()}")
HOSTS = [pytest.param("native", marks=needs_native), "python"]
QUIET = ["--profile-iterations", "0", "--telemetry-hz", "0"]
CGDRAG_FILE = "/work/shared/data/ftorch-benchmarks/saved_cgdrag_model_cpu.pt"


# -- the steps a task needs -----------------------------------------------------------------

def test_training_makes_the_steps_the_models_task_needs_unless_told():
    def iterations(**overrides):
        asked = request.RunOptions(model=overrides.pop("model", "simplenet"), overrides=overrides)
        return [s.iterations for s in request.build(asked).specs]

    assert catalogue.train_steps("simplenet") == 10_000
    assert iterations(task="train") == [10_000]                 # FTorch's example 11's loop
    assert iterations(task="train", iterations=50) == [50]      # what the user asked for
    assert iterations() == [10]                                 # inference: the default
    assert iterations(model="cgdrag", task="train") == [10]     # its task is judged on the default
    built = request.build(request.RunOptions(preset="cgdrag-train"))
    assert {s.iterations for s in built.specs} == {40}          # a preset's own stays


def test_help_says_what_training_makes_by_default(command):
    r = command("--help")
    assert r.returncode == 0
    assert ("--task train: optimizer steps, by default the steps the model's learning task needs "
            "(simplenet 10000" in " ".join(r.stdout.split()))


@pytest.mark.e2e
@pytest.mark.xdist_group("first-training")   # (conftest.first_training: made once, on one worker)
@pytest.mark.parametrize("host", HOSTS)
def test_the_first_training_command_passes(first_training, host):
    """`couplescope --model simplenet --task train` made 10 steps, failed example 11's
    check and exited 1. It makes the 10 000 the task needs (about a second of steps)."""
    r = first_training(host).run
    assert "10 000 timed steps + 1 warm-up ==" in r.stdout
    assert "PASSED :: [training] relative tolerance = 0.1000E-02" in r.stdout
    assert "9 995 more steps PASSED (--verbose prints every one)" in r.stdout
    assert len(r.stdout.splitlines()) < 60


@pytest.mark.e2e
def test_too_few_steps_are_not_judged_and_the_saved_model_says_so(cli, tmp_path):
    path = tmp_path / "shift.pt"
    r = cli("--model", "simplenet", "--task", "train", "--host", "python", "--iterations", "10",
            "--save-model", path, *QUIET, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    final = doc["variants"][0]["training"]["final_check"]
    assert final["passed"] is None and final["steps_needed"] == 10_000
    # the verdict the table and the app give, in results.json too (it said passed: the
    # fifteenth walk), in the variant and in the comparison; the checks it made passed
    assert doc["variants"][0]["verdict"] == "not judged" and doc["variants"][0]["checks_passed"]
    assert [(row["verdict"], row["passed"]) for row in doc["comparison"]] == [("not judged", True)]
    said = ("not judged: 11 of the ~10 000 steps it needs (10 timed + 1 warm-up: all train the model); "
            "use --iterations 10000")
    assert final["message"] == said and f"training: {said}" in r.stderr
    assert f"model saved (TorchScript), its learning not judged (above): {path}" in r.stderr
    assert "trained model saved" not in r.stderr and path.exists()


@pytest.mark.e2e
def test_a_model_saved_after_a_failed_check_says_so(cli, tmp_path):
    path = tmp_path / "wrong.pt"
    r = cli("--model", "simplenet", "--size", "3", "--task", "train", "--layout", "c", "--host", "python",
            "--iterations", "2", "--save-model", path, *QUIET)
    assert r.returncode == 1
    assert f"model saved (TorchScript) after a FAILED check (above), not a trained one: {path}" in r.stdout


# -- a real user's TorchScript file ---------------------------------------------------------

@pytest.mark.e2e
@pytest.mark.skipif(not os.path.exists(CGDRAG_FILE), reason=f"{CGDRAG_FILE} is not here")
@pytest.mark.parametrize("host", HOSTS)
def test_ftorch_benchmarks_cgdrag_file_trains(cli, host):
    """Its 174 parameters are leaves as torch.jit.load gives them; the copy the reference
    step trained was not (a TorchScript module's deepcopy clones under grad mode), and
    the optimizer refused it on both hosts: `can't optimize a non-leaf Tensor`."""
    r = cli("--model", CGDRAG_FILE, "--input-shape", "16,40;16,1;16,1", "--dtype", "float64",
            "--task", "train", "--host", host, "--warmup", "1", "--iterations", "2", *QUIET, "--json",
            timeout=900)
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)["variants"][0]
    training = v["training"]
    assert training["gradient_check"]["passed"] is True, training["gradient_check"]
    assert training["gradient_check"]["max_rel_error"] <= 1e-9
    losses = [it["loss"] for it in records(v)]
    assert len(losses) == 3 and all(np.isfinite(losses))
    assert {"zero_grad", "forward", "loss", "backward", "step"} <= set(v["phases"])


# -- a pytorch-fortran-style training module --------------------------------------------------

#: pytorch-fortran's python_training contract in couplescope's names: initialize, compute,
#: and train(inputs, target) -> (done, loss) as ftn_pytorch_train returns (is_completed,
#: loss); no reference(inputs), no make_targets, no state()
FTN_STYLE = textwrap.dedent('''
    import torch

    model = optimizer = None
    steps = 0

    def initialize(config):
        global model, optimizer
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 4).double()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def compute(inputs, output):
        with torch.no_grad():
            output[...] = model(torch.from_numpy(inputs[0])).numpy()

    def train(inputs, target):
        global steps
        optimizer.zero_grad()
        loss = ((model(torch.from_numpy(inputs[0])) - torch.from_numpy(target)) ** 2).mean()
        loss.backward()
        optimizer.step()
        steps += 1
        return (steps >= DONE_AFTER, loss.item())
''')


@pytest.mark.e2e
@pytest.mark.parametrize("host", HOSTS)
def test_a_pytorch_fortran_style_module_trains_through_the_bridge(cli, tmp_path, host):
    (tmp_path / "ftn_style.py").write_text(FTN_STYLE.replace("DONE_AFTER", "16"))
    r = cli("--model", tmp_path / "ftn_style.py", "--backend", "bridge", "--task", "train", "--host", host,
            "--input-shape", "8,4", "--dtype", "float64", "--warmup", "1", "--iterations", "40", *QUIET,
            "--json", timeout=900)
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)["variants"][0]
    training = v["training"]
    # done honoured: its 16th train call (timed step 15) said done, and no step came after it
    assert training["done_at"] == {"kind": "timed", "index": 15, "honoured": True}
    assert [it["index"] for it in records(v) if it["kind"] == "timed"] == list(range(1, 16))
    assert "the module said done (training complete) at timed step 15; no step was made after it" in r.stderr
    # the checks that need no reference: finite losses, the loss going down
    assert all(np.isfinite(it["loss"]) for it in records(v))
    final = training["final_check"]
    assert final["check"] == "loss went down" and final["passed"] is True
    assert final["last_loss"] < final["first_loss"]
    # and the one that does, said not made
    gradient = training["gradient_check"]
    assert gradient["passed"] is None and "not made: it needs a reference" in gradient["message"]
    assert "gradients: not made: it needs a reference" in r.stderr
    assert "checked against eager PyTorch" not in r.stderr


@pytest.mark.e2e
def test_a_module_whose_loss_does_not_go_down_fails(cli, tmp_path):
    rising = FTN_STYLE.replace("return (steps >= DONE_AFTER, loss.item())", "return (False, float(steps))")
    (tmp_path / "rising.py").write_text(rising)
    r = cli("--model", tmp_path / "rising.py", "--backend", "bridge", "--task", "train", "--host", "python",
            "--input-shape", "8,4", "--dtype", "float64", "--iterations", "12", *QUIET, "--json")
    assert r.returncode == 1
    final = json.loads(r.stdout)["variants"][0]["training"]["final_check"]
    assert final["check"] == "loss went down" and final["passed"] is False
    assert "FAILED :: [training] loss went down" in r.stderr
