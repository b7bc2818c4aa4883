"""The project's history store, as the `atom` commands that read it open it.

`--history` on a command wins; otherwise the project's own setting (`--atom-history`'s ini
key or ``history:`` in `.atom/config.yaml`), resolved from the project's root as
`pytest --atom` resolves it, so a command reads the store its sessions wrote. Only those
three places are read, not the harness (its conftests, check kinds and machinery): a
command that only reads the store starts as fast as `atom --help`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from pytest_atom.errors import HistoryError, SettingsError
from pytest_atom.history.store import Store, open_store
from pytest_atom.history.urls import OFF, store_url
from pytest_atom.settings.options import BY_NAME
from pytest_atom.settings.project import find_ini, find_project
from pytest_atom.settings.resolved import Layer, resolve

__all__ = ["history_option", "project_store", "store_setting"]


def store_setting(given: str | None) -> tuple[str, Path]:
    """The store's URL or path, and the project's root: `given`, else the project's
    setting (the ini file, `.atom/config.yaml`), else `.atom/history.db`."""
    row = BY_NAME["history"]
    try:
        project = find_project()
        ini = find_ini(project.root)
        config = project.config
        settings = resolve(  # the three places that name it, strongest first
            [
                Layer("the command line", {"history": given}, key=lambda _: "--history"),
                Layer(
                    "the ini file",
                    {"history": (ini.values if ini else {}).get(row.ini_name)},
                    key=lambda _: row.ini_name,
                ),
                Layer(
                    str(config.path or ".atom/config.yaml"),
                    {"history": config.settings.get("history")},
                ),
            ]
        )
    except SettingsError as error:
        raise click.ClickException(str(error)) from None
    return store_url(settings.history, project.root), project.root


def project_store(history: str | None) -> Store:
    """The store `history` names (None: the project's setting); ClickException when it
    does not exist yet (reading never creates one) or cannot be opened (HistoryError names
    the store and the fix)."""
    where, root = store_setting(history)
    if where != OFF and "://" not in where and not Path(where).exists():
        raise click.ClickException(
            f"no history store at {where} yet: every pytest --atom and atom run session "
            "records one there (or name another with --history)"
        )
    try:
        return open_store(where, root)
    except HistoryError as exc:
        raise click.ClickException(str(exc)) from None


def history_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--history URL``: the store to read, instead of the project's."""
    return click.option(
        "--history",
        "history",
        default=None,
        metavar="URL",
        help="the history store to read: a SQLite path, postgresql://..., or none "
        "(default: the project's --atom-history, .atom/history.db).",
    )(command)
