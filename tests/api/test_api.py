"""The public API is exactly `pytest_atom.__all__`, and importing it stays cheap."""

from __future__ import annotations

import subprocess
import sys

import pytest_atom


def test_every_public_name_imports() -> None:
    assert set(pytest_atom.__all__) == set(pytest_atom._EXPORTS)
    for name in pytest_atom.__all__:
        assert getattr(pytest_atom, name) is not None, name


def test_seed_names_are_legacy_and_still_import_from_the_package() -> None:
    import pytest_atom.legacy

    seed = ("AtomRuntime", "RetryManager", "IterationHistory", "ClaudeRunner")
    assert set(pytest_atom.legacy.__all__) == set(seed)
    for name in seed:
        assert name not in pytest_atom.__all__
        assert getattr(pytest_atom, name) is getattr(pytest_atom.legacy, name)  # no warning
    assert "PromptLoader" in pytest_atom.__all__  # the prompts are not seed-era


def test_importing_a_tool_helper_does_not_load_the_harness() -> None:
    code = "import sys, pytest_atom.conversation; print(sorted(m for m in sys.modules if m in ('httpx', 'jsonschema', 'pytest_atom.run.execution')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
