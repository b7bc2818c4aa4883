"""`atom init` and `atom doctor`: real files, a real `pytest --atom` run, the real CLI."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomlkit
import yaml
from click.testing import CliRunner, Result

from atom_cli.project_cmd import doctor, init
from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION, NODE_MAJOR_NEEDED, NPM_PACKAGE
from pytest_atom.replay.recording import AUTH_VARIABLES
from pytest_atom.settings.config import load_config

SCAFFOLD = (
    "specs/hello.atom.yaml",
    "specs/scripts/hello.yaml",
    "specs/workspaces/hello/README.md",
    ".atom/config.yaml",
)


def _toml(text: str) -> dict[str, Any]:
    return tomlkit.parse(text).unwrap()


def run_init(*args: str) -> Result:
    result = CliRunner().invoke(init, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.slow
def test_init_creates_a_project_that_pytest_atom_runs_offline(
    pytester: pytest.Pytester, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pytester moves HOME, where the per-user CLI cache lives: name the binary instead.
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    for name in AUTH_VARIABLES:  # no API key: the scaffold must not need one
        monkeypatch.delenv(name, raising=False)
    root = pytester.path
    result = run_init()  # pytester has chdir'd into its folder: the default DIR

    for relative in SCAFFOLD:
        assert (root / relative).is_file(), relative
        assert f"created {relative}" in result.output
    assert "\n  pytest --atom specs  " in result.output  # the specs, not the whole suite
    assert "  pytest --atom specs --atom-record-mode=once " in result.output
    assert not (root / "pyproject.toml").exists()  # pytest's settings are left alone
    assert (root / ".gitignore").read_text().splitlines()[1::2] == [
        ".atom/runs/",  # last-run.json included: it is written in the runs folder
        ".atom/history.db*",  # the history store every session records into
        "*.partial.yaml",
    ]

    spec = yaml.safe_load((root / "specs/hello.atom.yaml").read_text())
    script = yaml.safe_load((root / "specs/scripts/hello.yaml").read_text())
    [verdict] = [turn["verdict"] for turn in script["reflector"]]
    assert [c["criterion"] for c in verdict["criteria"]] == spec["criteria"]
    assert script["turns"][-1]["text"].rstrip().endswith("EXIT_LOOP_NOW")
    config = load_config(cwd=root)  # the project config is valid for pytest_atom.settings.config
    assert (config.path, config.version, config.settings["record_mode"]) == (
        root / ".atom/config.yaml",
        "1",
        "none",
    )
    assert config.settings["paths"] == (Path("specs"),)

    # No path, from specs/ (no pytest config file: pytest's rootdir is specs/): the specs
    # there, and the run in the root's .atom/, which init's .gitignore covers
    # (test_project_root shows the root's `paths:` and the folders without a run).
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.chdir(root / "specs")
    outcome = pytester.runpytest("--atom")
    outcome.assert_outcomes(passed=1)
    outcome.stdout.fnmatch_lines(["*hello.atom.yaml::hello*passed*0.90*"])
    assert not (root / "specs/workspaces/hello/greeting.txt").exists()  # fixture untouched
    assert not (root / "specs/.atom").exists()
    runs = sorted((root / ".atom/runs").iterdir())
    assert [p.name for p in runs if p.is_file()] == ["last-run.json"]
    [run] = [p for p in runs if p.is_dir()]
    greeting = next(run.rglob("greeting.txt"))
    assert greeting.read_text() == "hello from pytest-atom\n"
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    assert sorted(line[3:] for line in status if line) == sorted([".gitignore", *SCAFFOLD])


def test_init_twice_keeps_files_and_adds_nothing_twice(tmp_path: Path) -> None:
    run_init(str(tmp_path))
    spec = tmp_path / "specs/hello.atom.yaml"
    spec.write_text("name: mine\nprompt: my own task\n")

    again = run_init(str(tmp_path))

    for relative in SCAFFOLD:
        assert f"kept existing {relative}" in again.output
    assert "created" not in again.output
    assert spec.read_text() == "name: mine\nprompt: my own task\n"
    assert not (tmp_path / "pyproject.toml").exists()
    assert (tmp_path / ".gitignore").read_text().count(".atom/runs/") == 1
    assert (tmp_path / ".gitignore").read_text().count("*.partial.yaml") == 1
    assert (tmp_path / ".gitignore").read_text().count(".atom/history.db*") == 1
    assert (
        ".gitignore already ignores .atom/runs/, .atom/history.db* and *.partial.yaml"
        in again.output
    )

    forced = run_init(str(tmp_path), "--force")
    assert "overwrote specs/hello.atom.yaml" in forced.output
    assert yaml.safe_load(spec.read_text())["name"] == "hello"
    assert not (tmp_path / "pyproject.toml").exists()
    assert (tmp_path / ".gitignore").read_text().count(".atom/runs/") == 1


def test_init_leaves_an_existing_pyproject_as_it_was(tmp_path: Path) -> None:
    original = (
        "[project]\n"
        'name = "x"  # the distribution name\n'
        "\n"
        "[tool.pytest.ini_options]\n"
        "# quiet output, please\n"
        'addopts = "-q"\n'
    )
    (tmp_path / "pyproject.toml").write_text(original)
    (tmp_path / ".gitignore").write_text("node_modules")  # no final newline

    result = run_init(str(tmp_path))

    assert (tmp_path / "pyproject.toml").read_text() == original
    assert "pyproject.toml" not in result.output
    assert (tmp_path / ".gitignore").read_text() == (
        "node_modules\n# pytest-atom run folders and last-run.json\n.atom/runs/\n"
        "# pytest-atom's run history store\n.atom/history.db*\n"
        "# pytest-atom: what failed recordings kept\n*.partial.yaml\n"
    )


def test_init_says_how_to_move_a_users_atom_paths(tmp_path: Path) -> None:
    original = '[tool.pytest.ini_options]\naddopts = "-q"\natom_paths = ["agents"]\n'
    (tmp_path / "pyproject.toml").write_text(original)
    (tmp_path / ".gitignore").write_text("/.atom/\n**/*.partial.yaml\n")

    result = run_init(str(tmp_path))

    assert (tmp_path / "pyproject.toml").read_text() == original
    assert "note: atom_paths in " in result.output
    assert "move it to .atom/config.yaml as paths:" in result.output
    assert "  pytest --atom specs " in result.output  # the next step names the folder
    assert (tmp_path / ".gitignore").read_text() == "/.atom/\n**/*.partial.yaml\n"  # ignored


@pytest.mark.parametrize(
    ("name", "content"),
    [("pytest.ini", "[pytest]\naddopts = -q\n"), ("setup.cfg", "[tool:pytest]\naddopts = -q\n")],
)
def test_init_leaves_another_pytest_config_alone(tmp_path: Path, name: str, content: str) -> None:
    (tmp_path / name).write_text(content)
    run_init(str(tmp_path))
    assert not (tmp_path / "pyproject.toml").exists()  # it would override (or be ignored)
    assert (tmp_path / name).read_text() == content


def _doctor(monkeypatch: pytest.MonkeyPatch, binary: Path) -> Result:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(binary))
    # Outside any checkout: pytest-atom's own editable install would warn from this one.
    monkeypatch.chdir(Path(tempfile.gettempdir()))
    return CliRunner().invoke(doctor, [], catch_exceptions=False)


@pytest.mark.slow
def test_doctor_passes_with_the_real_cli_and_never_prints_a_secret(
    claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in AUTH_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    canary = f"sk-ant-canary-{secrets.token_hex(16)}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)

    result = _doctor(monkeypatch, claude_bin)

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert f"ok   claude: {CLAUDE_CODE_VERSION} at {claude_bin}" in result.output
    [self_test] = [line for line in lines if "self-test:" in line]
    assert self_test.startswith("ok   self-test: claude answered")
    assert re.search(r" in \d+\.\ds \(\d+ requests?\)$", self_test)  # elapsed seconds
    [credentials] = [line for line in lines if "credentials:" in line]
    assert credentials.startswith("ok   credentials: ANTHROPIC_API_KEY set")
    assert "ANTHROPIC_AUTH_TOKEN" not in credentials
    assert canary not in result.output
    assert canary[:20] not in result.output
    assert "All checks passed" in result.output  # a Node.js older than 22 only warns


def test_doctor_warns_on_another_cli_version_without_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `claude` that reports another version (and starts nothing: the real CLI's run is
    test_doctor_passes_with_the_real_cli_...'s): a warning, never one of the failures."""
    wrapper = tmp_path / "claude"
    wrapper.write_text(
        '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "2.0.0 (Claude Code)"; exit 0; fi\nexit 1\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    for name in AUTH_VARIABLES:
        monkeypatch.delenv(name, raising=False)

    result = _doctor(monkeypatch, wrapper)

    assert f"WARN claude: 2.0.0 at {wrapper}" in result.output
    assert f"pins {CLAUDE_CODE_VERSION}" in result.output
    assert "atom setup" in result.output
    assert "info credentials: none of ANTHROPIC_API_KEY" in result.output
    assert "FAIL self-test: claude exited with 1" in result.output  # this one cannot answer
    failed = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert result.exit_code == 1 and f"{len(failed)} checks failed." in result.output
    assert not any(line.startswith("FAIL claude") for line in failed)


def test_doctor_fails_with_the_install_hint_when_claude_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-such-claude"
    result = _doctor(monkeypatch, missing)

    assert result.exit_code == 1, result.output
    assert f"FAIL claude: ATOM_CLAUDE_BIN={missing} does not exist" in result.output
    assert "`atom setup`" in result.output
    assert f"npm install -g {NPM_PACKAGE}@{CLAUDE_CODE_VERSION}" in result.output
    assert "SKIP self-test: skipped" in result.output  # a skip is no failure
    assert "FAIL self-test" not in result.output
    assert "1 check failed." in result.output  # one, in the singular


def _node_major() -> int:
    out = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().lstrip("v").split(".")[0])


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js on PATH")
def test_doctor_warns_below_the_node_version_claude_code_asks_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """npm warns EBADENGINE below Node 22 but the CLI runs: a warning naming the version,
    never a failure. The real node, behind a wrapper only for the version on the ok side.
    No `claude` here: the Node.js check does not need one (and none starts)."""
    real = shutil.which("node")
    assert real is not None
    missing = tmp_path / "no-such-claude"
    if _node_major() < NODE_MAJOR_NEEDED:
        result = _doctor(monkeypatch, missing)
        [line] = [line for line in result.output.splitlines() if "node.js:" in line]
        assert line.startswith("WARN node.js: node v")
        assert f"asks for Node.js >= {NODE_MAJOR_NEEDED} (npm warns EBADENGINE" in line
    wrapper = tmp_path / "bin" / "node"
    wrapper.parent.mkdir()
    wrapper.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "v{NODE_MAJOR_NEEDED}.1.0"; exit 0; fi\n'
        f'exec "{real}" "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    result = _doctor(monkeypatch, missing)
    assert f"ok   node.js: node v{NODE_MAJOR_NEEDED}.1.0, npm " in result.output
    assert "1 check failed." in result.output  # the missing claude's alone
