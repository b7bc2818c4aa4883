"""A project's root is found from any folder of it, as git finds `.git`: `pytest --atom`
and `atom run` ask the one function (`settings.project.find_project`), so from ``specs/`` the
configured `paths:` mean the same and runs land in the root's `.atom/runs/`.

pytest's own configuration (`pytester.parseconfigure`, `--collect-only`) shows where a
session would write and what it collects without starting Claude Code; the one run
through the real CLI is `test_cli_project`'s scaffold run from ``specs/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.project_cmd import init
from atom_cli.run_cmd import run
from pytest_atom.baseline.compare import results_file
from pytest_atom.errors import ConfigError
from pytest_atom.run.harness import host_harness
from pytest_atom.settings.project import default_paths, find_project, project_root


def scaffold(root: Path) -> Path:
    """`atom init`'s project in `root`, with a test module of its own beside the specs,
    and no pytest config file (the case the issue met)."""
    result = CliRunner().invoke(init, [str(root)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (root / "tests").mkdir()
    (root / "tests" / "test_app.py").write_text("def test_app() -> None:\n    pass\n")
    return root


def harness_of(config: pytest.Config) -> Path:
    """The runs folder of the session pytest configured."""
    session = config.pluginmanager.get_plugin("atom-session")
    assert session is not None
    runs: Path = session.harness.runs_dir
    return runs


def test_from_specs_a_bare_pytest_atom_collects_the_specs_there(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "file or directory not found: …/specs/specs" (`paths: [specs]` taken from
    the current folder)."""
    root = scaffold(pytester.path)
    monkeypatch.chdir(root / "specs")
    result = pytester.runpytest("--atom", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["hello.atom.yaml::hello", "1 test collected*"])
    assert "not found" not in result.stdout.str() + result.stderr.str()


