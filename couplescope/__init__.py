"""couplescope: measure what coupling a simulation code to a PyTorch model costs.

The library API (importing it does not import torch or textual):
    couplescope.RunSpec      a frozen description of one variant
    couplescope.run(specs)   measure them in worker processes; returns the results document
    couplescope.load_preset(name, **overrides) -> list[RunSpec]
    couplescope.UsageError   raised for bad input

The package is layered by where code runs (docs/architecture.md): protocol, workloads,
backends, results, export, core | worker, frontends. Nothing inside those layers
imports this module, so the names above are resolved lazily.
"""

from couplescope.protocol import __version__


def _map_source_tree_folders() -> None:
    """In a source checkout, models/ and presets/ sit beside this package; installed, they
    live inside it (couplescope.models, couplescope.bundled_presets). When this package
    is imported straight from a checkout (python -m couplescope in the clone, Python 3.10
    workers), map the folders to the names they install under, so both work the same."""
    import importlib.util
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name, folder in (("couplescope.models", "models"), ("couplescope.bundled_presets", "presets")):
        init = os.path.join(root, folder, "__init__.py")
        if name in sys.modules or not os.path.isfile(init):
            continue
        if importlib.util.find_spec(name) is not None:  # installed or editable: already mapped
            continue
        spec = importlib.util.spec_from_file_location(name, init,
                                                      submodule_search_locations=[os.path.dirname(init)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        setattr(sys.modules[__name__], name.rsplit(".", 1)[1], module)


_map_source_tree_folders()

__all__ = ["RunSpec", "run", "load_preset", "UsageError", "__version__"]


def __getattr__(name: str):
    if name in ("run", "load_preset"):
        from couplescope.frontends import api

        return getattr(api, name)
    if name == "RunSpec":
        from couplescope.protocol.spec import RunSpec

        return RunSpec
    if name == "UsageError":
        from couplescope.protocol.errors import UsageError

        return UsageError
    raise AttributeError(f"module 'couplescope' has no attribute {name!r}")
