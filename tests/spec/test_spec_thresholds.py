"""A spec's `repeats:` and `pass_at_least:` (pass^k): read into the Spec, checked against
each other with errors that name the file, the line and the fix, and settled against the
run's ``--atom-repeat`` (the spec's own count wins)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.errors import SpecError
from pytest_atom.spec_loader.load import load_spec, load_specs

BASE = "name: t\nprompt: Do it.\naccept: [{file_exists: out.txt}]\n"


def spec_file(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "t.atom.yaml"
    path.write_text(BASE + extra)
    return path


def test_repeats_and_pass_at_least_are_the_spec_s_own_counts(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path, "repeats: 5\npass_at_least: 4\n"))
    assert (spec.repeats, spec.pass_at_least) == (5, 4)
    plain = load_spec(spec_file(tmp_path, ""))
    assert (plain.repeats, plain.pass_at_least) == (None, None)  # the run's settings decide
    only_runs = load_spec(spec_file(tmp_path, "repeats: 3\n"))
    assert (only_runs.repeats, only_runs.pass_at_least) == (3, None)


def test_pass_at_least_above_repeats_names_the_line_and_both_fixes(tmp_path: Path) -> None:
    path = spec_file(tmp_path, "repeats: 3\npass_at_least: 4\n")
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert err.value.path == path and err.value.line == 5
    assert str(err.value).startswith(
        "'pass_at_least: 4' asks for more passes than the spec's 3 repeats can give: lower "
        "it to at most 3, or raise 'repeats' to 4 or more"
    )


def test_pass_at_least_without_repeats_says_to_add_them(tmp_path: Path) -> None:
    path = spec_file(tmp_path, "pass_at_least: 2\n")
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert err.value.line == 4
    assert "add 'repeats: N' (N >= 2) beside it" in str(err.value)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("0", "0"),
        ("-1", "-1"),
        ("2.5", "2.5"),
        ("two", "'two'"),
        ("true", "true"),
        ("[2]", "a list"),
    ],
)
@pytest.mark.parametrize("key", ["repeats", "pass_at_least"])
def test_a_count_that_is_no_whole_number_from_1_is_an_error_at_its_line(
    tmp_path: Path, key: str, value: str, shown: str
) -> None:
    extra = f"repeats: 5\n{key}: {value}\n" if key == "pass_at_least" else f"{key}: {value}\n"
    path = spec_file(tmp_path, extra)
    with pytest.raises(SpecError) as err:
        load_spec(path)
    line = 5 if key == "pass_at_least" else 4
    assert err.value.line == line
    assert str(err.value).startswith(f"'{key}' must be an integer >= 1, got {shown}")


def test_an_arm_sets_its_own_counts_and_its_errors_name_the_arm_s_line(tmp_path: Path) -> None:
    path = tmp_path / "a.atom.yaml"
    path.write_text(
        BASE + "repeats: 4\npass_at_least: 3\narms:\n  careful: {}\n  quick: {pass_at_least: 1}\n"
    )
    specs = {spec.arm: spec for spec in load_specs(path)}
    assert (specs["careful"].repeats, specs["careful"].pass_at_least) == (4, 3)
    assert (specs["quick"].repeats, specs["quick"].pass_at_least) == (4, 1)
    path.write_text(BASE + "repeats: 2\narms:\n  plain: {}\n  strict: {pass_at_least: 3}\n")
    with pytest.raises(SpecError) as err:
        load_specs(path)
    assert err.value.line == 7  # the arm's own key, not the spec's repeats
    assert "more passes than the spec's 2 repeats can give" in str(err.value)


def test_a_spec_s_own_repeats_win_over_the_run_s(tmp_path: Path) -> None:
    """``--atom-repeat`` is the default of the specs that state no count: a spec's own
    `repeats:` is part of the test, as its own reflector threshold is."""
    own = load_spec(spec_file(tmp_path, "repeats: 5\npass_at_least: 4\n"))
    assert own.with_repeats(2).repeats == 5
    assert own.with_repeats(2).pass_at_least == 4
    plain = load_spec(spec_file(tmp_path, ""))
    assert plain.with_repeats(3).repeats == 3
    assert plain.with_repeats(3).pass_at_least is None  # the run's gates decide
