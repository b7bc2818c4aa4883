"""`atom diff`: two runs of the history store compared, item by item."""

from __future__ import annotations

import json

import click

from atom_cli.project_store import history_option, project_store
from pytest_atom.errors import HistoryError
from pytest_atom.history.diff import RunDiff, diff_runs
from pytest_atom.history.store import Store
from pytest_atom.inert import inert


@click.command()
@click.argument("run_a", required=False)
@click.argument("run_b", required=False)
@click.option("--json", "as_json", is_flag=True, help="the comparison as JSON.")
@history_option
def diff(run_a: str | None, run_b: str | None, as_json: bool, history: str | None) -> None:
    """Compare run RUN_B with run RUN_A (ids, or unique prefixes, from `atom history`).

    Without RUN_B, RUN_A is compared with the newest run; without either, the newest run
    with the one before it. Names the items whose outcome changed and, for each, the
    checks and criteria that changed, the first tool call where the two runs part, and
    the token and cost deltas. An item with repeats is compared with the baseline gate's
    paired test (Fisher's exact test per item, Cochran-Mantel-Haenszel over all), not by
    its raw counts.
    """
    store = project_store(history)
    try:
        compared = _compare(store, run_a, run_b)
    except HistoryError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(compared.to_dict(), indent=2))
        return
    for line in compared.lines():
        click.echo(inert(line))


def _compare(store: Store, run_a: str | None, run_b: str | None) -> RunDiff:
    """The two runs (the newest two by default), compared."""
    if run_a is not None and run_b is not None:
        before, after = store.run(run_a), store.run(run_b)
    else:
        newest = store.runs(limit=2)
        if run_a is not None:
            before = store.run(run_a)
            if not newest:
                raise HistoryError(f"{store.url} holds no runs")
            after = newest[0]
        else:
            if len(newest) < 2:
                raise HistoryError(
                    f"{store.url} holds {len(newest)} run{'s' * (len(newest) != 1)}: "
                    "atom diff compares two (run the specs again, or name the runs)"
                )
            after, before = newest
    return diff_runs(before, store.items(before.id), after, store.items(after.id))
