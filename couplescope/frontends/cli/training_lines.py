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
    if gradient:
        word = "PASSED" if gradient.get("passed") else "FAILED"
        lines.append(f"{word} :: [gradients] {gradient.get('message', '')}")
    losses = [it["loss"] for it in variant.iterations if it.get("loss") is not None and it["kind"] != "profiled"]
    if losses:
        lines.append(f"loss: {fmt.sci(losses[0])} at the first step, {fmt.sci(losses[-1])} at the last "
                     f"({training.get('steps', len(losses))} steps, {training.get('optimizer')} "
                     f"lr {training.get('lr', 0):g})")
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
        lines.append(f"trained model saved (TorchScript): {training['saved_model']}")
    return lines
