"""Every schema error of a spec file in one run: each on its own
line with its place and fix, in pytest's collection, `atom validate` and the Python API."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.validate_cmd import validate
from pytest_atom.errors import SpecError
from pytest_atom.spec_loader.load import load_specs

SEVERAL = """\
prompt: do it
max_iterations: three
accept:
  - file_exsts: out.txt
  - command:
      run: "true"
      exitcode: 0
"""


def _error(tmp_path: Path, text: str, name: str = "t.atom.yaml") -> SpecError:
    file = tmp_path / name
    file.write_text(text)
    with pytest.raises(SpecError) as caught:
        load_specs(file)
    return caught.value


def test_a_spec_with_three_errors_names_each_with_its_line_and_fix(tmp_path: Path) -> None:
    error = _error(tmp_path, SEVERAL)
    lines = str(error).splitlines()
    assert lines == [
        f"unknown check 'file_exsts' at {tmp_path}/t.atom.yaml:4:5 — did you mean 'file_exists'?",
        f"'max_iterations' must be an integer >= 1, got 'three' at {tmp_path}/t.atom.yaml:2:17",
        f"unknown key 'exitcode' at {tmp_path}/t.atom.yaml:7:7 — did you mean 'exit_code'?",
    ]
    # The first error is the one the file was reported with before: its place is the error's.
    assert (error.line, error.column, error.suggestion) == (4, 5, "file_exists")
    assert [(e.line, e.suggestion) for e in error.more] == [(2, None), (7, "exit_code")]


def test_a_wrong_type_and_a_mapping_for_a_list_come_together(tmp_path: Path) -> None:
    error = _error(tmp_path, "prompt: do it\nmax_iterations: three\naccept:\n  file_exists: x\n")
    text = str(error)
    assert "'max_iterations' must be an integer >= 1, got 'three'" in text
    assert "'accept' must be a list, got a mapping" in text
    assert [error.line, *(e.line for e in error.more)] == [2, 4]


def test_a_typo_is_reported_not_the_required_key_it_hides(tmp_path: Path) -> None:
    error = _error(tmp_path, "promt: do it\n")
    assert "unknown key 'promt'" in str(error)
    assert "missing required key" not in str(error)
    assert error.more == ()


def test_each_spec_of_a_file_and_each_arm_reports_its_own_errors(tmp_path: Path) -> None:
    text = (
        "specs:\n"
        "  - name: a\n    prompt: x\n    max_iterations: 0\n"
        "  - name: b\n    prompt: y\n    timeout: soon\n"
    )
    error = _error(tmp_path, text)
    assert [error.line, *(e.line for e in error.more)] == [4, 7]


def test_atom_validate_prints_every_error_of_the_file(tmp_path: Path) -> None:
    (tmp_path / "t.atom.yaml").write_text(SEVERAL)
    result = CliRunner().invoke(validate, [str(tmp_path / "t.atom.yaml")])
    assert result.exit_code != 0
    for place in ("t.atom.yaml:4:5", "t.atom.yaml:2:17", "t.atom.yaml:7:7"):
        assert place in result.output, result.output


def test_pytest_reports_every_error_of_the_file(pytester: pytest.Pytester) -> None:
    pytester.makefile(".atom.yaml", t=SEVERAL)
    result = pytester.runpytest("--atom", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*unknown check 'file_exsts'*:4:5*", "*'max_iterations' must be*:2:17*", "*:7:7*"]
    )
