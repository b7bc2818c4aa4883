"""A check's result: data the judge makes and results, reports and hooks read; below the
checks, so a run's result holds their findings without importing them."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_atom.spec.types import Check


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one check, with what a person needs to believe it."""

    check: Check
    passed: bool
    summary: str
    evidence: str
