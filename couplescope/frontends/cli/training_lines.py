"""What the headless printer says of a training variant: how its loss is made (its header),
and at its end what it learnt, in the words FTorch's example 11 prints."""

from __future__ import annotations

from couplescope.frontends import formatting as fmt


def made_as(train_call) -> str:
    """How a training step's loss is made, where it is not FTorch's example 11's way."""
    return {"ftorch-mse": " (FTorch's torch_loss_mse)",
            "pytorch-fortran": " (pytorch-fortran's train)"}.get(train_call, "")


def fortran_e(value: float) -> str:
    """Fortran's E10.4 as FTorch's allclose prints a tolerance: 0.1000E-02."""
    if value == 0:
        return "0.0000E+00"
    import math

    exponent = math.floor(math.log10(abs(value))) + 1
    return f"{value / 10 ** exponent:.4f}E{exponent:+03d}"


def training_lines(training: dict | None, variant) -> list[str]:
    """What a training variant learnt: the first step's check, the losses, the learning
    task's own check (FTorch's example 11 prints `PASSED :: [training] relative tolerance
    = 0.1000E-02`), where the trained model went."""
    if not training:
        return []
    lines = []
    gradient = training.get("gradient_check") or {}
    if gradient.get("passed") is None and gradient:   # not made: said, neither PASSED nor FAILED
        lines.append(f"gradients: {gradient.get('message', '')}")
    elif gradient:
        word = "PASSED" if gradient.get("passed") else "FAILED"
        lines.append(f"{word} :: [gradients] {gradient.get('message', '')}")
    # every step trains the model, the profiled ones too (protocol.step_words): the last
    # loss is the last step's, and the count is every step's, as the not-judged line counts
    losses = [loss for _, loss in variant.calls.losses() if loss is not None]
    if losses:
        made = {kind: len({it["index"] for it in variant.iterations if it["kind"] == kind})   # once, not per rank
                for kind in ("timed", "warmup", "profiled")}
        lines.append(f"loss: {fmt.sci(losses[0])} at the first step, {fmt.sci(losses[-1])} at the last "
                     f"({fmt.made_words(made['timed'], made['warmup'], 'steps', made['profiled'])}, "
                     f"{training.get('optimizer')} lr {training.get('lr', 0):g})")
    done = training.get("done_at")
    if done:
        lines.append(done_line(done))
    final = training.get("final_check") or {}
    if final.get("passed") is not None:
        word = "PASSED" if final["passed"] else "FAILED"
        tolerance = final.get("tolerance")
        if final.get("max_rel_error") is not None and tolerance is not None:
            lines.append(f"{word} :: [training] relative tolerance = {fortran_e(tolerance)}")
        else:
            lines.append(f"{word} :: [training] {final.get('check', 'learnt')}")
        lines.append(f"  {final.get('message', '')}")
    elif final.get("message"):
        lines.append(f"training: {final['message']}")
    if training.get("saved_model"):
        lines.append(saved_line(training["saved_model"], gradient.get("passed") is not False
                                and final.get("passed")))
    return lines


def done_line(done: dict) -> str:
    """Where a bridge module's train call said training is complete (pytorch-fortran's
    is_completed), and whether the steps ended there."""
    where = f"{'warm-up' if done.get('kind') == 'warmup' else done.get('kind')} step {done.get('index')}"
    if done.get("honoured", True):
        return f"training: the module said done (training complete) at {where}; no step was made after it"
    return (f"training: rank 0's module said done (training complete) at {where}; the ranks step "
            "together, so the steps went on")


def saved_line(path: str, learnt) -> str:
    """Where --save-model wrote the model, and whether it is a trained one: a check that
    failed, or a learning task not judged, is said on the same line (True: the checks
    passed; False: one failed; None: not judged)."""
    if learnt:
        return f"trained model saved (TorchScript): {path}"
    if learnt is None:
        return f"model saved (TorchScript), its learning not judged (above): {path}"
    return f"model saved (TorchScript) after a FAILED check (above), not a trained one: {path}"
