"""A check's result: data the judge makes and results, reports and hooks read.

A result, below the checks, so that a run's result holds its checks' findings without
importing the checks that made them."""

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
