"""`atom cassette`: read a recorded cassette as a transcript, and check cassettes before a commit.

`show` turns a cassette's JSON requests and SSE responses back into the conversation they
carried. `check` is meant for a pre-commit hook: it fails on anything that should never be
committed (a secret, an unnormalized path) or that replay will not match on another machine
(a request recorded without pytest-atom's placeholders).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import click

from pytest_atom.replay.cassette import Cassette, CassetteError, Interaction
from pytest_atom.replay.scrub import SECRET_HEADERS, Scrubber
from pytest_atom.transcript import Line, cassette_lines, is_messages, plural

__all__ = ["cassette"]

#: At least one of these is in every request body pytest-atom recorded from the CLI.
NORMALIZATION_PLACEHOLDERS = ("<DATE>", "<RUN_DIR>", "<METADATA>")

#: Absolute home and temp paths: normalization turns them into <HOME>, <RUN_DIR> and
#: <WORKSPACE>, so one left in a cassette names this machine and will not replay elsewhere.
#: `/tmp/claude` is the CLI's own sandbox TMPDIR, which its prompts may mention.
_RAW_PATH = re.compile(
    r"(?<![\w.>/-])"
    r"(?:/home/[\w.-]+/|/Users/[\w.-]+/|/root/|(?:/private)?/var/folders/|(?:/private)?/tmp/"
    r"(?!claude(?![\w.-]))(?=[\w.-]))[\w.-]*"
)

#: A run folder's path as the CLI spells it in folder names (every other character a `-`):
#: `-home-me-proj--atom-runs-<spec>-<date>-<time>-<id>`, which names this machine too.
_RUN_SLUG = re.compile(r"[\w-]*-atom-runs-[\w.-]*?-\d{8}-\d{6}-[0-9a-f]{6}")

#: What a failed recording keeps beside the cassette it did not replace (Cassette.partial_path).
PARTIAL_SUFFIX = ".partial.yaml"


@click.group()
def cassette() -> None:
    """Inspect, check and refresh recorded cassettes (cassettes/<spec stem>/<spec name>.yaml).

    A cassette holds every model request and response of one spec, recorded once and
    replayed after. `show` prints one as a readable transcript; `check` scans cassettes for
    secrets, raw machine paths and unnormalized requests before they are committed;
    `refresh` rewrites them for a new Claude Code without spending a token.
    """


# --------------------------------------------------------------------------------- loading


def _load(path: Path) -> tuple[str, Cassette]:
    """The file's text and its cassette; CassetteError (naming the file) for anything else."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CassetteError(f"cannot read cassette {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CassetteError(f"{path} is not a cassette (not UTF-8 text)") from None
    return text, Cassette.load(path)


# ----------------------------------------------------------------------------------- show


def _styled(line: Line) -> str:
    """A transcript line for the terminal; click drops the styles when output is no tty."""
    text = click.style(line.text, bold=True) if line.style == "bold" else line.text
    text = click.style(line.text, dim=True) if line.style == "dim" else text
    return line.prefix + text + line.suffix


@cassette.command(short_help="Print a cassette as a readable transcript.")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--max-lines",
    type=click.IntRange(min=0),
    default=15,
    show_default=True,
    help="Lines shown of each text and tool result (0: everything, and no shortening).",
)
def show(file: Path, max_lines: int) -> None:
    """Print cassette FILE as a readable transcript: its metadata, then every session's turns
    (the new user content, the assistant's text and tool calls, token usage), then totals.

    Interactions are numbered from 1 in file order, as `atom cassette check` reports them.
    """
    try:
        _, data = _load(file)
    except CassetteError as exc:
        raise click.ClickException(str(exc)) from None
    for line in cassette_lines(file, data, max_lines):
        click.echo(_styled(line))


# ---------------------------------------------------------------------------------- check


