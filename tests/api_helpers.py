"""Shared scenarios of the Python API, plugin and harness tests: each runs once per session.

A scenario that starts Claude Code is built once (`tests.helpers.once_per_session`) and read
by several tests, each asserting one behaviour. A pytester scenario runs in-process in the
test that builds it (so its lines count for coverage), and leaves in the shared folder what
the readers need: the project as the runs left it and each run's output and exit status.
"""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

import pytest
import yaml

from tests.helpers import (
    HOOKS_CONFTEST,
    REPO,
    bash,
    once_per_session,
    write,
)

# --- the `words` project: a conftest check kind and a verdict hook -------------------------

WORDS = """\
name: words
prompt: Write "one" into done.txt.
script: script.yaml
attempts: 1
accept:
  - word_count: {path: done.txt, words: 1}
"""

#: The script of `words`: one Bash call, then done. No reflector: the checks decide.
WORDS_TURNS = [bash("echo one > done.txt", "Writing."), {"text": "EXIT_LOOP_NOW"}]


def words_project(root: Path, extra: str = "") -> Path:
    """A project whose conftest registers `word_count` and logs verdicts to verdicts.log,
    with the spec specs/words.atom.yaml (plus `extra` keys); the spec's path."""
    write(root / "conftest.py", HOOKS_CONFTEST)
    write(root / "specs" / "script.yaml", yaml.safe_dump({"turns": WORDS_TURNS}))
    return write(root / "specs" / "words.atom.yaml", WORDS + extra)


#: The tests of the `words` project that use the `atom` fixture, from a subfolder.
AGENT_TESTS = """\
def test_spec_file(atom, snapshot):
    result = atom.run("specs/words.atom.yaml")
    assert result.passed, result.report()
    assert result.checks[0].summary == "1 words"
    assert snapshot == (result.workspace / "done.txt").read_text()


def test_inline(atom):
    result = atom.run(
        prompt="Create done.txt",
        script={"turns": [
            {"tool_use": [{"name": "Bash", "input": {"command": "echo ok > done.txt"}}]},
            {"text": "EXIT_LOOP_NOW"},
        ]},
        accept=[
            {"file_contains": {"path": "done.txt", "pattern": "^ok$"}},
            {"file_exists": "nope.txt"},
        ],
    )
    assert result.source == "scripted"
    assert not result.passed
    report = result.report()
    assert "PASS file_contains done.txt" in report, report
    assert "FAIL file_exists nope.txt" in report, report


def test_missing(atom):
    atom.run("specs/nope.atom.yaml")
"""

#: A conftest beside the tests: its `atom_settings` (record nothing) wins over the ini file's
#: record mode (record every run), so no cassette may appear.
LENIENT_SETTINGS = (
    "import pytest\n\n\n@pytest.fixture\ndef atom_settings():\n    return {'record_mode': 'none'}\n"
)


def play_words(pytester: pytest.Pytester) -> dict[str, pytest.RunResult]:
    """The `words` project's tests that use the `atom` fixture, run without --atom."""
    words_project(pytester.path)
    pytester.makeini("[pytest]\natom_record_mode = all\n")
    write(pytester.path / "agent_tests" / "conftest.py", LENIENT_SETTINGS)
    write(pytester.path / "agent_tests" / "test_agent.py", AGENT_TESTS)
    test_file = "agent_tests/test_agent.py"
    run = pytester.runpytest(test_file, "-v", "--snapshot-update", "--junitxml=out.xml")
    return {"run": run}


def run_and_validate(folder: Path, claude_bin: Path) -> None:
    """`atom run` and `atom validate` (in-process) of the `words` project with an oracle and
    a trajectory check; their output and exit codes go to runs.json beside verdicts.log."""
    from click.testing import CliRunner

    from atom_cli.main import main

    spec = words_project(folder, "  - tool_used: Bash\noracle: oracle.sh\n")
    write(spec.parent / "oracle.sh", "echo one > done.txt\n")
    write(folder / "pytest.ini", "[pytest]\n")
    saved = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
        patch.chdir(folder)
        for command in ("run", "validate"):
            done = CliRunner().invoke(main, [command, "specs/words.atom.yaml"])
            saved[command] = {"output": done.output, "exit_code": done.exit_code}
    write(folder / "runs.json", json.dumps(saved))


def run_and_validate_once(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Path:
    """The folder `run_and_validate` filled, once per session."""
    build = partial(run_and_validate, claude_bin=claude_bin)
    return once_per_session(tmp_path_factory, "api-run-validate", build)


# --- the shipped create-file spec with snapshots ---------------------------------------------

#: The create-file spec's snapshot files: two it makes, one it never makes.
SNAPSHOTS = "snapshot: [hello.txt, USER_PROMPT.md, gone.txt]\n"


def play_snapshots(pytester: pytest.Pytester) -> dict[str, pytest.RunResult]:
    """Update the snapshots of the shipped create-file spec, marked xfail (it passes: XPASS,
    which tests/pytest/test_plugin.py reads); then, not marked, with hello.txt's snapshot edited
    and gone.txt no longer listed, compare them."""
    specs = REPO / "fixtures" / "specs"
    spec = pytester.path / "create_file.atom.yaml"
    shutil.copy2(specs / "create_file.atom.yaml", spec)
    shutil.copytree(specs / "scripts", pytester.path / "scripts")
    shutil.copytree(
        specs / "cassettes" / "create_file", pytester.path / "cassettes" / "create_file"
    )
    text = spec.read_text()
    spec.write_text(text + SNAPSHOTS + "xfail: expected to fail, but it will not\n")
    update = pytester.runpytest("--atom", "--snapshot-update", "-rxX")
    [ambr] = (pytester.path / "__snapshots__").glob("*.ambr")
    shutil.copy2(ambr, pytester.path / "updated.ambr")  # as the update wrote it
    entries = ambr.read_text().split("# name: ")
    ambr.write_text(
        "# name: ".join(
            e.replace("hello, world", "hello, there")
            if e.startswith("create-file[hello.txt]")
            else e
            for e in entries
        )
    )
    spec.write_text(text + "snapshot: [hello.txt, USER_PROMPT.md]\n")
    return {"update": update, "compare": pytester.runpytest("--atom")}
