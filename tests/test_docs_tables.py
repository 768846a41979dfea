"""The docs that are tables are what the code says: options, hosts, keys, tabs, modules.

`python -m couplescope.frontends.docs_tables` writes them; these tests fail when a
generated part is stale, and say that command.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from couplescope.frontends import docs_tables
from couplescope.frontends.docs_tables import markers, module_map
from couplescope.protocol.errors import UsageError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("rel", sorted(os.path.join("docs", name) for name in docs_tables.GENERATED))
def test_a_generated_doc_is_what_the_code_says(rel):
    text = docs_tables.generated(ROOT)[rel]
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        assert f.read() == text, f"{rel} is stale: regenerate it with `{docs_tables.COMMAND}`"


def test_every_module_under_the_package_is_in_the_architecture_page():
    """docs/architecture.md lists every file of couplescope/ (the modules the issue found
    missing among them), each once."""
    page = open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8").read()
    listed = page.split("<!-- generated: modules", 1)[1].split("<!-- end generated: modules", 1)[0]
    for rel in module_map.files(os.path.join(ROOT, "couplescope")):
        shown = rel[: -len("__init__.py")] if rel.endswith("/__init__.py") else rel
        assert listed.count(f"`{shown}`") == 1, (f"{shown} is not in docs/architecture.md's module "
                                                  f"list: regenerate it with `{docs_tables.COMMAND}`")
    for named in ("protocol/option.py", "protocol/options_doc.py", "protocol/sizes.py", "backends/launcher.py",
                  "backends/hosts/base.py", "backends/native/train_host.cpp", "backends/native/build.py",
                  "worker/channel.py", "worker/memory_check.py", "worker/training_checks.py",
                  "backends/torchscript_training.py"):
        assert f"`{named}`" in listed, named


def test_markers_replace_only_their_block_and_a_missing_block_is_named():
    text = "# Keys\n\nprose\n\n" + markers.opening("keys", "cmd") + "\nold\n" + markers.closing("keys") + "\nmore\n"
    assert markers.replace(text, "keys", "new\n", "cmd") == text.replace("old\n", "new\n")
    with pytest.raises(UsageError, match="has no generated block 'tabs'"):
        markers.replace(text, "tabs", "x", "cmd")


def _command(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "couplescope.frontends.docs_tables", *args],
                          capture_output=True, text=True, cwd=cwd)


def test_the_command_names_a_stale_doc_and_rewrites_it_only(tmp_path):
    """--check passes on the checkout; on a copy whose table was edited by hand it exits 1
    naming the file and the command, and a plain run rewrites that file only."""
    r = _command("--check")
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    copy = tmp_path / "checkout"
    (copy / "docs").mkdir(parents=True)
    for name in docs_tables.GENERATED:
        (copy / "docs" / name).write_text(open(os.path.join(ROOT, "docs", name), encoding="utf-8").read())
    (copy / "couplescope").symlink_to(os.path.join(ROOT, "couplescope"))
    (copy / "pyproject.toml").symlink_to(os.path.join(ROOT, "pyproject.toml"))
    hosts = copy / "docs" / "hosts.md"
    before, block = hosts.read_text().split("<!-- generated: hosts", 1)
    hosts.write_text(before + "<!-- generated: hosts" + block.replace("| `python` |", "| `pyhton` |", 1))
    r = _command("--check", "--root", str(copy), cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout == f"docs/hosts.md is stale: regenerate it with `{docs_tables.COMMAND}`\n"
    r = _command("--root", str(copy), cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == "wrote docs/hosts.md\n", r.stderr
    assert hosts.read_text() == open(os.path.join(ROOT, "docs", "hosts.md"), encoding="utf-8").read()
    assert _command("--check", "--root", str(copy), cwd=tmp_path).returncode == 0
    r = _command("--root", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: no docs/ in ") and "Traceback" not in r.stderr
