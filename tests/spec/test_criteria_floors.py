"""Criteria written as mappings `{text, min_kappa, min_samples}`: their texts stay
`Spec.criteria`, their floors sit beside them (`Spec.criteria_floors`); bad ones are
refused naming file, line and fix. `--atom-require-calibration` is the floor of them all."""

from __future__ import annotations

import argparse
from pathlib import Path

import click
import pytest

from atom_cli.common import SettingType
from pytest_atom import plugin
from pytest_atom.errors import ConfigError, SpecError
from pytest_atom.settings.config import load_config
from pytest_atom.settings.options import BY_NAME
from pytest_atom.spec.types import CalibrationFloor
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import write

HEAD = "name: t\nprompt: do it\ncriteria:\n  - plain words\n"


def _load(tmp_path: Path, entry: str) -> object:
    return load_spec(write(tmp_path / "t.atom.yaml", HEAD + f"  - {entry}\n"))


def test_a_mapping_is_a_criterion_with_its_floor_beside_the_texts(tmp_path: Path) -> None:
    text = (
        HEAD
        + '  - {text: "polite", min_kappa: 0.6, min_samples: 20}\n'
        + "  - {text: few, min_samples: 3}\n"
        + "  - {text: bare}\n"
        + "steps:\n  - id: one\n    prompt: p\n    criteria: [{text: s, min_kappa: -0.5}]\n"
    ).replace("prompt: do it\n", "")
    spec = load_spec(write(tmp_path / "t.atom.yaml", text))
    assert spec.criteria == ("plain words", "polite", "few", "bare")  # texts, as always
    assert spec.criteria_floors == {
        "polite": CalibrationFloor(0.6, 20, 4),
        "few": CalibrationFloor(None, 3, 5),
    }
    assert spec.steps[0].criteria == ("s",)
    assert spec.steps[0].criteria_floors == {"s": CalibrationFloor(-0.5, None, 10)}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "{text: x, min_kappa: 1.5}",
            "'criteria[1].min_kappa' must be a number from -1 to 1 (Cohen's kappa: 1 is "
            "perfect agreement with the labels, 0 no better than chance), such as 0.6, got 1.5",
        ),
        (
            "{text: x, min_kappa: -2}",
            "'criteria[1].min_kappa' must be a number from -1 to 1",
        ),
        (
            "{text: x, min_samples: 0}",
            "'criteria[1].min_samples' must be an integer >= 1 (the fewest labelled samples "
            "the calibration must have), such as 20, got 0",
        ),
        ("{text: x, min_kapa: 0.6}", "unknown key 'min_kapa'"),
        (
            "{min_kappa: 0.6}",
            "missing required key 'text' in 'criteria[1]': a criterion with a calibration "
            'floor is written {text: "the criterion", min_kappa: 0.6, min_samples: 20}',
        ),
        ("{text: '', min_kappa: 0.6}", "'criteria[1].text' must be a non-empty string"),
        (
            "{text: plain words, min_kappa: 0.6}",
            "criterion 'plain words' is listed twice (first as criteria[0]): write it once",
        ),
    ],
)
def test_a_bad_criterion_is_refused_naming_file_line_and_fix(
    tmp_path: Path, entry: str, message: str
) -> None:
    with pytest.raises(SpecError) as err:
        _load(tmp_path, entry)
    assert message in str(err.value)
    assert "t.atom.yaml:5" in str(err.value)


def test_a_misspelt_key_is_named_with_its_fix(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        _load(tmp_path, "{text: x, min_kapa: 0.6}")
    assert "did you mean 'min_kappa'?" in str(err.value)


@pytest.mark.parametrize("value", ["1.5", "-1.01", "high"])
def test_require_calibration_takes_a_kappa_on_both_command_lines(value: str) -> None:
    option = BY_NAME["require_calibration"]
    assert option.parse("0.6") == 0.6 and option.parse("-1") == -1.0
    with pytest.raises(argparse.ArgumentTypeError) as under_pytest:
        plugin._setting(option)(value)
    with pytest.raises(click.BadParameter) as under_run:
        SettingType(option).convert(value, None, None)
    assert str(under_pytest.value) == under_run.value.message
    assert "use Cohen's kappa, a number from -1 to 1, such as 0.6" in str(under_pytest.value)


def test_require_calibration_comes_from_the_project_config(tmp_path: Path) -> None:
    write(tmp_path / ".atom" / "config.yaml", "require_calibration: 0.6\n")
    assert load_config(cwd=tmp_path).settings["require_calibration"] == 0.6
    write(tmp_path / ".atom" / "config.yaml", "require_calibration: 2\n")
    with pytest.raises(ConfigError, match="use Cohen's kappa"):
        load_config(cwd=tmp_path)
