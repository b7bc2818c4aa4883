"""One harness behind every front end: conftest check kinds, settings layers, no cost unused.

The spec (tests/api_helpers.py's `words`) is scripted and run by the real CLI, in scenarios
shared with tests/pytest/test_python_api.py and tests/checks/test_trajectory.py; its check kind comes from
a conftest, so it is "unknown" to any front end that does not load the project's hooks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_atom.run.harness import build_harness, host_hooks
from pytest_atom.settings.config import load_config
from tests.api_helpers import run_and_validate_once, words_project
from tests.helpers import Scenario

#: A conftest hook that reads each spec's settings as its run would, and skips the run: the
#: layers' precedence through pytest's own ini file, fixtures and command line, no CLI started.
SETTINGS_PROBE = """

import pytest
from pytest_atom.pytest import settings as layers
from pytest_atom.pytest.items import AtomItem


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    if isinstance(item, AtomItem):
        harness = layers.pytest_harness(item.config)  # (a name pytest would take for a hook)
        settings = layers.settings_for(harness, item, item.funcargs["atom_settings"])
        pytest.skip(f"{item.nodeid}: threshold {settings.threshold}")
"""

pytestmark = pytest.mark.usefixtures("claude_for_pytester")


@pytest.mark.slow
def test_conftest_checks_and_hooks_in_atom_run_and_atom_validate(
    tmp_path_factory: pytest.TempPathFactory, claude_bin: Path
) -> None:
    folder = run_and_validate_once(tmp_path_factory, claude_bin)
    runs = json.loads((folder / "runs.json").read_text())
    ran, validated = runs["run"], runs["validate"]
    assert ran["exit_code"] == 0, ran["output"]
    assert "PASS word_count" in ran["output"]
    assert validated["exit_code"] == 0, validated["output"]
    lines = validated["output"].splitlines()
    assert lines.count('    PASS word_count {"path":"done.txt","words":1} (line 6): 1 words') == 2
    # the verdict hook ran in both, as in pytest (no reflector: no verdict)
    assert (folder / "verdicts.log").read_text().splitlines() == ["words proceed None"] * 2


@pytest.mark.slow
def test_conftest_checks_in_the_atom_fixture(words: Scenario) -> None:
    """`atom.run` of a spec file whose check kind a conftest registers: the check runs, the
    verdict hook logs the run, and the test's JUnit entry carries the decision."""
    words.runs["run"].lines.fnmatch_lines(["agent_tests/test_agent.py::test_spec_file PASSED*"])
    log = (words.project / "verdicts.log").read_text().splitlines()
    assert "words proceed None" in log
    junit = (words.project / "out.xml").read_text()
    assert 'name="atom_decision" value="proceed"' in junit


def test_settings_precedence_through_pytest(pytester: pytest.Pytester) -> None:
    """The ini file (0.7) wins over .atom/config.yaml (0.6); a conftest's atom_settings
    (0.75) wins over the ini; the command line (0.9) wins over the fixture."""
    words_project(pytester.path)
    with open(pytester.path / "conftest.py", "a") as conftest:
        conftest.write(SETTINGS_PROBE)
    words_project(pytester.path / "lenient")
    # Its own conftest sets only the fixture: the root's registers the check kind for both.
    (pytester.path / "lenient" / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef atom_settings():\n    return {'threshold': 0.75}\n"
    )
    (pytester.path / ".atom").mkdir()
    (pytester.path / ".atom" / "config.yaml").write_text("threshold: 0.6\n")
    pytester.makeini("[pytest]\natom_threshold = 0.7\n")
    files = pytester.runpytest("--atom", "specs", "lenient/specs", "-rs")
    files.assert_outcomes(skipped=2)
    files.stdout.fnmatch_lines_random(
        [
            "SKIPPED*: specs/words.atom.yaml::words: threshold 0.7",
            "SKIPPED*: lenient/specs/words.atom.yaml::words: threshold 0.75",
        ]
    )
    strict = pytester.runpytest(
        "--atom", "specs", "lenient/specs", "-rs", "--atom-threshold", "0.9"
    )
    strict.stdout.fnmatch_lines_random(
        [
            "SKIPPED*: specs/words.atom.yaml::words: threshold 0.9",
            "SKIPPED*: lenient/specs/words.atom.yaml::words: threshold 0.9",
        ]
    )
    pytester.makeini("[pytest]\n")
    config = pytester.runpytest("--atom", "specs", "-rs")
    config.stdout.fnmatch_lines(["SKIPPED*: specs/words.atom.yaml::words: threshold 0.6"])


@pytest.mark.slow
def test_the_atom_settings_fixture_wins_over_the_ini_in_a_real_run(words: Scenario) -> None:
    """The ini file records every run; the tests' atom_settings record none: no cassette."""
    assert "atom_record_mode = all" in (words.project / "tox.ini").read_text()
    words.runs["run"].assert_outcomes(passed=2, failed=1)  # both runs happened
    assert not list(words.project.rglob("cassettes"))


def test_a_setting_that_belongs_to_the_run_is_refused_per_test(
    pytester: pytest.Pytester,
) -> None:
    words_project(pytester.path)
    pytester.makepyfile(
        test_it="""
        import pytest

        @pytest.mark.atom(keep_runs=1)
        def test_words(atom):
            atom.run("specs/words.atom.yaml")
        """
    )
    result = pytester.runpytest("test_it.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*keep_runs cannot be set per test in @pytest.mark.atom*"])


def test_without_atom_the_plugin_imports_no_harness_module(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    code = (
        "import sys, pytest; pytest.main(['--co', '-q', '-p', 'no:cacheprovider', '.']);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('httpx', 'jsonschema', 'pytest_atom', 'jinja2', 'detect_secrets')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.splitlines()[-1]
    # spec.workspaces: the never-collect-a-workspace hook, which runs with or without --atom;
    # settings.options: the table the plugin's options are registered from (data only), with
    # the parsers its rows name; extensions: the entry-point groups' names the match and
    # history options accept (read from the installed metadata, no module of theirs loaded)
    light = ["errors", "extensions", "hooks", "paths", "plugin", "settings", "settings.modes"]
    light += ["settings.options", "settings.parsers", "spec", "spec.workspaces"]
    assert out == str(["pytest_atom", *(f"pytest_atom.{name}" for name in light)])


def test_the_hooks_register_check_kinds_once_per_harness(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "CALLS = []\n\ndef pytest_atom_register_checks(registry):\n    CALLS.append(1)\n"
        "    registry.register('word_count', lambda check, workspace, env: None)\n"
    )
    harness = build_harness(
        [], root=tmp_path, config=load_config(cwd=tmp_path), hook=host_hooks(tmp_path)
    )
    assert harness.registry() is harness.registry()  # a second call would register twice
    assert "word_count" in harness.registry().kinds()
