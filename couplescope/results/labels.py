"""What a saved variant ran, in words: model, backend, host, device, threads, torch.

A plot's title says what every variant shares once, and each variant's label only what
sets it apart; both come from `describe` (one ordered field -> text mapping per variant)
and `split_common`. Input is a results document's variant (spec, model) and the run's
environment, so any front end can label what it shows the same way.
"""

from __future__ import annotations

#: the order fields are written in; `size` last, as sweeps put it on an axis
FIELDS = ("model", "backend", "host", "device", "threads", "torch", "options", "size")


def size_of(variant: dict) -> int | None:
    """The size the variant ran at: the model's own report (a default size included),
    else the spec's."""
    size = (variant.get("model") or {}).get("size")
    return size if size is not None else (variant.get("spec") or {}).get("size")


#: words of run_started's `coupling` that say who made the calls, not what the backend ran
_HOST_WORDS = (" host", " mode", "training")


def backend_text(variant: dict) -> str:
    """The backend and what sets its variant apart, as the worker's backend named it
    (run_started's `label_parts`: "bridge (eager)", "mpi (torchscriptx2)"), else the first
    of its words in `coupling` ("bridge (user module)"); a run recorded without them: the
    backend's name."""
    spec = variant.get("spec") or {}
    backend = spec.get("backend", "?")
    parts = variant.get("label_parts")
    if parts:
        return f"{backend} ({' '.join(parts)})"
    words = [w for w in str(variant.get("coupling") or "").split(", ")[1:]
             if w and not any(w.endswith(h) or w == h for h in _HOST_WORDS)]
    return f"{backend} ({words[0]})" if words else backend


def describe(variant: dict, environment: dict | None = None) -> dict[str, str]:
    """field -> text for one variant, in FIELDS order; fields the run did not record
    (an old run without a host) are left out."""
    spec = variant.get("spec") or {}
    env = environment or {}
    out = {"model": str(spec.get("model", "?")).rsplit("/", 1)[-1], "backend": backend_text(variant)}
    if spec.get("host"):
        out["host"] = f"{spec['host']} host"
    out["device"] = spec.get("device", "cpu")
    threads = spec.get("threads") or env.get("torch_threads")
    if threads:
        out["threads"] = f"{threads} thread{'s' if threads != 1 else ''}"
    if env.get("torch"):
        out["torch"] = f"torch {env['torch']}"
    options = []
    if spec.get("dtype"):
        options.append(spec["dtype"])
    if spec.get("layout", "fortran") != "fortran":
        options.append(f"layout {spec['layout']}")
    if spec.get("grad_mode", "no_grad") != "no_grad":
        options.append(f"{spec['grad_mode']} mode")
    if spec.get("reload_every_call"):
        options.append("reload every call")
    if options:
        out["options"] = ", ".join(options)
    if size_of(variant) is not None:
        out["size"] = f"size {size_of(variant)}"
    return out


def split_common(descriptions: list[dict[str, str]]) -> tuple[dict[str, str], list[dict[str, str]]]:
    """(the fields every description shares, each description's other fields)."""
    if not descriptions:
        return {}, []
    common = {k: v for k, v in descriptions[0].items()
              if all(d.get(k) == v for d in descriptions[1:])}
    return common, [{k: v for k, v in d.items() if k not in common} for d in descriptions]


def text(fields: dict[str, str], skip: tuple = ()) -> str:
    return ", ".join(v for k, v in fields.items() if k not in skip)