def _secret_findings(scrubber: Scrubber, text: str, where: str, seen: set[str]) -> list[str]:
    """Secrets in ``text`` by name, never by value; their names are added to ``seen``."""
    names = scrubber.contains_secret(text)
    seen.update(names)
    return [f"secret ({_secret_kind(name)}) in {where}" for name in names]


def _secret_kind(name: str) -> str:
    return "REDACTED shape" if name == "REDACTED" else f"value of ${name}"


def _path_findings(text: str, where: str) -> list[str]:
    matches = [*_RAW_PATH.finditer(text), *_RUN_SLUG.finditer(text)]
    found = list(dict.fromkeys(m.group(0) for m in matches))
    if not found:
        return []
    listed = ", ".join(found[:3]) + (f" (+{len(found) - 3} more)" if len(found) > 3 else "")
    return [f"raw path in {where}, normalization did not happen: {listed}"]


def _interaction_findings(
    scrubber: Scrubber, interaction: Interaction, seen: set[str]
) -> list[str]:
    body = interaction.body
    body_text = body if isinstance(body, str) else json.dumps(body, indent=2, ensure_ascii=False)
    out: list[str] = []
    for side, headers in (
        ("request", interaction.request_headers),
        ("response", interaction.response_headers),
    ):
        out += [
            f"secret header {k.lower()} in {side}" for k in headers if k.lower() in SECRET_HEADERS
        ]
    for where, text in (
        ("request uri", interaction.uri),
        ("request body", body_text),
        ("request headers", "\n".join(interaction.request_headers.values())),
        ("response body", interaction.response),
        ("response headers", "\n".join(interaction.response_headers.values())),
    ):
        out += _secret_findings(scrubber, text, where, seen)
        out += _path_findings(text, where)
    if (
        is_messages(interaction)
        and isinstance(body, dict)
        and ("system" in body or "messages" in body)
        and not any(p in body_text for p in NORMALIZATION_PLACEHOLDERS)
    ):
        out.append(
            "request not normalized (recorded by something other than pytest-atom?): "
            f"its body has none of {', '.join(NORMALIZATION_PLACEHOLDERS)}"
        )
    return out


def _file_findings(scrubber: Scrubber, text: str, data: Cassette) -> Iterator[str]:
    """Findings as `interaction <n>: <what>`, or a bare `<what>` outside the interactions."""
    seen: set[str] = set()
    meta_text = json.dumps(data.metadata, ensure_ascii=False, default=str)
    yield from _secret_findings(scrubber, meta_text, "metadata", seen)
    for n, interaction in enumerate(data.interactions, 1):
        for what in _interaction_findings(scrubber, interaction, seen):
            yield f"interaction {n}: {what}"
    # The whole text, for what the parsed view does not show (a YAML comment, say).
    for name in scrubber.contains_secret(text):
        if name not in seen:
            yield f"secret ({_secret_kind(name)}) in the file text, outside the interactions"


def _expand(paths: Sequence[Path]) -> Iterator[tuple[Path, bool]]:
    """(path, is_cassette_candidate): files as given; for a directory, every `*.yaml` below
    it that lies in a folder named `cassettes` or under one (the directory itself may be
    one), so spec files beside the cassettes are skipped; (directory, False) if none is.
    """
    seen: set[Path] = set()
    for path in paths:
        candidates = [path]
        if path.is_dir():
            candidates = [
                f
                for f in sorted(path.rglob("*.yaml"))
                if f.is_file() and "cassettes" in f.absolute().parent.parts
            ]
            if not candidates:
                yield path, False
        for candidate in candidates:
            if candidate.absolute() not in seen:
                seen.add(candidate.absolute())
                yield candidate, True


