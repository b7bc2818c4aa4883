"""`atom cache`: the user's set-up cache (pytest_atom.setup_cache), listed and pruned."""

from __future__ import annotations

import time

import click

from pytest_atom.settings import parsers
from pytest_atom.settings.options import DEFAULT_SETUP_CACHE_SIZE
from pytest_atom.setup_cache.entries import cache_root, entries, prune, to_prune
from pytest_atom.setup_cache.key import FORMAT


@click.group()
def cache() -> None:
    """The set-up cache: what specs' `setup:` made (virtualenvs, node_modules), kept per
    user and restored by later runs without running set-up ($ATOM_SETUP_CACHE, else
    $XDG_CACHE_HOME/pytest-atom/setup)."""


@cache.command("list")
def list_command() -> None:
    """Each entry: its key, size, when last used, its commands and what keyed it."""
    root = cache_root()
    found = entries(root)
    if not found:
        click.echo(f"the set-up cache {root} is empty")
        return
    now = time.time()
    for entry in reversed(found):  # the most recently used first
        m = entry.manifest
        if m.get("format") != FORMAT:
            click.echo(
                f"{entry.path.name[:12]}  (another format or broken: `atom cache prune` deletes it)"
            )
            continue
        click.echo(
            f"{entry.path.name[:12]}  {_size(entry.size):>9}  used {_ago(now - entry.last_used)}  "
            f"{len(m['files'])} paths"
        )
        click.echo(f"    commands: {' && '.join(m['commands'])}")
        click.echo(f"    inputs:   {', '.join(m['inputs']) or '(none found)'}")
        click.echo(f"    tools:    {', '.join(m['tools']) or '(none found)'}")
    total = sum(e.size for e in found)
    click.echo(f"{len(found)} entries, {_size(total)}, in {root}")


@cache.command("prune")
@click.option(
    "--max-size",
    metavar="SIZE",
    help="delete the least recently used entries until the rest fit in SIZE (such as 2GB).",
)
@click.option(
    "--older-than",
    type=click.FloatRange(min=0),
    metavar="DAYS",
    help="delete entries not used for DAYS days.",
)
@click.option("--all", "everything", is_flag=True, help="delete every entry.")
def prune_command(max_size: str | None, older_than: float | None, everything: bool) -> None:
    """Delete entries: with no option, down to the default bound (5GB; the setting
    setup_cache_size changes it for sessions), and entries of another format."""
    try:
        limit = parsers.size(max_size) if max_size is not None else None
    except ValueError as exc:  # the parser of the setting setup_cache_size, and its message
        raise click.BadParameter(
            f"--max-size = {max_size!r}: {exc}", param_hint="--max-size"
        ) from None
    if limit is None and older_than is None and not everything:
        limit = DEFAULT_SETUP_CACHE_SIZE
    root = cache_root()
    doomed = to_prune(root, max_bytes=limit, older_than_days=older_than, everything=everything)
    freed = sum(e.size for e in doomed)
    deleted = prune(doomed)
    left = entries(root)
    click.echo(
        f"deleted {len(deleted)} entries ({_size(freed)}); {len(left)} left "
        f"({_size(sum(e.size for e in left))}) in {root}"
    )


def _size(n: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _ago(seconds: float) -> str:
    for unit, scale in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= scale:
            return f"{seconds / scale:.0f} {unit} ago"
    return "just now"
