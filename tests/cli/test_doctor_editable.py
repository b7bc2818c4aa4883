"""`atom doctor` warns of the editable-install trap: a package of the
project installed with `pip install -e .` imports the project's checkout, not the attempt
folder the agent edits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_atom.doctor import check_editable_installs, editable_sources


def _install(site: Path, name: str, source: Path, *, editable: bool = True) -> None:
    """A distribution's metadata as pip writes it for `pip install -e SOURCE` (PEP 610)."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    direct = {"url": source.as_uri(), "dir_info": {"editable": True} if editable else {}}
    (info / "direct_url.json").write_text(json.dumps(direct))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site-packages"
    folder.mkdir()
    monkeypatch.setattr(sys, "path", [str(folder), *sys.path])
    return folder


def test_an_editable_install_from_the_project_is_warned_of(site: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    _install(site, "mypkg", project)
    _install(site, "inner", project / "src")  # a package in a subfolder: the trap too
    _install(site, "elsewhere", tmp_path / "other")  # another checkout: not this project's
    _install(site, "copied", project, editable=False)  # a plain install copies the code
    assert editable_sources(project.resolve()) == [
        ("inner", (project / "src").resolve()),
        ("mypkg", project.resolve()),
    ]
    found = check_editable_installs(project)
    assert found is not None
    status, name, detail = found.status, found.name, found.detail
    assert (status, name) == ("warn", "editable install")
    assert "mypkg (from " in detail and "inner (from " in detail
    assert "installed in editable mode from this project" in detail
    assert "through `setup:` (a virtualenv per attempt" in detail
    assert "see the how-to 'A Python project's environment'" in detail


def test_no_warning_without_an_editable_install_from_the_project(
    site: Path, tmp_path: Path
) -> None:
    _install(site, "elsewhere", tmp_path / "other")
    assert check_editable_installs(tmp_path / "project") is None
