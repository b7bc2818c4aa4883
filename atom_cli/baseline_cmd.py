"""`atom baseline`: save a run's results as the committed baseline `--atom-baseline` compares with."""

from __future__ import annotations

from pathlib import Path

import click

from atom_cli.pytest_ini import find_ini, project_root
from pytest_atom.paths import display_path
from pytest_atom.reports.baseline import (
    DEFAULT_BASELINE,
    RESULTS_NAME,
    BaselineError,
    build_baseline,
    dump_baseline,
    read_results,
)


def default_results(root: Path) -> Path:
    """Where the last `pytest --atom` session left its results: ``last-run.json`` beside
    its runs folder (the ini's ``atom_runs_dir`` when set, else ``.atom/runs``), so the
    runs folder holds only runs."""
    ini = find_ini(root)
    runs = ini.values.get("atom_runs_dir") if ini is not None else None
    if isinstance(runs, str) and runs and ini is not None:
        return (ini.path.parent / runs).parent / RESULTS_NAME
    return root / ".atom" / RESULTS_NAME


@click.group()
def baseline() -> None:
    """Baselines: per spec, how the last run did; `pytest --atom --atom-baseline PATH`
    fails on a regression against it."""


@baseline.command()
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--from",
    "results",
    type=click.Path(dir_okay=False, path_type=Path),
    help="results file of a run (default: the last `pytest --atom` session's, "
    ".atom/last-run.json).",
)
def save(path: Path | None, results: Path | None) -> None:
    """Write the baseline (default .atom/baseline.json) from a run's results.

    Commit it: it holds no dates and its keys are sorted, so it changes only when a
    spec's figures do.
    """
    root = project_root()
    source = results or default_results(root)
    try:
        rows = read_results(source)
    except BaselineError as exc:
        raise click.ClickException(str(exc)) from None
    document = build_baseline(rows)
    target = dump_baseline(document, path or root / DEFAULT_BASELINE)
    click.echo(
        f"baseline of {len(document['specs'])} spec(s) from {display_path(source)} "
        f"written to {display_path(target)}"
    )
