"""The outcome cache's mutation corpus, through the real Claude Code CLI: one project, one
input changed at a time, each followed by a ``--atom-cache`` session. Nothing changed: the
item is served and no CLI starts. A changed input of each class the digest covers runs the
item again, and where the change breaks it, the run fails (a stale pass would exit 0):

- code in pytest's process: a module a conftest check kind imports;
- a file the spec names: its ``tool_results`` file;
- the toolchain: a library in the site-packages beside a PATH folder, which a command
  check's interpreter imports;
- prompts as the run finds them: a sub-project's own ``.atom/prompts/``.

The digest's side of each input: tests/history/test_digest_reads.py."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_atom.paths import data_dir
from tests.cache_helpers import write_project
from tests.helpers import Scenario, pytester_once

ARGS = ("--atom", "specs", "-p", "no:cacheprovider", "--atom-cache")
#: The interpreter the command check's `python3` runs: the system's, which the sandbox
#: reads (a virtualenv under the project would be behind its read guard).
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"

CONFTEST = """
import greetcheck
from pytest_atom import CheckResult

def pytest_atom_register_checks(registry):
    def greeting(check, workspace, env):
        text = (workspace / check.params["path"]).read_text().strip()
        return CheckResult(check, text == greetcheck.EXPECTED, f"it says {text!r}", "")
    registry.register("greeting", greeting)
"""

CHECKS = """  - greeting: {path: hello.txt}
  - tool_results: results.yaml
  - command: "python3 -c 'import greetlib, sys; sys.exit(greetlib.STATUS)'"
"""


def _sessions(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.is_file() else 0


def _project(root: Path, toolchain: Path) -> None:
    """The cache helpers' project, with a conftest check kind, a tool_results file and a
    command check whose interpreter imports a library from its toolchain's site-packages."""
    project = write_project(root, cassette=False)
    project.spec_file.write_text(
        project.spec_file.read_text().replace('  - command: "python3 -c pass"\n', CHECKS)
    )
    (root / "specs" / "results.yaml").write_text("calls:\n  - {tool: Bash, result: null}\n")
    (root / "greetcheck").mkdir()
    (root / "greetcheck" / "__init__.py").write_text('EXPECTED = "hello"\n')
    (root / "conftest.py").write_text(CONFTEST)
    bin_dir, site = toolchain / "bin", toolchain / "lib" / "python3.11" / "site-packages"
    bin_dir.mkdir(parents=True)
    site.mkdir(parents=True)
    (site / "greetlib.py").write_text("STATUS = 0\n")
    python = bin_dir / "python3"  # as a virtualenv's: its own site-packages on the path
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{site}" exec {SYSTEM_PYTHON} "$@"\n')
    os.chmod(python, 0o755)


def _edit(path: Path, old: str, new: str) -> Callable[[], None]:
    """Change `path` (its size too: a stale bytecode cache cannot hide it); undo it after."""
    text = path.read_text()
    path.write_text(text.replace(old, new))

    def undo() -> None:
        path.write_text(text)

    return undo


def play(pytester: pytest.Pytester) -> dict[str, pytest.RunResult]:
    """The first session, one with nothing changed, then one per changed input (each undone
    after its session); the CLI sessions each started go to sessions.json."""
    log = Path(os.environ["ATOM_CLAUDE_BIN"]).parent.parent / "sessions.log"
    root, toolchain = pytester.path, pytester.path.parent / "toolchain"
    _project(root, toolchain)
    counts: dict[str, int] = {}
    runs: dict[str, pytest.RunResult] = {}

    def step(name: str) -> None:
        before = _sessions(log)
        runs[name] = pytester.runpytest(*ARGS)
        counts[name] = _sessions(log) - before

    site = toolchain / "lib" / "python3.11" / "site-packages"
    changes: dict[str, Callable[[], Callable[[], None]]] = {
        "code": lambda: _edit(root / "greetcheck" / "__init__.py", '"hello"', '"goodbye"'),
        "tool_results": lambda: _edit(root / "specs" / "results.yaml", "Bash", "Edit"),
        "site_packages": lambda: _edit(site / "greetlib.py", "STATUS = 0", "STATUS = 10"),
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{toolchain / 'bin'}{os.pathsep}{os.environ['PATH']}")
        step("first")
        step("unchanged")
        for name, change in changes.items():
            undo = change()
            step(name)
            undo()
        prompts = root / "specs" / ".atom" / "prompts"  # the sub-project's own prompts
        shutil.copytree(data_dir("prompts"), prompts)
        step("prompts")
    (root / "sessions.json").write_text(json.dumps(counts))
    return runs


@pytest.fixture
def mutated(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, counted: Path
) -> Scenario:
    return pytester_once(pytester, tmp_path_factory, "cache-mutations", play)


def _counts(scenario: Scenario) -> dict[str, int]:
    return dict(json.loads((scenario.project / "sessions.json").read_text()))


@pytest.mark.slow
def test_nothing_changed_is_served_with_no_claude_code(mutated: Scenario) -> None:
    mutated.runs["first"].assert_outcomes(passed=1)
    assert _counts(mutated)["first"] >= 1
    mutated.runs["unchanged"].assert_outcomes(passed=1)
    assert _counts(mutated)["unchanged"] == 0
    mutated.runs["unchanged"].lines.fnmatch_lines(["*greet*passed (cached)*"])


@pytest.mark.slow
@pytest.mark.parametrize("change", ["code", "tool_results", "site_packages"])
def test_a_change_that_breaks_the_item_runs_it_and_fails(mutated: Scenario, change: str) -> None:
    assert _counts(mutated)[change] >= 1
    mutated.runs[change].assert_outcomes(failed=1)
    assert "(cached)" not in mutated.runs[change].lines.str()


@pytest.mark.slow
def test_the_nearest_prompts_changed_run_the_item_again(mutated: Scenario) -> None:
    assert _counts(mutated)["prompts"] >= 1
    mutated.runs["prompts"].assert_outcomes(passed=1)
    assert "(cached)" not in mutated.runs["prompts"].lines.str()
