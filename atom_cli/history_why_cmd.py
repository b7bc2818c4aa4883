"""`atom history why SPEC`: the inputs of a spec's items that changed since their last
stored outcome (`pytest_atom.outcome_cache.why`), as a `pytest --atom` session in this project
would digest them. Registered onto the `history` group by `atom_cli.main` when it loads it."""

from __future__ import annotations

import json

import click

from atom_cli.common import history_option
from pytest_atom.errors import AtomError
from pytest_atom.inert import inert


@click.command("why")
@click.argument("spec_name", metavar="SPEC")
@click.option("--json", "as_json", is_flag=True, help="print JSON, for scripts.")
@history_option("history_url")
def why(spec_name: str, as_json: bool, history_url: str | None) -> None:
    """Which inputs of SPEC's items changed since their last stored outcome (the spec and
    its case, workspace, cassette, script, Claude Code version, environment, tools,
    settings, and each module, file and toolchain folder by its path): what --atom-cache
    would run again."""
    from pytest_atom.history.urls import display_url
    from pytest_atom.outcome_cache.why import why_now
    from pytest_atom.run.harness import host_harness

    try:
        url, items = why_now(host_harness({"history": history_url}), spec_name)
    except AtomError as error:  # a HistoryError too
        raise click.ClickException(str(error)) from None
    if as_json:
        click.echo(
            json.dumps({"store": display_url(url), "items": [i.to_dict() for i in items]}, indent=2)
        )
        return
    for item in items:
        click.echo(inert(item.line()))
