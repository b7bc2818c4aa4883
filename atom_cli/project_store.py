"""The project's history store, as the `atom` commands that read it open it.

`--history` on a command wins; otherwise the project's own setting (`--atom-history`'s ini
key or ``history:`` in `.atom/config.yaml`), resolved from the project's root as
`pytest --atom` resolves it, so a command reads the store its sessions wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from pytest_atom.history.store import Store, session_store

__all__ = ["history_option", "project_store"]


def project_store(history: str | None) -> Store:
    """The store `history` names (None: the project's setting); ClickException when it
    cannot be opened (HistoryError names the store and the fix)."""
    from pytest_atom.errors import HistoryError
    from pytest_atom.run.harness import host_harness

    harness = host_harness({"history": history} if history is not None else {})
    try:
        return session_store(harness.settings, harness.root)
    except HistoryError as exc:
        raise click.ClickException(str(exc)) from None


def history_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--history URL``: the store to read, instead of the project's."""
    return click.option(
        "--history",
        "history",
        default=None,
        metavar="URL",
        help="the history store to read: a SQLite path, postgresql://..., "
        "(default: the project's --atom-history, .atom/history.db).",
    )(command)
