"""`atom history why SPEC`: the inputs of a spec's items that changed since their last
stored outcome (`pytest_atom.outcome_cache.why`), so a user sees whether ``--atom-cache`` will
report each item from the store or run it, and what made the difference.

SPEC is a spec's name as `atom history` lists it, or a spec file. The digest now is the
one a `pytest --atom` session in this project would take: its settings (the ini file,
`.atom/config.yaml`), its check kinds and its runs folder. Registered onto the `history`
group by `atom_cli.main` when it loads that group.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pytest_atom.errors import AtomError, HistoryError
from pytest_atom.inert import inert

if TYPE_CHECKING:
    from pytest_atom.outcome_cache.input_digest import InputDigest
    from pytest_atom.outcome_cache.why import DigestOf
    from pytest_atom.run.harness import Harness
    from pytest_atom.spec.types import Spec


@click.command("why")
@click.argument("spec_name", metavar="SPEC")
@click.option("--json", "as_json", is_flag=True, help="print JSON, for scripts.")
@click.option(
    "--history",
    "history_url",
    metavar="URL",
    default=None,
    help="the store to read (default: the project's --atom-history).",
)
def why(spec_name: str, as_json: bool, history_url: str | None) -> None:
    """Which inputs of SPEC's items changed since their last stored outcome (the spec and
    its case, workspace, cassette, script, Claude Code version, environment, tools,
    settings, and each module, file and toolchain folder by its path): what --atom-cache
    would run again."""
    from pytest_atom.history.store import open_store
    from pytest_atom.history.urls import OFF, display_url, store_url
    from pytest_atom.outcome_cache.cache import uncacheable
    from pytest_atom.outcome_cache.why import specs_named, why_items
    from pytest_atom.run.harness import host_harness
    from pytest_atom.spec.load import load_specs

    try:
        harness = host_harness({"history": history_url})
    except AtomError as error:
        raise click.ClickException(str(error)) from None
    settings, root = harness.settings, harness.root
    url = store_url(settings.history, root)
    if url == OFF:
        raise click.ClickException(
            "the history store is off (--atom-history none): pass --history URL"
        )
    kinds = harness.registry().kinds()

    def load(file: Path) -> list[Spec]:
        return load_specs(file, check_kinds=kinds)

    digest_of = _digest_of(harness)
    try:
        store = open_store(url, root)
        try:
            specs = specs_named(store, spec_name, load)
            items = why_items(
                store, specs, digest_of, settings.repeat, lambda s: uncacheable(s, settings)
            )
        finally:
            store.close()
    except (HistoryError, AtomError) as error:
        raise click.ClickException(str(error)) from None
    if as_json:
        click.echo(
            json.dumps({"store": display_url(url), "items": [i.to_dict() for i in items]}, indent=2)
        )
        return
    for item in items:
        click.echo(inert(item.line()))


def _digest_of(harness: Harness) -> DigestOf:
    """An item's digest now as a `pytest --atom` session of the project would take it, but
    with the code the stored item named (pytest loaded it; this process did not)."""
    from pytest_atom.outcome_cache.input_digest import input_digest
    from pytest_atom.outcome_cache.inputs import Reads

    reads = Reads(harness.config.root)

    def digest_of(spec: Spec, repeat: int | None, code: Sequence[str] | None) -> InputDigest:
        return input_digest(
            spec,
            harness.settings,
            config=harness.config,
            runs_dir=harness.runs_dir,
            repeat=repeat,
            reads=reads,
            code_at=code or [],
        )

    return digest_of
