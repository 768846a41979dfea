"""--task train for real: real torch, real TorchScript files, the real native host and
real MPI ranks. SimpleNet learns FTorch's example 11's task (10 000 steps take under a
second on the native host); the checks are shown to fail where they must."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from couplescope.backends import native
from couplescope.workloads.learning_tasks import LossHistory, SyntheticTarget
from conftest import FAST
from coupling_matrix import hosts_for
from couplescope.results.saved import iteration_records as records

needs_native = pytest.mark.skipif(native.unavailable() is not None,
                                  reason=f"the native host cannot be built here: {native.unavailable()}")
QUIET = ["--profile-iterations", "0", "--telemetry-hz", "0", "--quiet"]


def results(tmp_path, r) -> dict:
    assert r.stdout.strip(), r.stderr
    return json.loads(r.stdout)


#: the hosts whose example-11 run is the README's first training command (conftest's
#: first_training, shared with test_training_first_run.py); the others run their own
FIRST_TRAINING_HOSTS = ("native", "python")
TRAINING_HOSTS = hosts_for("torchscript", "train")
assert {p.values[0] for p in TRAINING_HOSTS} >= set(FIRST_TRAINING_HOSTS)


def assert_learnt_example_11s_shift(v: dict, printed: str, host: str) -> None:
    training = v["training"]
    assert training["gradient_check"]["passed"] and training["gradient_check"]["max_rel_error"] <= 1e-4
    final = training["final_check"]
    assert final["passed"] and final["max_rel_error"] <= 1e-3 and final["tolerance"] == 1e-3
    assert "PASSED :: [training] relative tolerance = 0.1000E-02" in printed
    losses = [it["loss"] for it in records(v) if it["kind"] in ("warmup", "timed")]
    assert len(losses) == 10001 and losses[-1] < 1e-3 * losses[0]
    phases = v["phases"]
    # pytorch-fortran's train makes the whole step in one call, which cannot be split
    for phase in ("train",) if host == "pytorch-fortran" else ("zero_grad", "forward", "loss", "backward", "step"):
        assert phases[phase]["median"] > 0, phase
    assert v["verdict"] == "passed" and training["optimizer"] == "sgd" and training["lr"] == 0.05


@pytest.mark.e2e
@pytest.mark.xdist_group("first-training")   # (conftest.first_training: made once, on one worker)
@pytest.mark.parametrize("host", [p for p in TRAINING_HOSTS if p.values[0] in FIRST_TRAINING_HOSTS])
def test_simplenet_learns_example_11s_shift_on_every_host(first_training, host):
    """On the hosts the first command runs on (its default train call, the first of theirs)."""
    from couplescope.backends import hosts

    run = first_training(host)
    assert run.variant["training"]["train_call"] == hosts.get(host).train_calls[0]
    assert_learnt_example_11s_shift(run.variant, run.run.stdout, host)


@pytest.mark.e2e
@pytest.mark.parametrize("host", [p for p in TRAINING_HOSTS if p.values[0] not in FIRST_TRAINING_HOSTS])
def test_simplenet_learns_example_11s_shift_on_every_library_host(cli, host):
    """The libraries' own hosts, with the library's own form of the step (pytorch-fortran:
    its train)."""
    from couplescope.backends import hosts

    train_call = hosts.get(host).train_calls[0]
    r = cli("--model", "simplenet", "--task", "train", "--host", host, "--iterations", "10000",
            "--threads", "1", "--warmup", "1", "--train-call", train_call, *QUIET, "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    assert_learnt_example_11s_shift(json.loads(r.stdout)["variants"][0], r.stderr, host)


@pytest.mark.e2e
@pytest.mark.parametrize("train_call,backend,host", [
    pytest.param("ftorch-mse", "torchscript", "native", marks=needs_native),
    pytest.param("pytorch-fortran", "torchscript", "native", marks=needs_native),
    ("ftorch-mse", "torchscript", "python"), ("pytorch-fortran", "bridge", "python")])
def test_a_fused_loss_learns_the_shift_as_the_operators_do(cli, train_call, backend, host):
    """--train-call ftorch-mse (FTorch's torch_loss_mse) and pytorch-fortran (its train:
    one mse_loss call, the loss read in the call): the same first step as eager PyTorch's
    F.mse_loss, example 11's task learnt, and the loss reported step by step."""
    r = cli("--model", "simplenet", "--task", "train", "--train-call", train_call, "--backend", backend,
            "--host", host, "--iterations", "10000", "--threads", "1", "--warmup", "1", *QUIET, "--json",
            timeout=600)
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)["variants"][0]
    training = v["training"]
    assert training["train_call"] == train_call and training["gradient_check"]["passed"], training
    assert training["final_check"]["passed"] and v["phases"]["loss"]["median"] > 0
    losses = [it["loss"] for it in records(v)]
    assert len(losses) == 10001 and losses[-1] < 1e-3 * losses[0]
    said = {"ftorch-mse": "mse loss (FTorch's torch_loss_mse)", "pytorch-fortran": "mse loss (pytorch-fortran's train)"}
    assert said[train_call] in r.stderr


