"""The layering and the protocol, checked: who imports whom, what imports are cheap, and
that the event table, the docs and real runs agree."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import name_guard
import pytest

from couplescope.protocol import events

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_import_contracts_hold():
    """pyproject.toml's import-linter contracts: layers, independent front ends, no
    worker-side import in the parent, events-only results and exporters, textual only
    in the app."""
    linter = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    assert linter, "lint-imports is missing: pip install '.[test]'"
    r = subprocess.run([linter, "--config", os.path.join(ROOT, "pyproject.toml"), "--no-cache"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "broken" in r.stdout and " 0 broken" in r.stdout


def test_every_package_of_the_source_tree_is_installed():
    """pyproject.toml lists the packages by hand (models/ and presets/ install inside the
    package): a new subpackage left off the list imports from the source tree and is
    missing from a regular `pip install .` (CI once failed on tui/views that way)."""
    try:
        import tomllib
    except ModuleNotFoundError:   # Python 3.10
        import tomli as tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "couplescope")):
        if "__init__.py" in files:
            found.add(os.path.relpath(folder, ROOT).replace(os.sep, "."))
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "; import sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def test_help_and_the_parent_pipeline_import_no_torch_or_textual():
    mods = _modules_after("from couplescope.frontends.cli.parser import build_parser; "
                          "build_parser().format_help(); import couplescope.frontends.command, "
                          "couplescope.core.pipeline, couplescope.core.request, couplescope.frontends.cli.printer, "
                          "couplescope.frontends.cli.saved_runs, couplescope.export.summary_plot")
    assert "torch" not in mods and "textual" not in mods
    assert "matplotlib" not in mods   # drawn with only when a picture is asked for
    r = subprocess.run([sys.executable, "-m", "couplescope", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--preset" in r.stdout and "exit codes" in r.stdout


def test_list_imports_no_torch_and_says_what_the_imported_models_say():
    """A listing should not need torch (its import was most of --list's 1.7 s, 4.5 s on a
    busy machine): models are read from their files, a CPU-only torch from its version
    file. What it lists must be what importing the models would say."""
    mods = _modules_after("import io; from couplescope.frontends.cli.listing import print_list; "
                          "print_list(io.StringIO())")
    assert "torch" not in mods and "textual" not in mods and "matplotlib" not in mods
    from couplescope.core.availability import read_catalogue
    from couplescope.workloads import catalogue

    listed = read_catalogue(with_devices=False).models
    assert list(listed) == catalogue.model_names()
    for name, shown in listed.items():
        w = catalogue.load(name)   # imports the model (and torch)
        assert shown == {"summary": w.summary, "size_name": w.size_name, "default_size": w.default_size,
                         "dtype": w.dtype, "train_steps": w.train_steps, "train_optimizer": w.train_optimizer}, name


def test_a_model_with_computed_attributes_is_imported_to_be_listed(tmp_path):
    """model_info reads constants only; anything else makes the catalogue import the model."""
    from couplescope.workloads import model_info

    (tmp_path / "computed_model.py").write_text(
        "from couplescope.workloads.base import Workload\n"
        "SIZE = 3\n"
        "class W(Workload):\n    name = 'computed'\n    default_size = SIZE * 2\n"
        "WORKLOAD = W()\n")
    (tmp_path / "constant_model.py").write_text(
        "from couplescope.workloads.base import Workload\n"
        "class Base(Workload):\n    dtype: str = 'float64'\n    default_size = 128 * 64\n"
        "class W(Base):\n    summary = 'a constant one'\n"
        "WORKLOAD = W()\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert model_info.info("computed_model") is None
        assert model_info.info("constant_model") == {"summary": "a constant one", "size_name": "size",
                                                     "default_size": 8192, "dtype": "float64",
                                                     "train_steps": None, "train_optimizer": "sgd"}
    finally:
        sys.path.remove(str(tmp_path))


def test_the_worker_and_the_library_never_import_textual():
    mods = _modules_after("import couplescope, couplescope.worker.engine, couplescope.worker.main, "
                          "couplescope.backends.torchscript, couplescope.backends.bridge, "
                          "couplescope.backends.mpi.team, couplescope.core.session, couplescope.core.pipeline, "
                          "couplescope.frontends.api")
    assert "textual" not in mods


def test_the_parent_never_imports_the_worker_side():
    mods = _modules_after("import couplescope.core.pipeline, couplescope.core.request, couplescope.frontends.api, "
                          "couplescope.frontends.cli.headless, couplescope.export.traces")
    assert not {m for m in mods if m.startswith("couplescope.worker")}


def _documented_events() -> dict[str, tuple[set, set]]:
    text = open(os.path.join(ROOT, "docs", "results.md"), encoding="utf-8").read()
    section = text.split("## events.jsonl", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].startswith("`"):
            names = lambda cell: set(re.findall(r"`([a-z_]+)`", cell))  # noqa: E731
            table[cells[0].strip("`")] = (names(cells[2]), names(cells[3]))
    return table


def test_docs_document_exactly_the_event_table():
    documented = _documented_events()
    assert set(documented) == set(events.EVENTS)
    for name, kind in events.EVENTS.items():
        assert documented[name] == (set(kind.fields), set(kind.optional)), name


def test_make_refuses_an_unknown_event_and_conforms_names_what_is_wrong():
    with pytest.raises(ValueError):
        events.make("iteration_done", "v")
    ev = events.make("log", "v", message="hi")
    assert events.conforms(ev) is None
    assert "lacks message" in events.conforms({k: v for k, v in ev.items() if k != "message"})
    assert "undocumented extra" in events.conforms({**ev, "extra": 1})


def test_a_backend_is_a_module_and_a_registry_line_with_every_hook_documented():
    from couplescope import backends
    from couplescope.backends.base import Backend, Team

    for name in backends.names():
        backend = backends.get(name)
        assert isinstance(backend, Backend) and backend.name == name
    hooks = [n for n, v in vars(Backend).items() if callable(v) and not n.startswith("_")]
    hooks += [n for n, v in vars(Team).items() if callable(v) and not n.startswith("_")]
    undocumented = [h for h in hooks if not (getattr(Backend, h, None) or getattr(Team, h)).__doc__]
    assert not undocumented, undocumented


def test_backend_and_host_names_are_spoken_only_by_backends_and_the_declarations():
    """Outside couplescope/backends/ and the option declarations, nothing asks which backend
    or host a variant has: where behaviour differs there is a hook (issue 23). The names are
    the registries' (tests/name_guard.py says the rule)."""
    found = name_guard.spoken_in_package(os.path.join(ROOT, "couplescope"))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("code,said", [
    ('if spec.backend == "mpi": pass', ["mpi"]),
    ('host = hosts.get(spec.host or "python")', ["python"]),
    ('run(backend="eager")', ["eager"]),
    ('if name in ("aoti", "mpi"): pass', ["aoti", "mpi"]),
    ('chosen = "native"', ["native"]),                        # no other vocabulary has it
    ('reasons = {"native": None, "python": why}', ["native", "python"]),   # keyed by host
    ('options = {"backend": "eager"}', ["eager"]),
    ('from couplescope.protocol.options import MPI_BACKEND', ["MPI_BACKEND"]),
    ('key = options.MPI_BACKEND', ["MPI_BACKEND"]),
    ('spec = {"bridge_model": "eager", "device": "cpu"}', []),  # the bridge's word, not the backend
    ('env = {"python": version, "torch": t}', []),            # a field's name
    ('if spec.bridge_model == "eager": pass', []),
    ('doc = "the eager model"', []),
])
def test_the_name_rule_tells_a_backend_from_the_same_word_in_another_vocabulary(code, said):
    """`eager` as a backend's name would also be a --bridge-model value: the rule must still
    find the backend asked for and leave the bridge's word alone."""
    names = {"mpi", "aoti", "native", "python", "eager", "torchscript"}
    others = {"eager", "torchscript", "compiled"}
    assert [n for _, n in name_guard.spoken(code, names, others, frozenset({"MPI_BACKEND"}))] == said
