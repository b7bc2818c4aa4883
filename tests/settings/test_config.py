from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.errors import ConfigError
from pytest_atom.paths import data_dir
from pytest_atom.settings.config import AtomConfig, load_config


@pytest.fixture(autouse=True)
def no_prompts_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATOM_PROMPTS_PATH", raising=False)


def write_config(project: Path, text: str) -> Path:
    (project / ".atom").mkdir(parents=True, exist_ok=True)
    path = project / ".atom" / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_a_file(tmp_path: Path) -> None:
    config = load_config(cwd=tmp_path)
    assert config == AtomConfig(root=tmp_path.resolve())
    assert config.path is None
    assert config.version == "1"
    assert config.tools_dirs == (".atom/tools", "tools")
    assert config.prompt_paths == ()
    assert config.timeout == 120
    assert config.model is None and config.settings.get("record_mode") is None
    assert config.tools_paths == (tmp_path / ".atom/tools", tmp_path / "tools")


def test_values_and_environment_expansion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOM_TEST_MODEL", "claude-sonnet-4-5")
    monkeypatch.setenv("ATOM_TEST_TOOLS", "my-tools")
    monkeypatch.setenv("ATOM_TEST_EMPTY", "")
    monkeypatch.delenv("ATOM_TEST_UNSET", raising=False)
    path = write_config(
        tmp_path,
        'version: "1"\n'
        "tools_dirs:\n"
        "  - ${ATOM_TEST_TOOLS}\n"
        "  - ${ATOM_TEST_UNSET:-fallback}/tools\n"
        "  - /abs/tools\n"
        'prompt_paths: ["prompts/${ATOM_TEST_EMPTY:-extra}"]\n'
        "timeout: ${ATOM_TEST_UNSET:-7.5}\n"
        "model: ${ATOM_TEST_MODEL}\n"
        "record_mode: once\n"
        "# a literal survives: $${NOT_EXPANDED}\n",
    )
    config = load_config(cwd=tmp_path)
    assert config.path == path
    assert config.root == tmp_path.resolve()
    assert config.tools_dirs == ("my-tools", "fallback/tools", "/abs/tools")
    assert config.prompt_paths == ("prompts/extra",)  # empty counts as unset with :-
    assert config.timeout == 7.5
    assert config.model == "claude-sonnet-4-5"
    assert config.settings["record_mode"] == "once"
    assert config.tools_paths == (
        tmp_path / "my-tools",
        tmp_path / "fallback/tools",
        Path("/abs/tools"),
    )
    assert config.prompt_dirs == (tmp_path / "prompts/extra",)


def test_literal_dollar_brace_is_kept(tmp_path: Path) -> None:
    write_config(tmp_path, "model: a$${B}c\n")
    assert load_config(cwd=tmp_path).model == "a${B}c"


def test_unset_variable_names_file_key_and_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ATOM_TEST_MISSING", raising=False)
    write_config(tmp_path, "timeout: 5\nmodel: ${ATOM_TEST_MISSING}\n")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    message = str(info.value)
    assert "'ATOM_TEST_MISSING'" in message
    assert "'model'" in message
    assert f"{tmp_path / '.atom' / 'config.yaml'}:2" in message
    assert info.value.key == "model" and info.value.line == 2


def test_malformed_reference_is_an_error(tmp_path: Path) -> None:
    write_config(tmp_path, "model: ${BROKEN\n")
    with pytest.raises(ConfigError, match=r"malformed variable reference in 'model'"):
        load_config(cwd=tmp_path)


def test_unknown_key_suggests_the_closest(tmp_path: Path) -> None:
    write_config(tmp_path, "version: '1'\ntimout: 600\n")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    message = str(info.value)
    assert message.startswith("unknown key 'timout' at ")
    assert "config.yaml:2" in message
    assert message.endswith("did you mean 'timeout'?")