@pytest.mark.e2e
@pytest.mark.parametrize("host", hosts_for("bridge", "train"))
def test_the_bridge_trains_through_its_train_function(cli, host):
    r = cli("--model", "simplenet", "--task", "train", "--backend", "bridge", "--host", host,
            "--iterations", "30", *QUIET, "--json", timeout=300)
    v = json.loads(r.stdout)["variants"][0]
    # 30 steps cannot learn the shift, so it is not judged; every step's loss is finite and
    # the first step equals eager PyTorch's
    assert v["training"]["gradient_check"]["passed"]
    assert v["training"]["final_check"]["passed"] is None and r.returncode == 0
    said = v["training"]["final_check"]["message"]
    assert said.startswith("not judged: 31 of the ~10 000 steps it needs (30 timed + 1 warm-up: "), said
    assert all(np.isfinite(it["loss"]) for it in records(v))
    assert {"zero_grad", "forward", "loss", "backward", "step"} <= set(v["phases"])


@pytest.mark.e2e
def test_the_wrong_layout_fails_the_gradient_check(cli):
    r = cli("--model", "simplenet", "--size", "3", "--task", "train", "--layout", "c", *FAST,
            "--quiet", "--json")
    assert r.returncode == 1
    v = json.loads(r.stdout)["variants"][0]
    check = v["training"]["gradient_check"]
    assert not check["passed"] and check["max_rel_error"] > 1e-2
    assert "differs from eager PyTorch's" in check["message"]
    assert v["verdict"] == "failed"


@pytest.mark.e2e
def test_a_diverging_run_ends_failed_naming_the_step(cli):
    r = cli("--model", "simplenet", "--task", "train", "--lr", "1e6", "--warmup", "0",
            "--iterations", "1000", *QUIET, "--json")
    assert r.returncode == 1, r.stderr
    v = json.loads(r.stdout)["variants"][0]
    assert v["verdict"] == "failed" and v["status"] == "failed"
    assert "training diverged" in v["error"] and "timed step" in v["error"]
    bad = [it for it in records(v) if not it["passed"]]
    assert bad and not np.isfinite(float(bad[0]["loss"]))
    assert len(records(v)) < 1000   # it stopped at the step, not after all of them


@pytest.mark.e2e
@needs_native
@pytest.mark.xdist_group("first-training")   # (conftest.first_training: made once, on one worker)
def test_save_model_writes_a_torchscript_file_that_shifts(first_training):
    import torch

    run = first_training("native")
    assert f"trained model saved (TorchScript): {run.model}" in run.run.stdout
    model = torch.jit.load(run.model)
    with torch.no_grad():
        got = model(torch.arange(1.0, 6.0)).numpy()
    assert np.allclose(got, [5, 1, 2, 3, 4], rtol=1e-3)


@pytest.mark.e2e
def test_cgdrag_learns_in_float64_with_adam(cli):
    r = cli("--model", "cgdrag", "--size", "64", "--task", "train", "--warmup", "1", "--iterations", "40",
            *QUIET, "--json", timeout=300)
    assert r.returncode == 0, r.stderr
    t = json.loads(r.stdout)["variants"][0]["training"]
    assert t["optimizer"] == "adam" and t["gradient_check"]["passed"]
    assert t["final_check"]["passed"] and t["final_check"]["last_loss"] < 0.5 * t["final_check"]["first_loss"]


def test_aoti_refuses_training_in_one_line(command):
    r = command("--model", "simplenet", "--task", "train", "--backend", "aoti")
    assert r.returncode == 2
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "inference-only" in lines[0] and "--backend torchscript" in lines[0]


def test_training_options_apply_to_training_only(command):
    r = command("--model", "simplenet", "--optimizer", "adam")
    assert r.returncode == 2 and "--optimizer applies to --task train" in r.stderr
    r = command("--model", "stride", "--task", "train", "--size", "4", "--iterations", "1")
    assert r.returncode == 2 and "no parameters" in r.stderr


