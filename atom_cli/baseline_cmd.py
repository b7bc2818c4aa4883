"""`atom baseline`: save a run's results as the committed baseline `--atom-baseline` compares with."""

from __future__ import annotations

from pathlib import Path

import click

from pytest_atom.baseline.compare import (
    DEFAULT_BASELINE,
    build_baseline,
    dump_baseline,
    load_baseline,
    read_results,
    results_file,
)
from pytest_atom.errors import BaselineError
from pytest_atom.paths import display_path
from pytest_atom.results.rows import spec_key
from pytest_atom.run.harness import host_harness


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
    ".atom/runs/last-run.json, in the runs folder).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="write only this run's specs, dropping every other entry of the baseline "
    "(default: update the specs that ran and keep the rest).",
)
def save(path: Path | None, results: Path | None, replace: bool) -> None:
    """Write the baseline (default .atom/baseline.json) from a run's results.

    A run of some specs only (`--lf`, `-k`) updates their entries and keeps the others';
    `--replace` writes this run's alone (after removing or renaming specs). Commit it: it
    holds no dates and its keys are sorted, so it changes only when a spec's figures do.
    """
    harness = host_harness({})
    root, source = harness.root, results or results_file(harness.runs_dir)
    target = path or root / DEFAULT_BASELINE
    try:
        rows = read_results(source)
    except BaselineError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        earlier = load_baseline(target) if target.exists() and not replace else {}
    except BaselineError as exc:
        raise click.ClickException(f"{exc}; or overwrite it with --replace") from None
    document = build_baseline(rows, keep=earlier)
    ran = len(document["specs"]) - len(set(earlier) - {spec_key(r.nodeid) for r in rows})
    kept = len(document["specs"]) - ran
    dump_baseline(document, target)
    also = f", kept {kept} that did not run (--replace drops them)" if kept else ""
    click.echo(
        f"baseline of {ran} spec(s) from {display_path(source)} written to "
        f"{display_path(target)}{also}"
    )
