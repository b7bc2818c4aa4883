"""What may stand around each run of a spec: the history layer's input digest and outcome
cache, which sit above the run and so cannot be called from it by name.

`Harness.run` hands its run to the harness's `Recall`, when it has one: the recall
computes the item's input digest (`pytest_atom.history.digest`), and either reports the
stored passing item with that digest (`--atom-cache`: no attempt runs, no CLI starts) or
calls `run` and stamps the digest on its result, for the history store to record.

An extension point as the project makes them: this protocol, and its implementation in
`pytest_atom.history.cache` (`OutcomeCache`), which the suite gives the harness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pytest_atom.results.spec_result import SpecResult
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec.types import Spec

__all__ = ["Recall"]


class Recall(Protocol):
    """Around one run of `spec` (`repeat`: which of its repeats) with `settings`."""

    def around(
        self,
        spec: Spec,
        settings: RunSettings,
        repeat: int | None,
        run: Callable[[], SpecResult],
    ) -> SpecResult:
        """`run()`'s result with its input digest, or the stored outcome in its place."""
        ...
