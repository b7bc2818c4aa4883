"""`atom rescore`: a stored run's attempts judged again with today's criteria."""

from __future__ import annotations

import json
import sys

import click

from atom_cli.common import history_option, project_store
from pytest_atom.errors import HistoryError
from pytest_atom.history.records import item_to_dict
from pytest_atom.history.store import Store
from pytest_atom.inert import inert


@click.command()
@click.argument("run_id", metavar="RUN")
@click.argument("specs", nargs=-1, metavar="[SPEC]...")
@click.option("--json", "as_json", is_flag=True, help="the rescore's items as JSON.")
@history_option("history")
def rescore(run_id: str, specs: tuple[str, ...], as_json: bool, history: str | None) -> None:
    """Judge the attempts of run RUN again (of the SPECs named, else every item) with
    today's criteria, threshold and reflector; record the result as a new run, a rescore
    of RUN (`atom diff RUN NEW` compares them). RUN is a run id or its unique start (as
    `atom history` lists them), or `last`: the newest run that is no rescore.

    The executor's CLI is not started: its attempt is the one the run folder kept, its
    check results the stored ones. The reflector runs through the gateway as in a run:
    the spec's scripted `reflector:` turns, its cassette's verdict, or a live session with
    --record-mode (in the project's settings). Exits 1 when an item fails.
    """
    from pytest_atom.rescore import rescore_run
    from pytest_atom.run.harness import host_harness

    harness = host_harness({"history": history} if history is not None else {})
    store = project_store(history)
    try:
        done = rescore_run(store, _last(store) if run_id == "last" else run_id, specs, harness)
    except (HistoryError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    if as_json:
        data = {
            "run": done.run.id,
            "rescore_of": done.run.rescore_of,
            "items": [item_to_dict(new) for _, new in done.pairs],
            "warning": done.warning,
        }
        click.echo(json.dumps(data, indent=2))
    else:
        for line in done.lines():
            click.echo(inert(line))
    sys.exit(1 if any(not new.passed for _, new in done.pairs) else 0)


def _last(store: Store) -> str:
    """The newest run that ran specs (a rescore's own verdicts are judged from its run's)."""
    ran = next((run for run in store.runs(limit=None) if run.kind != "rescore"), None)
    if ran is None:
        raise HistoryError(
            f"no run to rescore in the history store {store.url}: run the specs first "
            "(every `pytest --atom` and `atom run` session records a run)"
        )
    return ran.id
