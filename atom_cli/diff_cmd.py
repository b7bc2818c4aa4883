"""`atom diff`: two runs compared, item by item; by default the newest run of the history
store against the newest earlier run that covered the same selection. Either run may be a
results file (``--atom-report DIR`` wrote it) instead: a base branch's job uploads one."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click

from atom_cli.common import history_option, project_store
from pytest_atom.errors import HistoryError
from pytest_atom.history.diff import RunDiff, diff_runs
from pytest_atom.history.query import compare_with_like
from pytest_atom.history.records import ItemRecord, RunRecord
from pytest_atom.history.store import Store
from pytest_atom.history.write import read_file
from pytest_atom.inert import inert


@click.command()
@click.argument("run_a", required=False)
@click.argument("run_b", required=False)
@click.option(
    "--against",
    metavar="RUN",
    default=None,
    help="the earlier run (or results file) to compare the newest run with (default: the "
    "newest run that covered the same selection).",
)
@click.option("--json", "as_json", is_flag=True, help="the comparison as JSON.")
@click.option(
    "--markdown",
    "as_markdown",
    is_flag=True,
    help="the comparison as a pull request's comment (GitHub Markdown, within a comment's "
    "65,536 characters): post it with `gh pr comment PR --body-file FILE`.",
)
@history_option("history")
def diff(
    run_a: str | None,
    run_b: str | None,
    against: str | None,
    as_json: bool,
    as_markdown: bool,
    history: str | None,
) -> None:
    """Compare run RUN_B with run RUN_A (ids, or unique prefixes, from `atom history`; or
    results files, `--atom-report DIR`'s results.json or DIR itself).

    Without RUN_B, RUN_A is compared with the newest run. Without either, the newest run
    is compared with the newest earlier run that covered the same selection (a rescore:
    with the run it judged again), over the newest run's lines; --against RUN names the
    earlier run instead. Names the settings that differ between the two runs, the items
    whose outcome changed and, for each, the checks and criteria that changed, the first
    tool call where the two runs part, and the token and cost deltas. An item with repeats
    is compared with the baseline gate's paired test (Fisher's exact test per item,
    Cochran-Mantel-Haenszel over all), not by its raw counts.
    """
    if against is not None and run_a is not None:
        raise click.UsageError("--against RUN names the earlier run: give it, or RUN_A, not both")
    if as_json and as_markdown:
        raise click.UsageError("--json and --markdown are two forms of one comparison: pick one")
    try:
        if (
            run_a is not None
            and run_b is not None
            and Path(run_a).exists()
            and Path(run_b).exists()
        ):
            compared = diff_runs(*_side(None, run_a), *_side(None, run_b))  # no store needed
        else:
            store = project_store(history)
            try:
                compared = _compare(store, against or run_a, run_b, paired=against is None)
            finally:
                store.close()
    except HistoryError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(compared.to_dict(), indent=2))
    elif as_markdown:
        click.echo(compared.markdown(), nl=False)
    else:
        for line in compared.lines():
            click.echo(inert(line))


Side = tuple[RunRecord, list[ItemRecord]]


def _side(store: Store | None, name: str) -> Side:
    """A run named by a results file's path, or by id (or prefix) in `store`."""
    if Path(name).exists() or store is None:
        found = read_file(Path(name))
        return found.run, list(found.items.values())
    run = store.run(name)
    return run, store.items(run.id)


def _compare(store: Store, run_a: str | None, run_b: str | None, *, paired: bool) -> RunDiff:
    """The runs named, else the newest against `run_a`, else the newest against the run like it."""
    if run_a is not None and run_b is not None:
        return diff_runs(*_side(store, run_a), *_side(store, run_b))
    newest = store.runs(limit=2)
    if len(newest) < (1 if run_a is not None else 2):
        raise HistoryError(
            f"{store.url} holds {len(newest)} run{'s' * (len(newest) != 1)}: "
            "atom diff compares two (run the specs again, or name the runs)"
        )
    after = newest[0]
    if run_a is not None:
        before = _side(store, run_a)
        how = "" if paired else f"compared with the run --against named ({before[0].id})"
        compared = diff_runs(*before, after, store.items(after.id))
        return replace(compared, paired=how)
    found = compare_with_like(store, after, store.items(after.id))
    if found is None:
        raise HistoryError(
            f"{store.url} holds no earlier run that covered any spec of run {after.id}: "
            "atom diff compares two (run the specs again, or name the runs: "
            "atom diff RUN_A RUN_B, or --against RUN)"
        )
    return found
