"""The `atom` fixture: run specs from tests written in Python.

    def test_greeting(atom, snapshot):
        result = atom.run("specs/create_file.atom.yaml")
        assert result.passed, result.report()
        assert snapshot == (result.workspace / "hello.txt").read_text()

It works without `--atom`, through the same harness, settings, conftest check kinds,
verdict hook, traces and JUnit properties as spec items.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom.errors import SpecError
from pytest_atom.files import copy_tree
from pytest_atom.paths import SPEC_SUFFIX
from pytest_atom.pytest.items import record_result
from pytest_atom.pytest.settings import SUITE_RUN, pytest_harness, settings_for
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run.harness import Harness
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_spec


class AtomFixture:
    """Runs one spec per call and returns its SpecResult (see `SpecResult.passed`)."""

    def __init__(self, request: pytest.FixtureRequest, overrides: dict[str, Any]) -> None:
        self._request = request
        self._overrides = overrides

    def _harness(self) -> Harness:
        suite = self._request.config.stash.get(SUITE_RUN, None)  # with --atom only
        if suite is not None:
            return suite.harness
        return pytest_harness(self._request.config)

    def run(
        self, spec: str | Path | None = None, *, name: str | None = None, **inline: Any
    ) -> SpecResult:
        """Run a spec file (`spec`, from the rootdir, optionally one `name` in it), or an
        inline spec (`inline`, the spec format's keys; `workspace` and `script` paths are the
        test file's); a missing or malformed one fails the test with its SpecError. An inline
        spec's cassette is ``cassettes/<test file stem>/<test name>.yaml`` beside the test."""
        harness, node = self._harness(), self._request.node
        registry = harness.registry(node.ihook)
        try:
            if spec is not None:
                # From the rootdir, as node ids name it, wherever the test file sits.
                path = self._request.config.rootpath / spec  # an absolute `spec` stays
                loaded = load_spec(path, name, check_kinds=registry.kinds())
            else:
                loaded = self._inline(name or self._request.node.name, inline, registry.kinds())
        except SpecError as err:
            problem = str(err)  # failed outside the except block: no chained traceback
        else:
            problem = ""
        root = self._request.config.rootpath
        if problem and spec is not None and not (root / spec).exists():
            problem += f" (atom.run reads a relative path from the rootdir, {root})"
        if problem:
            pytest.fail(f"atom.run: {problem}", pytrace=False)
        result = harness.run(
            loaded, registry=registry, settings=settings_for(harness, node, self._overrides)
        )
        record_result(node, result)
        return result

    def _inline(self, name: str, keys: dict[str, Any], check_kinds: Collection[str]) -> Spec:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "-", name).strip("-") or "inline"
        folder = self._request.getfixturevalue("tmp_path_factory").mktemp("atom-inline")
        data = {"name": safe, **keys}
        here = self._request.path.parent
        if "workspace" in data:
            copy_tree(here / data["workspace"], folder / "workspace")
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
        return dataclasses.replace(load_spec(path, check_kinds=check_kinds), cassette=cassette)
