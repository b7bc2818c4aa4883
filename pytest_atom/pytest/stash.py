"""The session's suite run, reached from items, fixtures and report plugins by a typed key
on ``config.stash`` (`SUITE_RUN`), not by a plugin's name: set by the session plugin
(`pytest_atom.pytest.session.AtomSession`) when ``--atom`` is given, absent otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_atom.suite.suite_run import SuiteRun

__all__ = ["SUITE_RUN", "suite_run"]

#: The `SuiteRun` of a ``pytest --atom`` session.
SUITE_RUN = pytest.StashKey["SuiteRun"]()


def suite_run(config: pytest.Config) -> SuiteRun:
    """The session's suite run; only items of a ``--atom`` session ask, and it has one."""
    return config.stash[SUITE_RUN]