# -- user models -------------------------------------------------------------------------

USER_TRAIN = textwrap.dedent('''
    import numpy as np
    import torch

    calls = {"train": 0}
    model = None
    optimizer = None

    def initialize(config):
        global model, optimizer
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 4)
        optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])

    def compute(inputs, output):
        output[...] = model(torch.from_numpy(inputs[0])).detach().numpy()

    def reference(inputs):
        with torch.no_grad():
            return model(torch.from_numpy(np.ascontiguousarray(inputs[0]))).numpy()

    def make_targets(inputs):
        return np.full(inputs[0].shape, 0.5, dtype=inputs[0].dtype)

    def train(inputs, target):
        optimizer.zero_grad()
        loss = ((model(torch.from_numpy(inputs[0])) - torch.from_numpy(target)) ** 2).mean()
        loss.backward()
        optimizer.step()
        calls["train"] += 1
        return (False, loss.item())
''')


@pytest.mark.e2e
def test_a_user_bridge_module_trains_toward_its_make_targets(cli, tmp_path):
    (tmp_path / "mine.py").write_text(USER_TRAIN)
    r = cli("--model", tmp_path / "mine.py", "--backend", "bridge", "--task", "train", "--lr", "0.1",
            "--input-shape", "2,4", "--warmup", "1", "--iterations", "50", *QUIET, "--json")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)["variants"][0]
    assert v["training"]["task"] == "the module's make_targets(inputs)"
    losses = [it["loss"] for it in records(v)]
    assert losses[-1] < losses[0]   # toward 0.5 everywhere


@pytest.mark.e2e
def test_a_user_bridge_module_without_train_is_refused(cli, tmp_path):
    (tmp_path / "mine.py").write_text(USER_TRAIN.replace("def train(", "def not_train("))
    r = cli("--model", tmp_path / "mine.py", "--backend", "bridge", "--task", "train",
            "--input-shape", "2,4", *FAST)
    assert r.returncode == 2
    assert "train(inputs, target)" in r.stderr


# -- MPI: data-parallel ----------------------------------------------------------------------

@pytest.mark.mpi
def test_two_ranks_train_with_averaged_gradients_and_identical_weights(cli):
    r = cli("--model", "simplenet", "--task", "train", "--backend", "mpi", "--ranks", "2",
            "--warmup", "1", "--iterations", "200", *QUIET, "--json", timeout=600)
    v = json.loads(r.stdout)["variants"][0]
    assert v["training"]["gradient_check"]["passed"]    # against an averaged eager reference
    ranked = [it for it in records(v) if "rank" in it]
    assert {it["rank"] for it in ranked} == {0, 1}
    assert all(it["passed"] for it in ranked)            # the same weights on both ranks, every step
    assert v["phases"]["allreduce"]["median"] > 0
    assert "allreduce" in r.stderr


@pytest.mark.mpi
def test_ranks_that_do_not_average_fail_the_same_weights_check(cli, tmp_path):
    """A user module that ignores config["allreduce"]: each rank learns from its own data
    alone, the weights drift apart, and every step after the first fails."""
    module = USER_TRAIN + textwrap.dedent('''
        def state():
            return {n: (p.detach().numpy().copy(), None) for n, p in model.named_parameters()}
    ''')
    (tmp_path / "mine.py").write_text(module)
    r = cli("--model", tmp_path / "mine.py", "--backend", "mpi", "--inner-backend", "bridge",
            "--task", "train", "--input-shape", "2,4", "--warmup", "0", "--iterations", "5", *QUIET,
            "--json", timeout=600)
    assert r.returncode == 1
    v = json.loads(r.stdout)["variants"][0]
    failed = [it for it in records(v) if not it["passed"]]
    assert failed and "hold different weights from rank 0" in failed[0]["error"]


def step_losses(spec, monkeypatch, budget: float | None = None) -> list[float]:
    """Every timed step's loss of a variant run in this process in three rounds of 20 steps,
    as the engine makes them (batches); `budget` replaces a native batch's time budget."""
    import tempfile

    from couplescope import backends
    from couplescope.backends.native import batch as native_batch
    from couplescope.worker.engine import prepare, seed_steps
    from couplescope.worker.measure import measure

    if budget is not None:
        monkeypatch.setattr(native_batch, "BATCH_SECONDS", budget)
    losses = []

    def emit(name, **fields):
        losses.extend(fields["loss"] if name == "iterations" else [fields["loss"]])

    with tempfile.TemporaryDirectory() as tmp:
        prepared = prepare(spec, backends.get(spec.backend), tmp)
        try:
            prepared.coupling.load()
            seed_steps(spec)
            for first in (1, 21, 41):
                measure(prepared, emit, "timed", 20, batch=True, first=first)
        finally:
            prepared.coupling.close()
    return losses


