"""`atom results`: the results files runs write; `combine` joins a CI matrix's shards."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from atom_cli.common import ContentError
from pytest_atom.errors import BaselineError, SettingsError
from pytest_atom.paths import display_path
from pytest_atom.reports.format import SessionEnd, report_formats
from pytest_atom.reports.summary import summary_width
from pytest_atom.results.thresholds import RepeatGates
from pytest_atom.run.harness import host_harness
from pytest_atom.suite.ending import EXIT_MACHINERY, Ending, decide, worst
from pytest_atom.suite.shards import VIEWS_OF, combine, gated_rows, read_shard, summary_lines


@click.group()
def results() -> None:
    """Results files: what each `pytest --atom --atom-report DIR` session wrote to
    DIR/results.json."""


@results.command("combine")
@click.argument("shards", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--html",
    type=click.Path(dir_okay=False, path_type=Path),
    help="write one HTML report of every shard's specs here.",
)
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="compare the whole run with a baseline (atom baseline save), as "
    "--atom-baseline compares an unsharded run: a regression fails it (exit 1).",
)
@click.option(
    "--min-pass-rate",
    type=click.FloatRange(0, 1),
    default=None,
    metavar="R",
    help="gate on pass rates over every shard's repeats, as --atom-min-pass-rate does.",
)
@click.option(
    "--pass-at-least",
    type=click.IntRange(1),
    default=None,
    metavar="K",
    help="a spec passes when at least K of its repeats passed over every shard, as "
    "--atom-pass-at-least says (a spec's own pass_at_least: wins).",
)
def combine_command(
    shards: tuple[Path, ...],
    html: Path | None,
    baseline: Path | None,
    min_pass_rate: float | None,
    pass_at_least: int | None,
) -> None:
    """Combine the shards of a CI matrix (pytest-split) into one run: one summary, one
    baseline comparison, one HTML report and one exit status.

    Each SHARD is a folder a job wrote with `pytest --atom --atom-report DIR` (its
    results.json), or such a file. A spec that ran in two shards is an error naming both.
    Settings not given here come from the ini file and .atom/config.yaml, as for the
    unsharded run. Exit status: 0 when every spec passed (a spec with a threshold: when
    enough of its repeats passed over every shard), 1 when any failed (or regressed
    against the baseline, or fell below its threshold), 2 when the machinery failed in a
    shard or a file cannot be used.
    """
    try:
        harness = host_harness(
            {
                "html": html.resolve() if html else None,
                "baseline": baseline.resolve() if baseline else None,
                "min_pass_rate": min_pass_rate,
                "pass_at_least": pass_at_least,
            }
        )
        gate = harness.baseline_gate()
        run = combine([read_shard(path) for path in shards])
    except (BaselineError, SettingsError) as err:
        raise ContentError(str(err)) from None
    rows = gated_rows(run.rows, gate)
    regressed = gate is not None and gate.finish(rows)
    runs = len(rows) + len(run.failures)
    click.echo(f"combined {len(run.sources)} shard(s): {runs} spec run(s)")
    gates = RepeatGates(harness.settings.pass_at_least, harness.settings.min_pass_rate)
    width = summary_width(sys.stdout.isatty(), shutil.get_terminal_size().columns)
    for line in summary_lines(rows, run.failures, gate, gates, width):
        click.echo(line)
    end = SessionEnd(
        harness.settings,
        harness.root,
        rows,
        {VIEWS_OF: run.views},
        run.failures,
        gates,
        deltas=gate.deltas if gate is not None else dict,
    )
    for report_format in report_formats():
        for what, path in report_format.finish(end):
            click.echo(f"{what}: {display_path(path)}")
    status = worst(rows)
    ending = Ending(
        # a failed test beside the specs fails the run, as in pytest
        base=max(status, 1) if run.other_failures else status,
        rows=rows,
        min_pass_rate=gates.min_pass_rate,
        pass_at_least=gates.pass_at_least,
        regressed=regressed,
        # a spec the harness could not run: the machinery failed, as in atom run
        machinery_failed=bool(run.failures) or status == EXIT_MACHINERY,
        other_failures=run.other_failures,
    )
    sys.exit(decide(ending))
