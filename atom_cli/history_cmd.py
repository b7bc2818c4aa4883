"""`atom history`: what the history store holds (`pytest_atom.history`): each item's runs,
one spec's, the flaky ones; `atom history import` brings results files in."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from atom_cli.common import history_option, store_setting
from pytest_atom.errors import HistoryError
from pytest_atom.history.query import (
    FlakyReport,
    SpecRun,
    Summary,
    flaky,
    spec_runs,
    spec_runs_lines,
    summarize,
)
from pytest_atom.history.store import Store, open_store
from pytest_atom.history.urls import OFF, display_url
from pytest_atom.inert import inert

F = TypeVar("F", bound=Callable[..., Any])


#: The options every listing takes (the group's and `spec`'s alike).
_READING = [
    click.option(
        "--last",
        type=click.IntRange(min=1),
        default=None,
        help="runs per spec x case x arm (default 20).",
    ),
    click.option(
        "--flaky",
        is_flag=True,
        default=None,
        help="the items whose outcome changed while their inputs did not (one input "
        "digest over runs, or one session's repeats).",
    ),
    click.option("--json", "as_json", is_flag=True, default=None, help="print JSON, for scripts."),
    history_option("history_url"),
]


def _reading(command: F) -> F:
    for option in reversed(_READING):
        command = option(command)
    return command


class _HistoryGroup(click.Group):
    """`atom history SPEC` is `atom history spec SPEC`: a word naming no subcommand is a spec."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            return "spec", self.get_command(ctx, "spec"), args
        return super().resolve_command(ctx, args)


@contextmanager
def _store(given: str | None, *, create: bool = False) -> Iterator[Store | None]:
    """The store to read (None: none yet, or off); HistoryError as a ClickException."""
    url, root = store_setting(given)
    if url == OFF or (not create and "://" not in url and not Path(url).exists()):
        yield None
        return
    try:
        store = open_store(url, root)
    except HistoryError as error:
        raise click.ClickException(str(error)) from None
    try:
        yield store
    except HistoryError as error:
        raise click.ClickException(str(error)) from None
    finally:
        store.close()


def _options(ctx: click.Context, **own: Any) -> dict[str, Any]:
    """This command's options, the group's where it left one unset."""
    parent = ctx.parent.params if ctx.parent is not None else {}
    return {k: own[k] if own.get(k) is not None else parent.get(k) for k in own}


@click.group(
    cls=_HistoryGroup, invoke_without_command=True, subcommand_metavar="[SPEC | COMMAND [ARGS]...]"
)
@_reading
@click.pass_context
def history(
    ctx: click.Context,
    last: int | None,
    flaky: bool | None,
    as_json: bool | None,
    history_url: str | None,
) -> None:
    """The run history: each spec x case x arm over its last runs (its trials' pass rate
    with its Wilson 95 % interval, mean tokens, dollars spent and at list price, and wall
    time per trial, a trend where the change is beyond noise; cached outcomes counted
    apart, a rescore's judgements a line of their own); SPEC: one spec's runs, each
    item's kind; --flaky: outcomes that changed while the inputs did not (one input digest
    over runs, or one session's repeats)."""
    if ctx.invoked_subcommand is None:
        _show(None, last or 20, bool(flaky), bool(as_json), history_url)


@history.command("spec")
@click.argument("spec_name", metavar="SPEC")
@_reading
@click.pass_context
def spec(
    ctx: click.Context,
    spec_name: str,
    last: int | None,
    flaky: bool | None,
    as_json: bool | None,
    history_url: str | None,
) -> None:
    """One spec's runs, newest first (`atom history SPEC` says the same)."""
    o = _options(ctx, last=last, flaky=flaky, as_json=as_json, history_url=history_url)
    _show(spec_name, o["last"] or 20, bool(o["flaky"]), bool(o["as_json"]), o["history_url"])


def _show(
    spec_name: str | None, last: int, want_flaky: bool, as_json: bool, given: str | None
) -> None:
    with _store(given) as store:
        if store is None:
            url, _ = store_setting(given)
            where = "off (--atom-history none)" if url == OFF else f"empty: no {url} yet"
            if as_json:
                click.echo(json.dumps({"store": url, "runs": 0}))
            else:
                click.echo(
                    f"history store {where}: every `pytest --atom` and `atom run` session records a run"
                )
            return
        if spec_name is not None and not store.series(spec_name):
            raise click.ClickException(
                f"no spec {spec_name!r} in the history store {store.url}: `atom history` lists the specs it holds"
            )
        if want_flaky:
            _print(flaky(store, last, spec_name), as_json, store.url)
        elif spec_name is not None:
            _print_runs(spec_runs(store, spec_name, last), as_json, store.url, spec_name)
        else:
            _print(summarize(store, last), as_json, store.url)
            if not as_json:
                _print_newest(store)


def _print_newest(store: Store, count: int = 5) -> None:
    """The newest runs' ids, for the commands that take one (a unique start of it will do)."""
    runs = store.runs(limit=count)
    if runs:
        click.echo(
            "newest runs (atom diff and atom rescore take their ids; `atom rescore last` the newest):"
        )
    for run in runs:
        of = f" of {run.rescore_of}" if run.rescore_of else ""
        click.echo(inert(f"  {run.id}  {run.started:%Y-%m-%d %H:%M}  {run.kind}{of}"))


def _print(answer: Summary | FlakyReport, as_json: bool, url: str) -> None:
    if as_json:
        click.echo(json.dumps({"store": url, **answer.to_dict()}, indent=2))
        return
    for line in answer.lines(url):
        click.echo(inert(line))


def _print_runs(runs: list[SpecRun], as_json: bool, url: str, spec_name: str) -> None:
    if as_json:
        runs_dict = [r.to_dict() for r in runs]
        click.echo(json.dumps({"store": url, "spec": spec_name, "runs": runs_dict}, indent=2))
        return
    for line in spec_runs_lines(runs, url, spec_name):
        click.echo(inert(line))


@history.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--each",
    is_flag=True,
    help="one run per file (separate CI runs); default: the files are one run's shards.",
)
@history_option("history_url", "record into")
def import_(files: tuple[Path, ...], each: bool, history_url: str | None) -> None:
    """Record results files (`pytest --atom --atom-report DIR` writes DIR/results.json; a
    folder holding one will do) in the store: by default the shards of one CI run, as one
    run; importing them again changes nothing."""
    from pytest_atom.history.write import import_files

    with _store(history_url, create=True) as store:
        if store is None:
            raise click.ClickException(
                "the history store is off (--atom-history none): pass --history URL"
            )
        try:
            done = import_files(store, list(files), each=each)
        except HistoryError as error:
            raise click.ClickException(str(error)) from None
        for run, count in done.recorded:
            click.echo(f"recorded run {run.id} ({count} items) in {display_url(store.url)}")
        for run_id in done.already:
            click.echo(f"run {run_id} is already in {display_url(store.url)}: skipped")
