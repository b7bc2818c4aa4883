"""pytest's settings and rootdir as the `atom` command finds them, without starting pytest."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.run.harness import file_layers
from pytest_atom.settings.config import load_config
from pytest_atom.settings.project import PytestIni, find_ini, project_root
from pytest_atom.settings.resolved import resolve
from tests.helpers import write


def spec_paths(ini: PytestIni) -> list[Path]:
    """The spec paths `ini` gives, resolved as `atom run` does (`atom_cli.common.atom_paths`)."""
    root = ini.path.parent
    return resolve(file_layers(ini.values, load_config(cwd=root))).spec_paths(root)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", '[tool.pytest.ini_options]\natom_paths = ["specs", "more specs"]\n'),
        ("pyproject.toml", '[tool.pytest]\natom_paths = ["specs", "more specs"]\n'),
        ("pytest.toml", '[pytest]\natom_paths = ["specs", "more specs"]\n'),
        ("pytest.ini", "[pytest]\natom_paths = specs 'more specs'\n"),
        ("tox.ini", "[tox]\nenvlist = py\n[pytest]\natom_paths =\n    specs\n    'more specs'\n"),
        ("setup.cfg", "[metadata]\nname = x\n[tool:pytest]\natom_paths = specs 'more specs'\n"),
    ],
)
def test_atom_paths_from_each_kind_of_file(tmp_path: Path, name: str, text: str) -> None:
    write(tmp_path / name, text)
    ini = find_ini(tmp_path / "deep" / "below")  # searched upwards, as pytest does
    assert ini is not None and ini.path == tmp_path / name
    assert spec_paths(ini) == [tmp_path / "specs", tmp_path / "more specs"]


def test_files_without_pytest_settings_are_passed_by(tmp_path: Path) -> None:
    write(tmp_path / "pytest.ini", "[pytest]\natom_paths = specs\n")
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "x"\n')
    write(tmp_path / "sub" / "setup.cfg", "[metadata]\nname = x\n")
    write(tmp_path / "sub" / "tox.ini", "[tox]\n")
    ini = find_ini(tmp_path / "sub")
    assert ini is not None and ini.path == tmp_path / "pytest.ini"


def test_pytest_ini_wins_over_pyproject_in_the_same_folder(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.pytest.ini_options]\natom_paths = ['a']\n")
    write(tmp_path / "pytest.ini", "")  # a pytest.ini counts even when empty
    ini = find_ini(tmp_path)
    assert ini is not None and ini.path.name == "pytest.ini" and spec_paths(ini) == []


def test_project_root(tmp_path: Path) -> None:
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    assert project_root(sub) == sub  # nothing anywhere: where it was asked
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    assert project_root(sub) == tmp_path  # the nearest folder with a file pytest reads
    write(tmp_path / "a" / "tox.ini", "[pytest]\n")
    assert project_root(sub) == tmp_path / "a"  # the folder of pytest's ini file
    write(sub / ".atom" / "config.yaml", "")
    (sub / "c").mkdir()
    assert project_root(sub / "c") == sub  # the project config's folder comes first
