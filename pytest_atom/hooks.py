"""Hook specifications: how a conftest or plugin extends pytest-atom.

Implement them in a ``conftest.py`` or a plugin module, with the ``pytest_atom_`` names::

    def pytest_atom_register_checks(registry):
        registry.register("word_count", check_word_count)

    def pytest_atom_verdict(spec, verdict, result):
        print(spec.name, result.decision, verdict and verdict.score)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

__all__ = ["pytest_atom_register_checks", "pytest_atom_verdict"]

if TYPE_CHECKING:
    from pytest_atom.checks.registry import CheckRegistry
    from pytest_atom.results.spec_result import SpecResult
    from pytest_atom.results.verdict import Verdict
    from pytest_atom.spec.types import Spec


@pytest.hookspec
def pytest_atom_register_checks(registry: CheckRegistry) -> None:
    """Add check kinds that specs can use under ``accept:``.

    Called once per spec file, with the conftests that apply to it. A check function
    takes ``(check, workspace, env)`` and returns a ``CheckResult``; one registered with
    ``registry.register_trajectory`` takes ``(check, trajectory)``, the attempt's calls.
    """


@pytest.hookspec
def pytest_atom_verdict(spec: Spec, verdict: Verdict | None, result: SpecResult) -> None:
    """Called after each spec run; `verdict` is None for a spec without criteria."""
