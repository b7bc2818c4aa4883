from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_atom.errors import PromptNotFoundError
from pytest_atom.paths import data_dir
from pytest_atom.prompts import PromptLoader, render_prompt
from tests.helpers import write

SHIPPED_ATOM = (data_dir("prompts") / "ATOM.md").read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty folder with no ATOM_PROMPTS_PATH, whatever the developer has."""
    monkeypatch.delenv("ATOM_PROMPTS_PATH", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def test_default_search_order(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env1, env2 = tmp_path / "env1", tmp_path / "env2"
    monkeypatch.setenv("ATOM_PROMPTS_PATH", os.pathsep.join([str(env1), "", str(env2)]))
    assert PromptLoader().search_paths == [
        isolated / ".atom" / "prompts",
        data_dir("prompts"),
        env1,
        env2,
    ]
    project = tmp_path / "proj"
    assert PromptLoader(project).search_paths[0] == project / ".atom" / "prompts"


def test_project_overrides_package(isolated: Path) -> None:
    write(isolated / ".atom" / "prompts" / "ATOM.md", "project atom")
    assert PromptLoader().load() == "project atom"


def test_explicit_project_dir_beats_cwd(isolated: Path, tmp_path: Path) -> None:
    write(isolated / ".atom" / "prompts" / "ATOM.md", "cwd atom")
    write(tmp_path / "proj" / ".atom" / "prompts" / "ATOM.md", "proj atom")
    assert PromptLoader(tmp_path / "proj").load() == "proj atom"


def test_package_overrides_env_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "ATOM_PROMPTS_PATH", str(write(tmp_path / "env" / "ATOM.md", "env atom").parent)
    )
    assert PromptLoader().load() == SHIPPED_ATOM


def test_env_path_used_when_others_lack_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = write(tmp_path / "env" / "ZZ_ENV_ONLY.md", "from env").parent
    monkeypatch.setenv("ATOM_PROMPTS_PATH", str(env))
    assert PromptLoader().load("zz_env_only") == "from env"


def test_env_path_with_two_entries_first_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write(tmp_path / "a" / "ZZ_BOTH.md", "from a").parent
    second = write(tmp_path / "b" / "ZZ_BOTH.md", "from b").parent
    write(second / "ZZ_B_ONLY.md", "b only")
    monkeypatch.setenv("ATOM_PROMPTS_PATH", os.pathsep.join([str(first), str(second)]))
    loader = PromptLoader()
    assert loader.load("zz_both") == "from a"
    assert loader.load("zz_b_only") == "b only"


def test_env_is_read_at_call_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loader = PromptLoader()
    with pytest.raises(PromptNotFoundError):
        loader.load("zz_late")
    monkeypatch.setenv(
        "ATOM_PROMPTS_PATH", str(write(tmp_path / "env" / "ZZ_LATE.md", "late").parent)
    )
    assert loader.load("zz_late") == "late"


def test_explicit_search_paths_replace_defaults(isolated: Path, tmp_path: Path) -> None:
    write(isolated / ".atom" / "prompts" / "ATOM.md", "project atom")
    only = write(tmp_path / "only" / "ATOM.md", "only atom").parent
    loader = PromptLoader(search_paths=[only])
    assert loader.search_paths == [only]
    assert loader.load() == "only atom"


@pytest.mark.parametrize(
    ("toolname", "expected"),
    [
        (None, "BASE"),
        ("atom_foo", "BASE\n\nFOO"),
        ("foo", "FOO"),
        ("atom_foo_bar", "BASE\n\nFOO BAR"),
        ("Foo_Bar", "FOO BAR"),
        ("atom", "BASE"),
    ],
)
def test_composition(tmp_path: Path, toolname: str | None, expected: str) -> None:
    folder = write(tmp_path / "p" / "ATOM.md", "BASE").parent
    write(folder / "FOO.md", "FOO")
    write(folder / "FOO_BAR.md", "FOO BAR")
    assert PromptLoader(search_paths=[folder]).load(toolname) == expected


def test_composed_files_are_found_independently(isolated: Path, tmp_path: Path) -> None:
    project = write(isolated / ".atom" / "prompts" / "ZZ_TOOL.md", "project tool").parent
    loader = PromptLoader()
    assert loader.load("atom_zz_tool") == SHIPPED_ATOM + "\n\nproject tool"
    assert loader.find("ZZ_TOOL.md") == project / "ZZ_TOOL.md"


@pytest.mark.parametrize("toolname", ["", "atom_", "../etc", "atom_..\\x", "sub/foo"])
def test_invalid_toolnames_are_rejected(tmp_path: Path, toolname: str) -> None:
    with pytest.raises(ValueError, match="toolname"):
        PromptLoader(search_paths=[tmp_path]).load(toolname)


def test_missing_prompt_names_file_and_every_folder(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env1, env2 = tmp_path / "env1", tmp_path / "env2"
    monkeypatch.setenv("ATOM_PROMPTS_PATH", os.pathsep.join([str(env1), str(env2)]))
    with pytest.raises(PromptNotFoundError) as info:
        PromptLoader().load("atom_zz_missing")
    message = str(info.value)
    assert "ZZ_MISSING.md" in message
    for folder in [isolated / ".atom" / "prompts", data_dir("prompts"), env1, env2]:
        assert str(folder) in message
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.prompt_name == "ZZ_MISSING.md"
    assert info.value.searched == [isolated / ".atom" / "prompts", data_dir("prompts"), env1, env2]


def test_directory_named_like_prompt_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "a" / "ATOM.md").mkdir(parents=True)
    second = write(tmp_path / "b" / "ATOM.md", "real").parent
    assert PromptLoader(search_paths=[tmp_path / "a", second]).load() == "real"


def test_render_prompt_leaves_other_braces() -> None:
    text = 'Max {max_iterations}; json {"a": {1}} and {other} and {max_iterations}.'
    assert render_prompt(text, 7) == 'Max 7; json {"a": {1}} and {other} and 7.'


def test_load_renders_only_when_asked(tmp_path: Path) -> None:
    folder = write(tmp_path / "ATOM.md", "at most {max_iterations} ```{x}```").parent
    loader = PromptLoader(search_paths=[folder])
    assert loader.load(max_iterations=12) == "at most 12 ```{x}```"
    assert loader.load() == "at most {max_iterations} ```{x}```"


def test_shipped_atom_prompt() -> None:
    text = PromptLoader().load()
    assert "EXIT_LOOP_NOW" in text and "USER_PROMPT.md" in text
    assert "{max_iterations}" in text
    rendered = PromptLoader().load(max_iterations=25)
    assert "at most 25" in rendered and "{max_iterations}" not in rendered
    assert 30 <= len(text.splitlines()) <= 50
