"""`pytest --atom` and `atom run` end the same suite with the same exit status under the
same gates: both ask the suite run (`pytest_atom.suite.SuiteRun`), and neither decides
a gate itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.baseline.compare import build_baseline, dump_baseline
from tests.helpers import summary_row

FAILS = "specs/a.atom.yaml::a-fails"


def write_project(root: Path) -> None:
    """One scripted spec that fails (the agent writes the wrong file), and a baseline in
    which it passed."""
    (root / "pytest.ini").write_text("[pytest]\n")
    specs = root / "specs"
    (specs / "scripts").mkdir(parents=True)
    (specs / "scripts" / "a-fails.yaml").write_text(
        "turns:\n"
        "  - tool_use: [{name: Bash, input: {command: 'echo wrong > wrong.txt'}}]\n"
        "  - text: EXIT_LOOP_NOW\n"
    )
    (specs / "a.atom.yaml").write_text(
        "name: a-fails\nprompt: Write out.txt.\nscript: scripts/a-fails.yaml\n"
        "accept: [{file_exists: out.txt}]\n"
    )
    dump_baseline(build_baseline([summary_row(FAILS, "passed", {})]), root / "baseline.json")


#: Each front end's flags for the same gates, and the status both must end with.
GATES = [
    ([], [], 1),  # the spec failed
    (["--atom-min-pass-rate", "0"], ["--min-pass-rate", "0"], 0),  # the rate clears 0
    (  # a regression fails the suite though its rate clears the minimum
        ["--atom-min-pass-rate", "0", "--atom-baseline", "baseline.json"],
        ["--min-pass-rate", "0", "--baseline", "baseline.json"],
        1,
    ),
]


@pytest.mark.slow
def test_pytest_and_atom_run_end_the_same_suite_with_the_same_status_under_each_gate(
    pytester: pytest.Pytester, claude_for_pytester: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(pytester.path)
    monkeypatch.chdir(pytester.path)
    for pytest_flags, run_flags, status in GATES:
        inner = pytester.runpytest("--atom", "specs", "-p", "no:cacheprovider", *pytest_flags)
        outer = CliRunner().invoke(main, ["run", "specs/a.atom.yaml", *run_flags])
        assert (int(inner.ret), outer.exit_code) == (status, status), (
            pytest_flags,
            inner.stdout.str(),
            outer.output,
        )
        if "--baseline" in run_flags:
            said = f"baseline regression: {FAILS}: outcome went from passed to failed"
            assert said in inner.stdout.str() and said in outer.output