@cassette.command(short_help="Scan cassettes for secrets and unnormalized requests.")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.pass_context
def check(ctx: click.Context, files: tuple[Path, ...]) -> None:
    """Check cassettes before a commit (for a pre-commit hook); FILES may be directories.

    A directory is searched recursively for `*.yaml` files under a folder named
    `cassettes` (the directory itself may be one), so spec files beside them are skipped.
    Each finding is one line, `<file>: interaction <n>: <what>` (interactions numbered from
    1, as `atom cassette show` numbers them); secret values are never printed.

    \b
    Findings:
      - a secret: a known token shape or the value of a secret environment variable,
        anywhere in the file, or a credential header (x-api-key, authorization, ...)
      - a raw home or temp path (/home/<user>/, /Users/<user>/, /root/, /tmp/...):
        path normalization did not happen
      - a /v1/messages request with none of <DATE>, <RUN_DIR>, <METADATA>: not
        recorded through pytest-atom, so it will not replay elsewhere

    A `*.partial.yaml` is no cassette but what a failed recording kept (it never replays):
    it is reported as a stale leftover, to delete or to replace by recording again.

    Exit status: 0 clean, 1 findings or stale partials, 2 a path could not be read as a
    cassette.
    """
    scrubber = Scrubber()
    checked = findings = unreadable = partials = 0
    for path, is_candidate in _expand(files):
        if not is_candidate:
            click.echo(f"{path}: no cassettes found (no *.yaml under a cassettes/ folder)")
            continue
        if path.name.endswith(PARTIAL_SUFFIX):
            partials += 1
            click.echo(
                f"{path}: stale partial recording, not a cassette (a failed recording kept it); "
                "delete it, or record the spec again"
            )
            continue
        try:
            text, data = _load(path)
        except CassetteError as exc:
            unreadable += 1
            click.echo(f"Error: {exc}", err=True)
            continue
        checked += 1
        for what in _file_findings(scrubber, text, data):
            findings += 1
            click.echo(f"{path}: {what}")
    summary = f"{plural(checked, 'cassette')} checked, {plural(findings, 'finding')}"
    if partials:
        summary += f", {plural(partials, 'stale partial')}"
    if unreadable:
        summary += f", {unreadable} unreadable"
    click.echo(summary)
    ctx.exit(2 if unreadable else 1 if findings or partials else 0)


@cassette.command(short_help="Rewrite cassettes for this Claude Code without spending a token.")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
def refresh(specs: tuple[Path, ...]) -> None:
    """Refresh the cassettes of SPECS (files or folders) for the Claude Code installed here.

    Each spec is replayed with the live CLI, matched on the conversation, and served the
    recorded answers; then the cassette's requests and metadata are rewritten to what this
    CLI sent, atomically, so `--atom-match=strict` passes with it. No request leaves the
    machine. Where the conversation itself diverges, the cassette is left as it was and
    the divergence is reported: that needs a re-recording, not a refresh.

    Exit status: 0 all refreshed, 1 some were not, 2 a spec could not be run at all.
    """
    from atom_cli.run_cmd import collect_specs
    from pytest_atom.execution import HARNESS_ERRORS
    from pytest_atom.harness import host_harness
    from pytest_atom.paths import display_path
    from pytest_atom.spec import spec_files

    files = spec_files(specs)
    harness = host_harness({"record_mode": "refresh"}, spec_dirs={f.parent for f in files})
    found = collect_specs(files, harness.registry())
    refused = 0
    for spec in found:
        try:
            result = harness.run(spec)
        except HARNESS_ERRORS as exc:
            raise click.ClickException(f"{spec.name}: {exc}") from None
        if result.cassette is None:
            refused += 1
            click.echo(f"{spec.name}: not refreshed: {result.harness_error or 'the replay failed'}")
            click.echo(result.report())
            continue
        click.echo(f"{spec.name}: refreshed {display_path(result.cassette)}")
        if result.drift:
            click.echo(f"  {result.drift}")
        if not result.passed and not spec.xfail:
            click.echo(f"  note: the spec fails with this Claude Code:\n{result.report()}")
    sys.exit(1 if refused else 0)
