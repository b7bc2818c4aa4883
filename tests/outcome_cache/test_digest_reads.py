"""The input digest covers what an item can read (pytest_atom.outcome_cache.inputs): the code in
pytest's process, every file the spec names or its run resolves, the toolchain's folders,
the settings the option table marks as outcome settings. One input changed at a time, on
real files and real imports; each named part is what `atom history why` prints. The store
and the CLI's side: tests/history/test_cache_soundness.py, test_cache_mutations.py."""

from __future__ import annotations

import importlib
import shutil
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

from pytest_atom.outcome_cache.input_digest import describe
from pytest_atom.outcome_cache.inputs import Reads, code_hash, unseen
from pytest_atom.settings.options import BY_NAME, OUTCOME_SETTINGS, Option, RunSettings
from tests.cache_helpers import CacheProject, isolated_project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CacheProject:
    return isolated_project(tmp_path, monkeypatch)


def _rewrite(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


def test_a_tool_results_file_is_hashed_by_its_bytes(project: CacheProject) -> None:
    results = project.spec_file.parent / "results.yaml"
    results.write_text("calls:\n  - {tool: Bash, result: null}\n")
    with project.spec_file.open("a") as spec:
        spec.write("  - tool_results: results.yaml\n")
    before = project.digest()
    _rewrite(results, "Bash", "Edit")
    after = project.digest()
    assert after.changed(before.parts) == ["file specs/results.yaml"]
    assert describe("file specs/results.yaml") == "a file the spec names or its run resolves"


def _module(root: Path, name: str, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package `name` under `root`, on sys.path and imported, as a conftest imports its
    check kind's helpers; gone from sys.modules after the test."""
    (root / name).mkdir()
    (root / name / "__init__.py").write_text(text)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setitem(sys.modules, name, None)  # at teardown: not imported, as before
    del sys.modules[name]
    importlib.import_module(name)


def test_a_module_a_check_kind_imports_is_code_in_the_digest(
    project: CacheProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(project.root, "wordrules", "WORDS = 1\n", monkeypatch)
    before = project.digest()
    assert "code wordrules" in before.parts
    (project.root / "wordrules" / "__init__.py").write_text("WORDS = 12\n")
    assert project.digest().changed(before.parts) == ["code wordrules"]


def test_pytest_atoms_own_code_is_hashed_by_content_not_version(
    project: CacheProject, tmp_path: Path
) -> None:
    own = Path(importlib.import_module("pytest_atom").__file__ or "").parent
    found = project.digest()
    [part] = [name for name in found.parts if name.startswith("code ") and name.endswith(own.name)]
    assert found.parts[part] == code_hash(own)
    copy = tmp_path / "pytest_atom"  # an editable install's files, one edited in place
    shutil.copytree(own, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert code_hash(copy) == code_hash(own)
    _rewrite(copy / "digest.py", "PREFIX = ", "PREFIX  = ")
    assert code_hash(copy) != code_hash(own)


def test_the_libraries_pytest_atom_requires_are_in_by_their_record(project: CacheProject) -> None:
    parts = project.digest().parts
    assert {"code dist:pytest", "code dist:pyyaml", "code dist:jinja2"} <= set(parts)


def test_the_sdk_apps_code_is_in_the_digest(project: CacheProject) -> None:
    app = project.spec_file.parent / "greeter_app.py"
    app.write_text("def run(prompt):\n    return None\n")
    with project.spec_file.open("a") as spec:
        spec.write("agent: {sdk: 'greeter_app:run'}\n")
    before = project.digest()
    assert before.parts["code specs/greeter_app.py"] != "absent"
    app.write_text("def run(prompt):\n    raise SystemExit(1)\n")
    assert project.digest().changed(before.parts) == ["code specs/greeter_app.py"]


def test_a_library_in_the_toolchains_site_packages_is_in_the_digest(
    project: CacheProject, tmp_path: Path
) -> None:
    """PATH's folder ``tools`` has the prefix ``tmp_path``: its site-packages is read."""
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "greetlib.py").write_text("OK = True\n")
    before = project.digest()
    (site / "greetlib.py").write_text("OK = False  # regressed\n")
    assert project.digest().changed(before.parts) == [f"toolchain {site}"]


def test_the_prompts_nearest_the_spec_are_the_ones_hashed(project: CacheProject) -> None:
    """A sub-project's own `.atom/prompts/` is where its run finds them, not the root's."""
    prompts = project.spec_file.parent / ".atom" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "REFLECTOR.md").write_text("judge kindly\n")
    before = project.digest()
    assert "file specs/.atom/prompts" in before.parts
    assert "file .atom/prompts" not in before.parts
    (prompts / "REFLECTOR.md").write_text("judge strictly\n")
    assert project.digest().changed(before.parts) == ["file specs/.atom/prompts"]


def test_a_hook_or_mcp_server_script_named_by_absolute_path_is_hashed(
    project: CacheProject, tmp_path: Path
) -> None:
    server = tmp_path / "server.py"
    server.write_text("print('serving')\n")
    with project.spec_file.open("a") as spec:
        spec.write(
            f"claude:\n  mcp_servers:\n    notes: {{command: python3, args: ['{server}']}}\n"
        )
    before = project.digest()
    server.write_text("print('serving other tools')\n")
    assert project.digest().changed(before.parts) == [f"file {server}"]


def test_the_toolchain_is_walked_once_per_session(project: CacheProject, tmp_path: Path) -> None:
    reads = Reads(project.root)
    before = project.digest(reads=reads)
    (tmp_path / "tools" / "new-tool").write_text("#!/bin/sh\n")
    assert project.digest(reads=reads) == before  # the same session: its first walk
    assert project.digest().changed(before.parts) == [f"toolchain {tmp_path / 'tools'}"]


def test_every_setting_is_an_outcome_setting_unless_its_row_says_otherwise() -> None:
    assert Option("flag", "a new setting", "false").outcome is True
    marked = {f.name for f in fields(RunSettings)} - set(OUTCOME_SETTINGS)
    assert marked == {n for n, o in BY_NAME.items() if not o.outcome}
    assert {"record_mode", "match", "threshold", "judge", "max_cost_usd"} <= set(OUTCOME_SETTINGS)
    assert {"cache", "history", "html", "seed", "keep_runs"} <= marked


@pytest.mark.parametrize(
    ("settings", "name"),
    [
        (RunSettings(max_cost_usd=0.5), "max_cost_usd"),
        (RunSettings(setup_cache="off"), "setup_cache"),
        (RunSettings(judge="rerun"), "judge"),
        (RunSettings(threshold=0.5), "threshold"),
    ],
    ids=["spending-limit", "setup-cache", "judge", "threshold"],
)
def test_an_outcome_setting_is_a_part_named_for_it(
    project: CacheProject, settings: RunSettings, name: str
) -> None:
    assert project.digest(settings).changed(project.digest().parts) == [f"setting {name}"]
    assert describe(f"setting {name}") == "a setting that can change an outcome"


def test_what_the_digest_cannot_see_is_unseen_unless_the_spec_trusts_it(
    project: CacheProject,
) -> None:
    spec = project.spec()
    assert unseen(spec) == [] and spec.sandbox is not None
    networked = replace(spec, sandbox=replace(spec.sandbox, network=("pypi.org",)))
    assert unseen(networked) == ["network"]
    assert unseen(replace(spec, sandbox=None)) == ["unsandboxed"]
    assert unseen(replace(networked, cache_trust=("network",))) == []


def test_the_spec_opts_in_with_cache_trust(project: CacheProject) -> None:
    with project.spec_file.open("a") as doc:
        doc.write("sandbox: {network: [pypi.org]}\ncache: {trust: [network]}\n")
    spec = project.spec()
    assert spec.cache_trust == ("network",) and unseen(spec) == []
