"""`atom diff`: two runs of the history store compared, item by item; by default the
newest run against the newest earlier run that covered the same selection."""

from __future__ import annotations

import json
from dataclasses import replace

import click

from atom_cli.common import history_option, project_store
from pytest_atom.errors import HistoryError
from pytest_atom.history.diff import RunDiff, diff_runs
from pytest_atom.history.query import compare_with_like
from pytest_atom.history.store import Store
from pytest_atom.inert import inert


@click.command()
@click.argument("run_a", required=False)
@click.argument("run_b", required=False)
@click.option(
    "--against",
    metavar="RUN",
    default=None,
    help="the earlier run to compare the newest run with (default: the newest run that "
    "covered the same selection).",
)
@click.option("--json", "as_json", is_flag=True, help="the comparison as JSON.")
@history_option
def diff(
    run_a: str | None, run_b: str | None, against: str | None, as_json: bool, history: str | None
) -> None:
    """Compare run RUN_B with run RUN_A (ids, or unique prefixes, from `atom history`).

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
    store = project_store(history)
    try:
        compared = _compare(store, against or run_a, run_b, paired=against is None)
    except HistoryError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(compared.to_dict(), indent=2))
        return
    for line in compared.lines():
        click.echo(inert(line))


def _compare(store: Store, run_a: str | None, run_b: str | None, *, paired: bool) -> RunDiff:
    """The runs named, else the newest against `run_a`, else the newest against the run
    like it (`history.query.compare_with_like`)."""
    if run_a is not None and run_b is not None:
        before, after = store.run(run_a), store.run(run_b)
        return diff_runs(before, store.items(before.id), after, store.items(after.id))
    newest = store.runs(limit=2)
    if len(newest) < (1 if run_a is not None else 2):
        raise HistoryError(
            f"{store.url} holds {len(newest)} run{'s' * (len(newest) != 1)}: "
            "atom diff compares two (run the specs again, or name the runs)"
        )
    after = newest[0]
    if run_a is not None:
        before = store.run(run_a)
        how = "" if paired else f"compared with the run --against named ({before.id})"
        compared = diff_runs(before, store.items(before.id), after, store.items(after.id))
        return replace(compared, paired=how)
    found = compare_with_like(store, after, store.items(after.id))
    if found is None:
        raise HistoryError(
            f"{store.url} holds no earlier run that covered any spec of run {after.id}: "
            "atom diff compares two (run the specs again, or name the runs: "
            "atom diff RUN_A RUN_B, or --against RUN)"
        )
    return found
