"""Find workloads by name: the models/ folder (installed as couplescope.models) and user files.

Names are the module names with "_" spelled "-" (`deep_linear.py` is `deep-linear`).
Listing names reads the folder only; loading one imports it (and torch).
"""

from __future__ import annotations

import importlib
import os
import pkgutil

from couplescope.protocol.errors import UsageError, choices_text


def model_names() -> list[str]:
    """Catalogue names, without importing any model (no torch)."""
    pkg = importlib.import_module(MODELS_PACKAGE)
    return sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules(pkg.__path__)
                  if not m.name.startswith("_"))


#: models/ installs as this package (one module per model, found by name)
MODELS_PACKAGE = "couplescope.models"
#: what a --model argument names: a catalogue model, a user's TorchScript file, a Python
#: module (a bridge module, or a module that makes the model for aoti), an exported program
KINDS = ("catalogue", "torchscript-file", "bridge-module", "exported-program")


def is_user_model(model: str) -> bool:
    """A model argument that names a file (a .pt TorchScript archive, a .py module, a .pt2
    exported program)."""
    return model.endswith((".pt", ".pth", ".py", ".pt2")) or os.sep in model or "/" in model


def kind(model: str) -> str:
    """One of KINDS, from the name alone (no file is opened)."""
    if not is_user_model(model):
        return "catalogue"
    if model.endswith(".py"):
        return "bridge-module"
    return "exported-program" if model.endswith(".pt2") else "torchscript-file"


def check_model_name(model: str) -> None:
    """Raise UsageError for an unknown catalogue name or a user file that cannot be a model.

    Cheap: no torch. Deeper checks (is it loadable?) happen in the worker.
    """
    if is_user_model(model):
        if not os.path.exists(model):
            raise UsageError(f"model file not found: {model}")
        if model.endswith(".py"):
            return
        import zipfile

        if model.endswith(".pt2") and not zipfile.is_zipfile(model):
            raise UsageError(f"{model} is not a .pt2 archive (save one with torch.export.save)")
        if not zipfile.is_zipfile(model):
            raise UsageError(f"{model} is not a TorchScript archive (save one with "
                             "torch.jit.save); give a .pt file or a bridge module .py")
        return
    if model not in model_names():
        raise UsageError(f"unknown model '{model}'; choose one of: {choices_text(model_names())}, "
                         "or a path to a .pt TorchScript file or a .py bridge module")


def train_steps(model: str) -> int | None:
    """The steps --task train makes for `model` when --iterations is not given: the
    Workload's `train_steps` (what its learning task needs to be judged), read from the
    model's file without importing torch where it can be. None: the default --iterations
    (a user's file has no learning task to judge)."""
    check_model_name(model)
    return None if is_user_model(model) else _described(model, "train_steps")


def train_optimizer(model: str) -> str:
    """The optimizer --task train uses for `model` when --optimizer is not given (the
    Workload's `train_optimizer`), read without importing torch where it can be; "sgd"
    for a user's file."""
    check_model_name(model)
    return "sgd" if is_user_model(model) else _described(model, "train_optimizer")


def _described(model: str, field: str):
    """A catalogue Workload's class attribute, from its file's syntax tree where it can be
    (couplescope.workloads.model_info), else from the imported model."""
    from couplescope.workloads import model_info

    described = model_info.info(f"{MODELS_PACKAGE}.{model.replace('-', '_')}")
    return described[field] if described is not None else getattr(load(model), field)


def load(model: str, input_shape=None, dtype=None):
    """Return the Workload for a catalogue name or a user file (imports torch)."""
    check_model_name(model)
    if is_user_model(model):
        from couplescope.workloads import user_models

        return user_models.for_path(model, input_shape=input_shape, dtype=dtype)
    module = importlib.import_module(f"{MODELS_PACKAGE}.{model.replace('-', '_')}")
    return module.WORKLOAD
