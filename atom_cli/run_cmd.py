"""`atom run`: specs with live progress, as a launcher of `pytest --atom`.

It builds pytest's command line (the spec files; each setting given as its ``--atom-*``
option, from the one option table `pytest_atom.settings.options`; ``--config`` as
``--atom-config``) and runs that session in this process with `atom_cli.progress.RunView`,
which shows the live progress and the summary instead of pytest's output and selects
``--case``. The collection, the runs, the HTML page, last-failed, the history and the exit
status are the session's own (`pytest_atom.pytest.session`): `atom run` only maps pytest's
status to its documented codes (`exit_code`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click
import pytest
from rich.console import Console

from atom_cli.common import atom_paths, config_option, setting_options
from atom_cli.progress import RunView
from pytest_atom.paths import SPEC_SUFFIX, display_path
from pytest_atom.settings.options import BY_NAME
from pytest_atom.settings.project import default_paths
from pytest_atom.spec_loader.load import spec_files
from pytest_atom.suite.ending import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_MACHINERY


@click.command("run")
@click.argument("specs", nargs=-1, type=click.Path(exists=True, path_type=Path))
@setting_options
@click.option(
    "--json", "as_json", is_flag=True, help="print the results as JSON traces, for scripts."
)
@config_option
@click.option(
    "--case",
    "cases",
    multiple=True,
    metavar="ID",
    help="run only this case of a spec with `cases:` (repeat for more).",
)
def run(
    specs: tuple[Path, ...],
    as_json: bool,
    config_path: Path | None,
    cases: tuple[str, ...],
    **given: Any,
) -> None:
    """Run specs outside pytest: the same specs, cassettes and verdicts as `pytest --atom`.

    Without SPECS, what `pytest --atom` collects from this folder: `paths:` of
    `.atom/config.yaml` (from a folder inside one of them, that folder's specs).

    Exit status: 0 when every spec passed (an xfail spec's expected failure passes; a spec
    with `pass_at_least:`, --pass-at-least or --min-pass-rate: when enough of its repeats
    passed), 1 when any failed (or regressed against --baseline), 2 for usage
    or harness errors, for recordings that failed on their upstream and when --max-cost-usd
    stopped the run (as `claude plugin eval --max-cost-usd`), 130 when interrupted (Ctrl-C).
    """
    # The stream as the command got it: the session it launches may swap sys.stdout.
    stream = sys.stderr if as_json else sys.stdout
    console = Console(file=stream, highlight=False, soft_wrap=True)
    if not specs:  # what `pytest --atom` would collect from here
        specs = tuple(default_paths(Path.cwd(), atom_paths(quiet=True, argument="SPECS")))
    files = spec_files(specs)
    if not files:
        raise click.UsageError(f"no *{SPEC_SUFFIX} specs in {', '.join(map(display_path, specs))}")
    view = RunView(console, cases=cases, as_json=as_json)
    status = pytest.main(pytest_args(files, given, config_path), plugins=[view])
    raise SystemExit(exit_code(status, view, files))


def pytest_args(files: Iterable[Path], given: dict[str, Any], config: Path | None) -> list[str]:
    """`pytest --atom`'s command line for these spec files and `atom run`'s options: each
    setting given (an unset flag is unset, not false: a file may set it) as its
    ``--atom-*`` option. Quiet, without pytest's cache folder, and with only the files named
    collected, as `atom run` always did."""
    args = ["--atom", "-p", "no:cacheprovider", "--assert=plain", "-qq", "--no-header", "-s"]
    for name, value in given.items():
        if value is None or value is False:
            continue
        flag = BY_NAME[name].pytest_flag
        args.append(flag if value is True else f"{flag}={value}")
    if config is not None:
        args.append(f"--atom-config={config}")
    return [*args, "--", *(str(file) for file in files)]


def exit_code(status: int | pytest.ExitCode, view: RunView, files: Iterable[Path]) -> int:
    """`atom run`'s exit status for the session's: 0 passed, 1 a spec failed, 2 for usage
    and harness errors (pytest's usage and internal errors, a collection error, a run the
    harness could not make, the spending limit), 130 when Ctrl-C stopped it."""
    if view.interrupted:
        return EXIT_INTERRUPTED
    if status == pytest.ExitCode.NO_TESTS_COLLECTED:
        shown = ", ".join(display_path(file) for file in files)
        raise click.UsageError(f"no *{SPEC_SUFFIX} specs in {shown}")
    if status in (0, EXIT_FAILED) and view.machinery:
        return EXIT_MACHINERY  # whatever a pass-rate gate made of the failed run
    return EXIT_FAILED if status == EXIT_FAILED else EXIT_MACHINERY if status else 0