def test_at_the_root_a_bare_pytest_atom_collects_paths_only(pytester: pytest.Pytester) -> None:
    """At the root `paths:` is what a bare run collects, not the whole folder with the
    project's own tests (before, `tests/test_app.py` was collected beside the spec)."""
    scaffold(pytester.path)
    result = pytester.runpytest("--atom", "--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["specs/hello.atom.yaml::hello", "1 test collected*"])
    assert "test_app" not in result.stdout.str()


def test_a_bare_run_says_how_many_of_its_items_are_pytests_own_tests(
    pytester: pytest.Pytester,
) -> None:
    """At the root, pytest's `testpaths` are collected beside `paths:`: the header says so
    and how to run only the specs; with the paths named, nothing is said."""
    root = scaffold(pytester.path)
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    result = pytester.runpytest("--atom", "--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "pytest-atom: 1 of 2 items are pytest's own tests (testpaths: tests), not specs, "
            "and run too; only the specs: pytest --atom specs",
            "2 tests collected*",
        ]
    )
    named = pytester.runpytest("--atom", "specs", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert "pytest's own tests" not in named.stdout.str()


def test_from_a_folder_outside_paths_a_bare_run_collects_it_and_the_project_s_specs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder outside every `paths:` entry is collected as pytest would collect it, and
    the project's specs with it: from ``docs/`` (no test there) a bare run is never empty.
    Before, ``docs/`` collected nothing (exit 5) and `atom run` asked for SPECS."""
    root = scaffold(pytester.path)
    monkeypatch.chdir(root / "tests")
    result = pytester.runpytest("--atom", "--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["test_app.py::test_app", "*hello.atom.yaml::hello", "2 tests collected*"]
    )
    (root / "docs").mkdir()
    monkeypatch.chdir(root / "docs")
    result = pytester.runpytest("--atom", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*hello.atom.yaml::hello", "1 test collected*"])


@pytest.mark.slow
def test_a_bare_atom_run_takes_paths_from_any_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`atom run` without SPECS takes what `pytest --atom` collects (its scripted spec runs
    through the real CLI once); inside a `paths:` folder, that folder's specs."""
    root = scaffold(pytester.path)
    (root / "docs").mkdir()
    monkeypatch.chdir(root / "docs")
    result = CliRunner().invoke(run, [])
    assert result.exit_code == 0, result.output
    assert "specs/hello.atom.yaml::hello  passed" in result.output  # pytest's node id
    (root / "specs" / "empty").mkdir()
    monkeypatch.chdir(root / "specs" / "empty")
    result = CliRunner().invoke(run, [])
    assert result.exit_code == 2, result.output
    assert "no *.atom.yaml specs in ." in result.output


def test_a_session_from_specs_writes_runs_and_results_under_the_roots_atom(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `specs/.atom/runs/` and its `last-run.json`, which no `.gitignore` line of
    `atom init` covered; `atom run` from the same folder already used the root."""
    root = scaffold(pytester.path)
    monkeypatch.chdir(root / "specs")
    runs = harness_of(pytester.parseconfigure("--atom", "hello.atom.yaml"))
    assert runs == root / ".atom" / "runs"
    assert results_file(runs) == root / ".atom" / "runs" / "last-run.json"
    assert host_harness({}).runs_dir == runs  # `atom run`: the same root, the same function


def test_the_root_is_the_nearest_folder_with_atom_config_as_git_finds_dot_git(
    tmp_path: Path,
) -> None:
    outer = tmp_path / "outer"
    inner = outer / "sub" / "inner"
    for root in (outer, inner):
        (root / ".atom").mkdir(parents=True)
        (root / ".atom" / "config.yaml").write_text('version: "1"\npaths: [specs]\n')
    (inner / "specs" / "deep").mkdir(parents=True)

    assert project_root(inner / "specs" / "deep") == inner  # the nearest, not the outermost
    assert project_root(outer / "sub") == outer
    project = find_project(inner / "specs" / "deep")
    assert (project.root, project.config.path) == (inner, inner / ".atom" / "config.yaml")
    assert project.config.root == inner  # `tools_dirs` and prompts are read from there too


def test_a_run_started_outside_finds_the_project_from_pytests_rootdir(tmp_path: Path) -> None:
    """`pytest --atom /elsewhere/proj/specs` from an unrelated folder: pytest's rootdir
    (the named folder) leads to the project."""
    proj = tmp_path / "proj"
    (proj / ".atom").mkdir(parents=True)
    (proj / ".atom" / "config.yaml").write_text('version: "1"\n')
    (proj / "specs").mkdir()
    (tmp_path / "elsewhere").mkdir()
    assert project_root(tmp_path / "elsewhere", rootdir=proj / "specs") == proj


def test_without_a_config_the_root_is_pytests_and_settings_are_the_defaults(
    tmp_path: Path,
) -> None:
    (tmp_path / "tox.ini").write_text("[pytest]\n")
    (tmp_path / "specs").mkdir()
    project = find_project(tmp_path / "specs")
    assert (project.root, project.config.path, project.config.root) == (tmp_path, None, tmp_path)
    given = find_project(tmp_path / "specs", rootdir=tmp_path / "specs")  # pytest's own rootdir
    assert given.root == tmp_path / "specs"


def test_an_explicit_config_names_the_root_and_a_missing_one_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "atom.yaml").write_text('version: "1"\n')
    assert find_project(tmp_path, config_path=Path("conf/atom.yaml")).root == tmp_path / "conf"
    with pytest.raises(ConfigError, match="config file not found"):
        find_project(tmp_path, config_path=Path("nope.yaml"))


def test_default_paths_are_the_configured_ones_inside_the_folder_else_the_folder_and_all(
    tmp_path: Path,
) -> None:
    specs, more = tmp_path / "specs", tmp_path / "agents" / "more"
    assert default_paths(tmp_path, [specs, more]) == [specs, more]  # at the root: all
    assert default_paths(tmp_path / "agents", [specs, more]) == [more]
    assert default_paths(specs, [specs, more]) == [specs]
    assert default_paths(specs / "sub", [specs, more]) == [specs / "sub"]  # inside one
    assert default_paths(tmp_path / "src", [specs]) == [tmp_path / "src", specs]  # and its own
    assert default_paths(tmp_path, []) == [tmp_path]