def test_unknown_key_without_a_close_match_lists_the_known_ones(tmp_path: Path) -> None:
    write_config(tmp_path, "zzz: 1\n")
    with pytest.raises(ConfigError, match=r"known keys: version, tools_dirs, prompt_paths"):
        load_config(cwd=tmp_path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("timeout: soon\n", "'timeout' must be a number of seconds, not a string 'soon'"),
        ("timeout: 0\n", "'timeout' must be a positive number"),
        ("timeout: true\n", "'timeout' must be a number of seconds, not a boolean"),
        ("tools_dirs: tools\n", "'tools_dirs' must be a list of folder names, not a string"),
        ("prompt_paths: [1]\n", "'prompt_paths' must be a list of folder names"),
        ("model: [a]\n", "'model' must be a model name (a string), not a list"),
        ('version: "2"\n', "unsupported config version '2'"),
        ("- a\n- b\n", "the config must be a mapping of settings, not a list"),
        ("timeout: 1\ntimeout: 2\n", "key 'timeout' is given twice (first on line 1)"),
        ("timeout: [1\n", "invalid YAML"),
    ],
)
def test_wrong_types_name_file_key_and_expectation(
    tmp_path: Path, text: str, expected: str
) -> None:
    write_config(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    assert expected in str(info.value)
    assert str(tmp_path / ".atom" / "config.yaml") in str(info.value)


def test_bad_record_mode(tmp_path: Path) -> None:
    write_config(tmp_path, "record_mode: new-episodes\n")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    message = str(info.value)
    assert "'record_mode' = 'new-episodes': use one of none, once, new_episodes, all" in message
    assert message.endswith("did you mean 'new_episodes'?")


@pytest.mark.parametrize("mode", ["none", "once", "new_episodes", "all"])
def test_every_record_mode_is_accepted(tmp_path: Path, mode: str) -> None:
    write_config(tmp_path, f"record_mode: {mode}\n")
    assert load_config(cwd=tmp_path).settings["record_mode"] == mode


def test_empty_keys_and_empty_file_keep_the_defaults(tmp_path: Path) -> None:
    write_config(tmp_path, "")
    assert load_config(cwd=tmp_path).timeout == 120
    write_config(tmp_path, "timeout:\nprompt_paths:\n")
    config = load_config(cwd=tmp_path)
    assert config.timeout == 120 and config.prompt_paths == ()
    assert config.path == tmp_path / ".atom" / "config.yaml"


def test_found_from_a_subfolder(tmp_path: Path) -> None:
    path = write_config(tmp_path, "timeout: 9\ntools_dirs: [mytools]\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    config = load_config(cwd=deep)
    assert config.path == path
    assert config.root == tmp_path.resolve()
    assert config.timeout == 9
    # relative folders mean the project's, not the working directory's
    assert config.tools_paths == (tmp_path / "mytools",)


def test_nearest_config_wins(tmp_path: Path) -> None:
    write_config(tmp_path, "timeout: 1\n")
    inner = tmp_path / "inner"
    write_config(inner, "timeout: 2\n")
    (inner / "sub").mkdir()
    assert load_config(cwd=inner / "sub").timeout == 2
    assert load_config(cwd=tmp_path).timeout == 1


def test_explicit_path(tmp_path: Path) -> None:
    write_config(tmp_path, "timeout: 1\n")  # ignored: an explicit file wins
    ci = tmp_path / "ci"
    ci.mkdir()
    (ci / "atom.yaml").write_text("timeout: 3\ntools_dirs: [t]\n", encoding="utf-8")
    config = load_config(Path("ci/atom.yaml"), cwd=tmp_path)
    assert config.timeout == 3
    assert config.path == ci / "atom.yaml"
    # a file outside a .atom folder: its own folder is the project folder
    assert config.root == ci
    assert config.tools_paths == (ci / "t",)


def test_explicit_path_inside_dot_atom_uses_the_project_folder(tmp_path: Path) -> None:
    path = write_config(tmp_path / "proj", "timeout: 4\n")
    config = load_config(path, cwd=tmp_path)
    assert config.timeout == 4 and config.root == tmp_path / "proj"


def test_explicit_path_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file not found at .*nope\.yaml"):
        load_config(tmp_path / "nope.yaml")


def test_prompt_loader_searches_the_extra_folders_after_the_project(tmp_path: Path) -> None:
    write_config(tmp_path, "prompt_paths: [more]\n")
    loader = load_config(cwd=tmp_path).prompt_loader()
    assert loader.search_paths == [
        tmp_path / ".atom" / "prompts",
        tmp_path / "more",
        data_dir("prompts"),
    ]
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "EXTRA.md").write_text("extra prompt", encoding="utf-8")
    assert loader.load("extra") == "extra prompt"
