"""The `atom` fixture: run specs from tests written in Python.

    def test_greeting(atom, snapshot):
        result = atom.run("specs/create_file.atom.yaml")
        assert result.passed, result.report()
        assert snapshot == (result.workspace / "hello.txt").read_text()

    def test_inline(atom):
        result = atom.run(prompt="Create hello.txt", script={"turns": [...]},
                          accept=[{"file_exists": "hello.txt"}])

It works without `--atom` and takes the same record mode, upstream and threshold options.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom.config import AtomConfig, ConfigError, load_config
from pytest_atom.execution import SpecResult, run_spec
from pytest_atom.modes import DEFAULT_MATCH, MATCH_MODES, RECORD_MODES
from pytest_atom.replay.recording import RecordSettings
from pytest_atom.spec import SPEC_SUFFIX, load_spec


def project_config(config: pytest.Config) -> AtomConfig:
    """`.atom/config.yaml` from the rootdir (or above); a broken one is a usage error."""
    try:
        return load_config(cwd=config.rootpath)
    except ConfigError as err:
        raise pytest.UsageError(str(err)) from None


def threshold_from(config: pytest.Config) -> float:
    """The ini option `atom_threshold`, checked: a bad value is a usage error."""
    text = config.getini("atom_threshold")
    try:
        threshold = float(text)
    except ValueError:
        threshold = -1.0
    if not 0 < threshold < 1:
        raise pytest.UsageError(
            f"atom_threshold = {text!r} in the ini file; use a number between 0 and 1, such as 0.8"
        )
    return threshold


def settings_from(config: pytest.Config, atom_config: AtomConfig) -> RecordSettings:
    """Record settings: command line, then the ini file, then `.atom/config.yaml`."""
    mode = config.getini("atom_record_mode")
    if mode and mode not in RECORD_MODES:
        raise pytest.UsageError(
            f"atom_record_mode = {mode!r} in the ini file; use one of {', '.join(RECORD_MODES)}"
        )
    match = config.getini("atom_match")
    if match and match not in MATCH_MODES:
        raise pytest.UsageError(
            f"atom_match = {match!r} in the ini file; use one of {', '.join(MATCH_MODES)}"
        )
    return RecordSettings(
        mode=config.option.atom_record_mode
        or config.getini("atom_record_mode")
        or atom_config.record_mode
        or "none",
        upstream=config.option.atom_upstream,
        match=config.option.atom_match or match or atom_config.match or DEFAULT_MATCH,
        strict_version=config.option.atom_strict_version,
        rejudge=config.option.atom_rejudge,
    )


def runs_dir_from(config: pytest.Config) -> Path:
    runs = config.option.atom_runs_dir or config.getini("atom_runs_dir")
    return (config.rootpath / runs) if runs else config.rootpath / ".atom" / "runs"


class AtomFixture:
    """Runs one spec per call and returns its SpecResult (see `SpecResult.passed`)."""

    def __init__(
        self, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        self._request = request
        self._tmp = tmp_path_factory

    def run(
        self, spec: str | Path | None = None, *, name: str | None = None, **inline: Any
    ) -> SpecResult:
        """Run a spec file (`spec`, optionally one `name` in it), or an inline spec (`inline`).

        Inline keys are the spec format's (`prompt`, `workspace`, `script`, `accept`,
        `criteria`, ...); `workspace` and `script` may be paths (relative to the test file)
        and `script` also a mapping of turns. An inline spec's cassette lives at
        ``cassettes/<test file stem>/<test name>.yaml`` beside the test file.
        """
        config = self._request.config
        atom_config = project_config(config)
        here = self._request.path.parent
        if spec is not None:
            loaded = load_spec(here / spec if not Path(spec).is_absolute() else Path(spec), name)
        else:
            loaded = self._inline(name or self._request.node.name, inline)
        threshold = threshold_from(config)
        return run_spec(
            loaded,
            runs_dir=runs_dir_from(config),
            project_dir=config.rootpath,
            settings=settings_from(config, atom_config),
            threshold=threshold,
            config=atom_config,
        )

    def _inline(self, name: str, keys: dict[str, Any]) -> Any:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "-", name).strip("-") or "inline"
        folder = self._tmp.mktemp("atom-inline")
        data = {"name": safe, **keys}
        here = self._request.path.parent
        if "workspace" in data:
            shutil.copytree(here / data["workspace"], folder / "workspace", symlinks=True)
            data["workspace"] = "workspace"
        if isinstance(data.get("script"), dict):
            (folder / "script.yaml").write_text(yaml.safe_dump(data["script"]), encoding="utf-8")
            data["script"] = "script.yaml"
        elif "script" in data:
            shutil.copy2(here / data["script"], folder / "script.yaml")
            data["script"] = "script.yaml"
        path = folder / f"{safe}{SPEC_SUFFIX}"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        cassette = here / "cassettes" / self._request.path.stem / f"{safe}.yaml"
        return dataclasses.replace(load_spec(path), cassette=cassette)


@pytest.fixture
def atom(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AtomFixture:
    """Run atom specs from a Python test: `atom.run("x.atom.yaml")` or `atom.run(prompt=...)`."""
    return AtomFixture(request, tmp_path_factory)
