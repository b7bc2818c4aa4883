"""One YAML loader: a `!foo` tag (or any YAML failure) in each hand-written file kind is
that kind's own clean error naming the file, line and column, never PyYAML's traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_atom import yamldoc
from pytest_atom.errors import ConfigError, ScriptError, SpecError, YamlDocError
from pytest_atom.evalsuite.suites import load_case
from pytest_atom.gateway.scripted import Script
from pytest_atom.run.workspace import _spec_values
from pytest_atom.settings.config import load_config
from pytest_atom.spec.workspaces import declared_workspaces
from pytest_atom.spec_loader.load import load_specs

TAGGED = "prompt: hi\nnote: !foo bar\n"  # the tag sits on line 2, column 7


def test_the_loader_turns_a_constructor_error_into_its_own_error() -> None:
    with pytest.raises(YamlDocError) as caught:
        yamldoc.load(TAGGED)
    assert (caught.value.line, caught.value.column) == (2, 7)
    assert "unknown YAML tag '!foo'" in caught.value.message
    assert "remove the tag" in caught.value.message


def test_a_tag_deep_in_a_node_built_later_is_still_a_clean_error() -> None:
    node = yaml.compose("a: [1, !foo 2]\n", Loader=yaml.SafeLoader)
    assert node is not None
    with pytest.raises(YamlDocError) as caught:
        yamldoc.construct(node)
    assert caught.value.line == 1


def test_a_tag_in_a_spec_is_a_spec_error(tmp_path: Path) -> None:
    file = tmp_path / "t.atom.yaml"
    file.write_text(TAGGED)
    with pytest.raises(SpecError) as caught:
        load_specs(file)
    assert (caught.value.path, caught.value.line, caught.value.column) == (file, 2, 7)
    assert "'!foo'" in str(caught.value) and "t.atom.yaml:2:7" in str(caught.value)


def test_a_tag_in_the_config_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / ".atom").mkdir()
    file = tmp_path / ".atom" / "config.yaml"
    file.write_text("timeout: !foo 5\n")
    with pytest.raises(ConfigError) as caught:
        load_config(cwd=tmp_path)
    assert (caught.value.path, caught.value.line, caught.value.column) == (file, 1, 10)
    assert "'!foo'" in str(caught.value)


def test_a_tag_in_a_script_is_a_script_error(tmp_path: Path) -> None:
    file = tmp_path / "s.yaml"
    file.write_text("turns:\n  - text: hi\n  - text: !foo done\n")
    with pytest.raises(ScriptError) as caught:
        Script.load(file)
    assert f"{file}:3:11" in str(caught.value) and "'!foo'" in str(caught.value)


def _case(tmp_path: Path) -> Path:
    case = tmp_path / "plugin" / "evals" / "c"
    case.mkdir(parents=True)
    return case


def test_a_tag_in_a_case_yaml_is_a_spec_error(tmp_path: Path) -> None:
    case = _case(tmp_path)
    (case / "case.yaml").write_text('schema_version: "1.1"\nname: !foo c\n')
    with pytest.raises(SpecError) as caught:
        load_case(case / "case.yaml")
    assert (caught.value.path, caught.value.line) == (case / "case.yaml", 2)
    assert "'!foo'" in str(caught.value)


def test_a_tag_in_a_prompt_md_frontmatter_names_its_line_in_the_file(tmp_path: Path) -> None:
    case = _case(tmp_path)
    (case / "prompt.md").write_text("---\nname: c\nruns: !foo 2\n---\nDo it.\n")
    with pytest.raises(SpecError) as caught:
        load_case(case / "prompt.md")
    assert (caught.value.path, caught.value.line) == (case / "prompt.md", 3)
    assert "invalid YAML frontmatter: unknown YAML tag '!foo'" in str(caught.value)


def test_spec_files_read_for_their_workspaces_skip_a_tagged_file(tmp_path: Path) -> None:
    """Read before validation: a broken spec file is reported when it is collected, so
    reading it for its workspace or its own files passes over it instead of crashing."""
    (tmp_path / "bad.atom.yaml").write_text("prompt: hi\nworkspace: !foo ws\n")
    (tmp_path / "good.atom.yaml").write_text("prompt: hi\nworkspace: other\n")
    assert declared_workspaces(tmp_path) == frozenset({tmp_path / "other"})
    assert _spec_values(tmp_path / "bad.atom.yaml") == []
