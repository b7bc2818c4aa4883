"""One harness behind every front end: conftest check kinds, settings layers, no cost unused.

The spec is scripted and run by the real CLI; its check kind comes from a conftest, so it
is "unknown" to any front end that does not load the project's hooks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.model.config import load_config
from pytest_atom.run.harness import build_harness, host_hooks
from tests.helpers import HOOKS_CONFTEST, bash, verdict

SPEC = """\
name: words
prompt: Write "one" into done.txt.
script: script.yaml
criteria: [done.txt says one.]
accept:
  - word_count: {path: done.txt, words: 1}
"""


def project(root: Path, score: float = 0.85) -> Path:
    """A project whose spec passes at threshold 0.8 and fails (no refine left) at 0.9."""
    (root / "conftest.py").write_text(HOOKS_CONFTEST)
    spec = root / "specs" / "words.atom.yaml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(SPEC + "attempts: 1\n")
    script = {
        "turns": [bash("echo one > done.txt", "Writing."), {"text": "EXIT_LOOP_NOW"}],
        "reflector": [verdict(score, criterion="done.txt says one.", evidence="one")],
    }
    (spec.parent / "script.yaml").write_text(yaml.safe_dump(script))
    return spec


pytestmark = pytest.mark.usefixtures("claude_for_pytester")


@pytest.mark.slow
def test_conftest_checks_and_hooks_in_atom_run_and_atom_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = project(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    monkeypatch.chdir(tmp_path)
    ran = CliRunner().invoke(main, ["run", str(spec)])
    assert ran.exit_code == 0, ran.output
    assert "PASS word_count" in ran.output
    validated = CliRunner().invoke(main, ["validate", str(spec), "--json"])
    assert validated.exit_code == 0, validated.output
    [outcome] = json.loads(validated.output)
    assert outcome["runs"][0]["checks"][0]["describe"].startswith("word_count")
    # the verdict hook ran in both, as in pytest
    assert (tmp_path / "verdicts.log").read_text().splitlines() == ["words proceed 0.85"] * 2


@pytest.mark.slow
def test_conftest_checks_in_the_atom_fixture(pytester: pytest.Pytester) -> None:
    project(pytester.path)
    pytester.makepyfile(
        test_it="""
        def test_words(atom):
            result = atom.run("specs/words.atom.yaml")
            assert result.passed, result.report()
            assert result.checks[0].summary == "1 words"
        """
    )
    result = pytester.runpytest("test_it.py", "--junitxml=out.xml")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "verdicts.log").read_text().splitlines() == ["words proceed 0.85"]
    assert 'name="atom_decision" value="proceed"' in (pytester.path / "out.xml").read_text()


@pytest.mark.slow
def test_settings_precedence_through_pytest(pytester: pytest.Pytester) -> None:
    """ini 0.9 fails the spec at 0.85; a conftest's atom_settings (0.8) wins over the ini;
    the command line (0.9) wins over the fixture; .atom/config.yaml loses to the ini."""
    project(pytester.path)
    other = pytester.path / "lenient"
    other.mkdir()
    project(other)
    # Its own conftest sets only the fixture: the root's registers the check kind for both.
    (other / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef atom_settings():\n    return {'threshold': 0.8}\n"
    )
    (pytester.path / ".atom").mkdir()
    (pytester.path / ".atom" / "config.yaml").write_text("threshold: 0.8\n")
    pytester.makeini("[pytest]\natom_threshold = 0.9\n")
    result = pytester.runpytest("--atom", "specs", "lenient/specs")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*lenient/specs/words.atom.yaml::words*passed*"])
    strict = pytester.runpytest("--atom", "specs", "lenient/specs", "--atom-threshold", "0.9")
    strict.assert_outcomes(failed=2)


def test_a_setting_that_belongs_to_the_run_is_refused_per_test(
    pytester: pytest.Pytester,
) -> None:
    project(pytester.path)
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
    # model.workspaces: the never-collect-a-workspace hook, which runs with or without --atom;
    # model.options: the table the plugin's options are registered from (data only)
    light = ["hooks", "model", "model.modes", "model.options", "model.settings"]
    light += ["model.workspaces"]
    light += ["paths", "plugin"]
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
