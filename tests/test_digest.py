"""The one digest module: stored hashes keep their values, and the one folder walk
feeds both stored formats (a configuration's files, a session's workspace)."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_atom import digest
from pytest_atom.agents.claude_code.configuration import config_hashes
from pytest_atom.files import CACHE_DIRS, SKIPPED_DIRS
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.recording import cassette_path
from pytest_atom.replay.staleness import prompt_hash, script_hash, spec_hash
from pytest_atom.spec_loader.load import load_specs

SPECS = Path(__file__).parent.parent / "fixtures" / "specs"


def _tree(root: Path) -> Path:
    (root / "sub" / "__pycache__").mkdir(parents=True)
    (root / "sub" / "__pycache__" / "x.pyc").write_bytes(b"cache")
    (root / "sub" / "a.txt").write_bytes(b"one\ntwo\n")
    (root / "run.sh").write_text("echo hi\n")
    return root


def test_the_stored_formats_keep_their_values(tmp_path: Path) -> None:
    """Golden values (computed with the two hashers this module replaced): a change to
    either record format would make every cassette stale."""
    root = _tree(tmp_path / "t")
    assert digest.of_text("hi") == "sha256:8f434346648f6b96"
    assert digest.of_value({"b": 1, "a": [2]}) == digest.short(b'{"a": [2], "b": 1}')
    assert digest.of_value({"b": 1}, compact=True) == digest.short(b'{"b":1}')
    assert digest.files_hash(root, CACHE_DIRS) == "sha256:f7834acd4edcdada"
    assert digest.session_hash(root, SKIPPED_DIRS, str) == "sha256:efe9790b4674707a"


def test_a_configuration_hash_ignores_line_endings_caches_and_the_left_out_folder(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path / "t")
    before = digest.files_hash(root, CACHE_DIRS, "evals")
    (root / "sub" / "a.txt").write_bytes(b"one\r\ntwo\r\n")
    (root / "sub" / "__pycache__" / "x.pyc").write_bytes(b"other")
    (root / "evals").mkdir()
    (root / "evals" / "case.yaml").write_text("name: c\n")
    (root / "run.sh").chmod(0o755)
    assert digest.files_hash(root, CACHE_DIRS, "evals") == before
    (root / "sub" / "a.txt").write_bytes(b"one\ntwo!\n")
    assert digest.files_hash(root, CACHE_DIRS, "evals") != before


def test_a_session_hash_sees_modes_links_and_empty_folders(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    seen = [digest.session_hash(root, SKIPPED_DIRS, str)]
    (root / "run.sh").chmod(0o755)
    seen.append(digest.session_hash(root, SKIPPED_DIRS, str))
    (root / "empty").mkdir()
    seen.append(digest.session_hash(root, SKIPPED_DIRS, str))
    os.symlink("run.sh", root / "link")
    seen.append(digest.session_hash(root, SKIPPED_DIRS, str))
    assert len(set(seen)) == 4
    moved = str(root)
    assert digest.session_hash(
        root, SKIPPED_DIRS, lambda t: t.replace(moved, "<RUN>")
    ) == digest.session_hash(root, SKIPPED_DIRS, lambda t: t.replace(moved, "<RUN>"))


def test_the_shipped_cassettes_stored_input_hashes_are_todays() -> None:
    """spec, prompt, script and configuration hashes computed now equal those the shipped
    cassettes store, so they replay without a staleness reason."""
    compared = 0
    for file in sorted(SPECS.glob("*.atom.yaml")):
        for spec in load_specs(file):
            path = cassette_path(spec)
            if not path.is_file():
                continue
            stored = Cassette.load(path).metadata
            if "prompt_hash" in stored:
                assert stored["prompt_hash"] == prompt_hash(spec), spec.name
                assert stored.get("spec_hash") == spec_hash(spec), spec.name
                assert stored.get("script_hash") == script_hash(spec), spec.name
                compared += 1
            if "config_hashes" in stored:
                assert stored["config_hashes"] == config_hashes(spec.claude), spec.name
                compared += 1
    assert compared >= 5