@pytest.mark.e2e
@needs_native
@pytest.mark.parametrize("backend", ["bridge", "torchscript"])
def test_where_a_native_batch_ends_changes_no_steps_data(monkeypatch, backend):
    """A native batch is filled with its steps' data ahead and ends when its time budget is
    spent; the steps it did not make are made by the next batch on the data they were
    filled with, so a run trains as one fill per step does (the python host), however its
    batches were cut (a busy machine ended one early now and then: the bridge's last loss
    differed from the python host's). A budget of 0 ends every batch after its first step."""
    from couplescope.protocol.spec import RunSpec

    spec = RunSpec(model="simplenet", task="train", backend=backend, bridge_model="torchscript",
                   threads=1, warmup=0, iterations=60, profile_iterations=0, seed=3)
    cut = step_losses(spec.replace(host="native"), monkeypatch, budget=0.0)
    one_by_one = step_losses(spec.replace(host="python"), monkeypatch)
    assert len(cut) == len(one_by_one) == 60
    np.testing.assert_allclose(cut, one_by_one, rtol=1e-6)


# -- no processes ------------------------------------------------------------------------

def test_loss_history_judges_the_ends_of_the_run():
    history = LossHistory()
    for loss in np.linspace(1.0, 0.1, 100):
        history.add(float(loss))
    verdict = history.well_below()
    assert verdict["passed"] and verdict["last_loss"] < 0.2 and verdict["first_loss"] > 0.9
    flat = LossHistory()
    for _ in range(20):
        flat.add(1.0)
    assert flat.well_below()["passed"] is False
    short = LossHistory()
    short.add(1.0)
    assert short.well_below()["passed"] is None


def test_synthetic_target_scales_the_spread_not_the_offset():
    y = np.array([[1.0, 10.0], [3.0, 10.0]])
    target = SyntheticTarget({"y": y}).targets({}, {"y": np.zeros_like(y, order="F")})["y"]
    assert np.allclose(target, [[0.5, 10.0], [3.5, 10.0]])


def test_the_memory_estimate_counts_gradients_and_adams_state():
    from couplescope.worker.memory_check import training_parts

    parts = {"host arrays": 10, "model": 100, "working memory": 50}
    sgd, adam = training_parts(parts, "sgd"), training_parts(parts, "adam")
    assert sgd["gradients"] == 100 and "optimizer state" not in sgd and sgd["kept for backward"] == 50
    assert adam["optimizer state"] == 200 and sum(adam.values()) == sum(sgd.values()) + 200


def test_steps_a_batch_did_not_make_get_their_data_again():
    """The data of steps filled ahead for a native batch and not made (it ended early) is
    the data the next batch makes them with: every step gets what one fill per step gives."""
    from couplescope.protocol.spec import RunSpec
    from couplescope.worker.training_checks import Training
    from couplescope.workloads import catalogue

    def training():
        workload = catalogue.load("simplenet", None, None)
        size, dtype = workload.default_size, workload.dtype
        arrays = workload.host_arrays(size, dtype, 5)
        outputs = {"y": np.zeros_like(arrays["x"], order="F")}
        return Training(RunSpec(model="simplenet", task="train", seed=5), workload, size, dtype, None,
                        arrays, outputs, {}, workload.calls(size))

    def data(t):
        return t.arrays["x"].copy(), t.targets["y"].copy()

    single = training()
    expected = []
    for _ in range(13):
        single.fill_next()
        expected.append(data(single))
    batched, got = training(), []
    for count, made in ((1, 1), (6, 2), (3, 1), (8, 5), (3, 3)):   # the driver's and C++ loop's cuts
        rows = batched.fill_rows(count)
        for i in range(made):   # what run_batch copies into the host arrays before step i
            for array, buffer in rows.values():
                array.ravel(order="K").view(np.uint8)[:] = buffer[i]
            got.append(data(batched))
        batched.unfill(count - made)
    batched.fill_next()   # the one-call path (profiled steps) after a cut batch
    got.append(data(batched))
    assert batched.steps == len(got) == 13
    for step, ((x, y), (want_x, want_y)) in enumerate(zip(got, expected), 1):
        assert np.array_equal(x, want_x) and np.array_equal(y, want_y), f"step {step}"
