"""`atom view`: open the HTML report of the last run, or say where it is.

`pytest --atom --atom-html PATH` and `atom run --html PATH` write the report where they
are told, and keep a copy of the newest one in the runs folder as ``last-report.html``
(``pytest_atom.reports.html.LAST_REPORT``): that copy is what "the last run's report"
means, so it is found without remembering where the user asked for it.
"""

from __future__ import annotations

import os
import sys
import webbrowser
from pathlib import Path

import click

from pytest_atom.errors import SettingsError
from pytest_atom.inert import inert
from pytest_atom.paths import display_path
from pytest_atom.reports.html import LAST_REPORT
from pytest_atom.run.harness import host_harness

_HOW = (
    "write one with `pytest --atom --atom-html report.html` or `atom run --html report.html SPEC`"
)


def _default_runs_dir() -> Path:
    """The runs folder `atom run` and `pytest --atom` use, as the project's settings say."""
    try:
        return host_harness({}).runs_dir
    except SettingsError as err:  # a ConfigError too
        raise click.ClickException(str(err)) from None


def find_report(path: Path | None) -> Path:
    """The report to open: a file as given; in a folder its last-report.html, else its
    newest ``*.html``; without a path, the project's runs folder. ClickException if none."""
    folder = path if path is not None else _default_runs_dir()
    if folder.is_file():
        return folder
    if (folder / LAST_REPORT).is_file():
        return folder / LAST_REPORT
    pages = (
        sorted(folder.glob("*.html"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
    )
    if pages:
        return pages[-1]
    raise click.ClickException(f"no HTML report in {inert(display_path(folder))}: {_HOW}")


def _can_open() -> bool:
    """A browser can show the page: macOS and Windows always; elsewhere a display, or
    $BROWSER. (On a server without either, webbrowser would start a text browser.)"""
    if sys.platform in ("darwin", "win32"):
        return True
    return any(os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"))


@click.command("view")
@click.argument(
    "path", required=False, type=click.Path(exists=True, path_type=Path), metavar="[RUN_DIR|REPORT]"
)
@click.option("--print", "print_only", is_flag=True, help="print the report's path, open nothing.")
def view(path: Path | None, print_only: bool) -> None:
    """Open the HTML report of the last run in a browser, or print its path.

    Without an argument: the last report of this project (.atom/runs/last-report.html).
    RUN_DIR is a runs folder (--atom-runs-dir) or any folder holding reports (its
    last-report.html, else its newest *.html); REPORT is a report file. Exit 1 when there
    is no report.
    """
    report = find_report(path)
    shown = inert(display_path(report.resolve()))  # a file name may hold control characters
    if not print_only and _can_open() and webbrowser.open(report.resolve().as_uri()):
        click.echo(f"opened {shown}")
        return
    if not print_only:
        click.echo("no browser to open it here; the report is at:", err=True)
    click.echo(shown)
