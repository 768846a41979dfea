"""Options are declared once (couplescope/protocol/options.py): every declaration is a
flag in --help, a field of the app's form, a preset key and a row of docs/options.md,
and a bad value is refused with the same words wherever it comes from."""

from __future__ import annotations

import os

import pytest

from couplescope.core import presets
from couplescope.frontends.cli.parser import _glue_pass_through, build_parser, options_from
from couplescope.frontends.tui import fields, form
from couplescope.frontends.tui.app import CoupleScopeApp
from couplescope.protocol import options, options_doc
from couplescope.protocol.errors import UsageError

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")


def good_value(o: options.Option):
    """A valid value of an option, as a preset holds it."""
    if o.kind is bool:
        return True
    if o.kind is tuple:
        return "8,16"
    if o.choices:
        return o.choices[-1]
    if o.kind in (int, float):
        if o.above_low:
            return o.kind(o.low + 1)
        return o.kind(o.low if o.low is not None else 3)
    return {"memory_limit": "16G", "device": "cpu", "model": "simplenet",
            "backend": "torchscript", "inner_backend": "torchscript"}.get(o.name, "some-text")


def bad_text(o: options.Option) -> str | None:
    """A value the declaration refuses, as text (None: every text is valid)."""
    if o.kind is tuple:
        return "8,a"
    if o.choices:
        return "nope"
    if o.kind in (int, float):
        return str(o.low - 1) if o.low is not None else "x"
    return {"memory_limit": "3X", "device": "tpu", "save_model": None}.get(o.name)


def cli_error(o: options.Option, text: str) -> str:
    argv = ["--model", "simplenet", o.flag, text]
    with pytest.raises(UsageError) as info:
        options_from(build_parser().parse_args(_glue_pass_through(argv)))
    return str(info.value)


def test_every_option_is_a_flag_in_help():
    text = build_parser().format_help()
    for o in options.OPTIONS:
        assert f"{o.flag} " in text or f"{o.flag}\n" in text, o.flag


def test_docs_options_table_is_the_declarations():
    with open(os.path.join(DOCS, "options.md")) as f:
        assert f.read() == options_doc.markdown(), "docs/options.md is stale: regenerate it with `python -m couplescope.frontends.docs_tables`"
    table = options_doc.markdown()
    for o in options.OPTIONS:
        assert f"`{o.flag}`" in table


@pytest.mark.parametrize("option", options.OPTIONS, ids=lambda o: o.name)
def test_every_option_is_a_preset_key(tmp_path, option):
    value = good_value(option)
    literal = repr(value).lower() if isinstance(value, bool) else (
        f'"{value}"' if isinstance(value, str) else repr(value))
    model = "" if option.name == "model" else 'model = "simplenet"\n'
    if option.scope == options.RUN:
        text = f'{option.name} = {literal}\n[defaults]\n{model}'
    else:
        text = f'[defaults]\n{model}{option.name} = {literal}\n'
    path = tmp_path / "p.toml"
    path.write_text(text)
    _, variants, settings = presets.read(str(path))
    got = settings.get(option.name) if option.scope == options.RUN else variants[0][option.name]
    assert got == option.check(value) or option.kind is tuple


@pytest.mark.parametrize("option", [o for o in options.OPTIONS if bad_text(o) is not None],
                         ids=lambda o: o.name)
def test_one_validation_wherever_the_value_comes_from(tmp_path, option):
    """The command line, a preset and the form's field say the same thing about a bad value."""
    text = bad_text(option)
    from_cli = cli_error(option, text)
    with pytest.raises(UsageError) as from_parse:
        option.parse(text)
    assert from_cli == str(from_parse.value)
    value = text if option.kind in (str, tuple) else (option.kind(text) if text != "x" else text)
    path = tmp_path / "p.toml"
    literal = f'"{value}"' if isinstance(value, str) else repr(value)
    where = f"{option.name} = {literal}\n[defaults]\nmodel = 'simplenet'\n" if option.scope == options.RUN \
        else f"[defaults]\nmodel = 'simplenet'\n{option.name} = {literal}\n"
    path.write_text(where)
    with pytest.raises(UsageError) as from_preset:
        presets.read(str(path))
    if isinstance(value, str) and option.kind in (int, float):
        assert "must be a" in str(from_preset.value)   # a string where a number belongs
    else:
        assert str(from_preset.value).endswith(from_cli), (str(from_preset.value), from_cli)


async def test_every_option_is_a_field_of_the_form():
    """One widget per declaration, its id the option's name (the backends list for
    --backend), and each field's bad text refused with the command line's words."""
    app = CoupleScopeApp(load_catalogue=False)
    checked = set()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for o in options.OPTIONS:
            selector = "#backends" if o.name == "backend" else f"#{o.name}"
            if not form.offered(o):   # e.g. --nodes without srun: not a field here, said so
                assert not app.query(selector), o.name
                continue
            widget = app.query_one(selector)
            text = bad_text(o)
            if text is None or o.name == "backend" or not hasattr(widget, "value") \
                    or not isinstance(widget.value, str):
                continue
            widget.value = text
            await pilot.pause()
            if widget.value != text:   # the field refuses the characters as they are typed
                continue
            with pytest.raises(UsageError) as info:
                fields.read(o, widget)
            assert str(info.value) == cli_error(o, text)
            checked.add(o.name)
            widget.value = ""
    assert {"size", "iterations", "warmup", "ranks", "input_shape", "memory_limit"} <= checked


def test_an_option_no_variant_reads_is_refused_by_its_declaration():
    from couplescope.core import request

    for o in options.OPTIONS:
        if o.backends is None or o.scope != options.SPEC:
            continue
        with pytest.raises(UsageError, match=f"{o.flag} applies to --backend"):
            request.build(request.RunOptions(model="simplenet", backends=["torchscript"],
                                             overrides={o.name: options.get(o.name).check(good_value(o))}))
