"""`atom baseline`: save a run's results as the committed baseline `--atom-baseline` compares with."""

from __future__ import annotations

from pathlib import Path

import click

from pytest_atom.harness import host_harness
from pytest_atom.paths import display_path
from pytest_atom.reports.baseline import (
    DEFAULT_BASELINE,
    RESULTS_NAME,
    BaselineError,
    build_baseline,
    dump_baseline,
    read_results,
)


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
    # The last session's results lie beside its runs folder (so that folder holds only
    # runs), wherever the project's settings put it.
    harness = host_harness({})
    root, source = harness.root, results or harness.runs_dir.parent / RESULTS_NAME
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
