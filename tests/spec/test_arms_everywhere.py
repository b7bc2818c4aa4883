"""Arms read the same everywhere: the reference arm first in pytest's
summary and in `atom results combine`, every arm's cassette in `atom cassette show`, and run
folder names a shell can type without quoting (no glob characters)."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from atom_cli.cassette_cmd import cassette
from pytest_atom.baseline.measure import arm_figures
from pytest_atom.results.rows import SummaryRow
from pytest_atom.run_folders import folder_spec_name, parse_run_name, run_name
from tests.helpers import REPO, write

SHIPPED = REPO / "fixtures" / "specs" / "cassettes" / "create_file" / "create-file.yaml"


def _row(arm: str, reference: bool) -> SummaryRow:
    props = {"atom_outcome": "passed", "atom_arm": arm, "atom_arm_reference": reference}
    return SummaryRow.of(f"specs/x.atom.yaml::greet[{arm}]", props)


def test_the_reference_arm_comes_first_whatever_order_the_rows_came_in() -> None:
    # A shard's JUnit file, read by `atom results combine`, may hold the reference last.
    for rows in ([_row("a", False), _row("ref", True)], [_row("ref", True), _row("a", False)]):
        figures = arm_figures(rows)
        assert [(f.arm, f.reference) for f in figures] == [("ref", True), ("a", False)]


def test_run_folder_names_have_no_glob_characters() -> None:
    name = run_name("arms[no-hook]")
    assert name.startswith("arms-no-hook-")
    assert not set("[]*?") & set(name)
    parsed = parse_run_name(name)
    assert parsed is not None and parsed[0] == folder_spec_name("arms[no-hook]")
    assert folder_spec_name("plain") == "plain"


def test_cassette_show_of_a_spec_with_arms_shows_every_arm(tmp_path: Path) -> None:
    spec = write(
        tmp_path / "x.atom.yaml",
        "name: greet\nprompt: p\narms:\n  a: {}\n  b: {reference: true}\n  c: {}\n",
    )
    for arm in ("a", "b"):  # c is not recorded yet
        (tmp_path / "cassettes" / "x").mkdir(parents=True, exist_ok=True)
        shutil.copy2(SHIPPED, tmp_path / "cassettes" / "x" / f"greet@{arm}.yaml")
    for target in (str(spec), f"{spec}::greet"):
        result = CliRunner().invoke(cassette, ["show", target, "--max-lines", "1"])
        assert result.exit_code == 0, result.output
        assert "Arm a of greet\n" in result.output
        assert "Arm b of greet (the reference arm)\n" in result.output
        assert result.output.count("greet@a.yaml") == 1
        assert result.output.count("greet@b.yaml") == 1
        assert "spec 'greet[c]' has no cassette" in result.output
    one = CliRunner().invoke(cassette, ["show", f"{spec}::greet[b]"])
    assert "greet@b.yaml" in one.output and "greet@a.yaml" not in one.output
