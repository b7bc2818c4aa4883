"""Hand-written YAML (specs, config, scripts): alias bombs refused, errors at the real cause."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from pytest_atom import yamldoc
from pytest_atom.errors import ConfigError, ScriptError, SpecError, YamlDocError
from pytest_atom.gateway import Script
from pytest_atom.settings.config import load_config
from pytest_atom.spec_loader.load import load_specs


def billion_laughs(first_line: str, last_key: str = "i") -> str:
    """The classic: nine anchors of nine aliases each, about 10**9 nodes when expanded."""
    lines = [first_line, 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, key in zip("abcdefgh", "bcdefghi", strict=True):
        name = last_key if key == "i" else key
        lines.append(f"{name}: &{key} [{', '.join([f'*{prev}'] * 9)}]")
    return "\n".join(lines) + "\n"


def timed(fn: object) -> tuple[BaseException, float]:
    started = time.perf_counter()
    with pytest.raises(Exception) as info:
        fn()  # type: ignore[operator]
    return info.value, time.perf_counter() - started


def test_a_billion_laughs_spec_is_refused_quickly_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bomb.atom.yaml"
    path.write_text(billion_laughs("prompt: p"))
    error, seconds = timed(lambda: load_specs(path))
    assert isinstance(error, SpecError)
    assert seconds < 1.0
    assert error.message.startswith("YAML aliases would expand this document to ")
    assert "8 aliases repeat it" not in error.message  # each anchor is repeated by 9
    assert "9 aliases repeat it" in error.message and "write the values out" in error.message
    assert (error.line, error.column) == (9, 4)  # `h: &h [...]`, the biggest shared anchor


def test_a_billion_laughs_config_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".atom").mkdir()
    (tmp_path / ".atom" / "config.yaml").write_text(
        billion_laughs("timeout: 5", last_key="tools_dirs")
    )
    error, seconds = timed(lambda: load_config(cwd=tmp_path))
    assert isinstance(error, ConfigError) and seconds < 1.0
    assert "YAML aliases would expand" in str(error) and str(error).endswith("config.yaml:9:4")


def test_a_billion_laughs_script_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(billion_laughs("turns: [{text: hi}]"))
    error, seconds = timed(lambda: Script.load(path))
    assert isinstance(error, ScriptError) and seconds < 1.0
    assert "YAML aliases would expand" in str(error) and str(error).endswith("s.yaml:9:4")


def test_ordinary_anchors_stay_allowed() -> None:
    text = "base: &b {x: 1, y: [1, 2, 3]}\none: *b\ntwo: {<<: *b, x: 2}\n"
    assert yamldoc.safe_load(text) == {
        "base": {"x": 1, "y": [1, 2, 3]},
        "one": {"x": 1, "y": [1, 2, 3]},
        "two": {"x": 2, "y": [1, 2, 3]},
    }


def test_the_bound_counts_expanded_nodes_beyond_the_written_ones() -> None:
    # One anchor of 100 items used 101 times expands by 100 * 101 = 10100 nodes.
    items = ", ".join(["1"] * 99)
    text = f"a: &a [{items}]\nb: [{', '.join(['*a'] * 101)}]\n"
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    assert node is not None
    yamldoc.check_aliases(node, limit=10_100)
    with pytest.raises(YamlDocError, match="more than 10099 beyond"):
        yamldoc.check_aliases(node, limit=10_099)


def test_a_recursive_alias_is_an_error_not_a_hang() -> None:
    with pytest.raises(YamlDocError) as info:
        yamldoc.safe_load("a: &loop [1, *loop]\n")
    assert (info.value.message, info.value.line, info.value.column) == (
        "recursive YAML alias",
        1,
        4,
    )


UNCLOSED_QUOTE = 'name: x\nprompt: "hello\naccept:\n  - file_exists: a\ncriteria:\n  - c\n'


def test_an_unclosed_quote_is_reported_where_it_opens(tmp_path: Path) -> None:
    path = tmp_path / "q.atom.yaml"
    path.write_text(UNCLOSED_QUOTE)
    with pytest.raises(SpecError) as info:
        load_specs(path)
    error = info.value
    assert error.message == (
        "invalid YAML: found unexpected end of stream (line 7, column 1) "
        "while scanning a quoted scalar (line 2, column 9)"
    )
    assert (error.line, error.column) == (2, 9)
    assert str(error).endswith("q.atom.yaml:2:9")


def test_a_problem_inside_the_file_is_reported_where_it_is() -> None:
    # The parser's context (the mapping that began on line 1) is named, but the cause is
    # the badly indented key on line 3.
    error = yamldoc.from_yaml_error(_yaml_error("a: 1\nb:\n  c: 2\n d: 3\n"))
    assert error.message.startswith("invalid YAML: expected <block end>, but found ")
    assert "(line 4, column 2) while parsing a block mapping (line 1, column 1)" in error.message
    assert (error.line, error.column) == (4, 2)


def test_unclosed_quote_in_config_and_script_name_the_opening_line(tmp_path: Path) -> None:
    (tmp_path / ".atom").mkdir()
    (tmp_path / ".atom" / "config.yaml").write_text('timeout: 5\nmodel: "x\n\n\n')
    with pytest.raises(ConfigError) as config_error:
        load_config(cwd=tmp_path)
    assert "while scanning a quoted scalar (line 2, column 8)" in str(config_error.value)
    assert str(config_error.value).endswith("config.yaml:2:8")
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n  - text: 'hi\n\n")
    with pytest.raises(ScriptError) as script_error:
        Script.load(script)
    assert str(script_error.value).endswith("s.yaml:2:11")
    assert "while scanning a quoted scalar" in str(script_error.value)


def _yaml_error(text: str) -> yaml.YAMLError:
    try:
        yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return exc
    raise AssertionError("the text is valid YAML")
