"""`atom cassette`: show, cost, check, refresh and stamp recorded cassettes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from atom_cli.common import ContentError, atom_paths, collect_specs
from pytest_atom.audit.scrubbers import load_project_specs
from pytest_atom.audit.walk import Tally, audit_cassettes, unsandboxed_notes
from pytest_atom.errors import CassetteError, SpecError
from pytest_atom.inert import inert
from pytest_atom.paths import SPEC_SUFFIX, display_path
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.estimate import Estimate, estimate
from pytest_atom.replay.recording import cassette_path, record_command
from pytest_atom.reports.cassette_transcript import Line, cassette_lines
from pytest_atom.reports.phrases import drift_line
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import spec_files
from pytest_atom.words import plural

if TYPE_CHECKING:
    from pytest_atom.run.harness import Harness


@click.group()
def cassette() -> None:
    """Inspect, check and refresh recorded cassettes (cassettes/<spec stem>/<spec name>.yaml).

    A cassette holds every model request and response of one spec, recorded once and
    replayed after. `show` prints one as a readable transcript; `check` scans cassettes for
    secrets, raw machine paths and unnormalized requests before they are committed;
    `refresh` rewrites them for a new Claude Code without spending a token; `cost` estimates
    what recording them again would spend.
    """


def _load(path: Path) -> Cassette:
    """The cassette at `path`; a ClickException naming the file and the fix if it is none."""
    try:
        return Cassette.load(path)
    except CassetteError as exc:
        raise click.ClickException(str(exc)) from None


def _styled(line: Line) -> str:
    """A transcript line for the terminal; click drops the styles when output is no tty."""
    text = click.style(line.text, bold=True) if line.style == "bold" else line.text
    text = click.style(line.text, dim=True) if line.style == "dim" else text
    return line.prefix + text + line.suffix


@cassette.command(short_help="Print a cassette as a readable transcript.")
@click.argument("target", metavar="CASSETTE|SPEC")
@click.option(
    "--max-lines",
    type=click.IntRange(min=0),
    default=15,
    show_default=True,
    help="Lines shown of each text and tool result (0: everything, and no shortening).",
)
def show(target: str, max_lines: int) -> None:
    """Print a cassette as a readable transcript: its metadata, then every session's turns
    (the new user content, the assistant's text and tool calls, token usage), then totals.

    TARGET is a cassette file, or a spec file (`*.atom.yaml`, or `file::name` for one of its
    specs), whose cassettes are shown: a spec with arms shows every arm's (`file::name`
    names all of them, `file::name[arm]` one), and names the arms not recorded yet. Interactions are numbered from 1 in file order, as
    `atom cassette check` reports them.
    """
    missing: list[str] = []
    shown = _spec_cassettes(target, missing) if _is_spec(target) else [(None, Path(target))]
    for number, (spec, file) in enumerate(shown):
        data = _load(file)
        if number:
            click.echo()
        if spec is not None and spec.arm is not None:  # every arm, each headed by its name
            reference = " (the reference arm)" if spec.arm_reference else ""
            click.echo(click.style(f"Arm {spec.arm} of {spec.base_name}{reference}", bold=True))
        for line in cassette_lines(file, data, max_lines):
            click.echo(_styled(line))
    for number, note in enumerate(missing):
        click.echo(("\n" if shown and not number else "") + note)


def _is_spec(target: str) -> bool:
    return target.partition("::")[0].endswith(SPEC_SUFFIX)


def _load_specs(file: Path) -> list[Spec]:
    try:
        return load_project_specs(file)
    except SpecError as err:
        raise ContentError(inert(str(err))) from None


def _specs_named(target: str, *, arms: bool) -> list[Spec]:
    """The specs of a spec file, or of `file::name` (with `arms`: each arm of it); none: error."""
    text, _, name = target.partition("::")
    file = Path(text)
    if not file.is_file():
        raise click.ClickException(f"no spec file {file}")
    specs = _load_specs(file)
    chosen = [s for s in specs if not name or name == s.name or (arms and name == s.base_name)]
    if not chosen:
        names = ", ".join(spec.name for spec in specs)
        raise click.ClickException(f"{file} has no spec named {name!r} (it has: {names})")
    return chosen


def _spec_cassettes(target: str, missing: list[str]) -> list[tuple[Spec, Path]]:
    """The cassettes of the specs `target` names (none: an error); specs lacking one: `missing`."""
    chosen = _specs_named(target, arms=True)
    found = [(spec, cassette_path(spec)) for spec in chosen if cassette_path(spec).exists()]
    missing += [
        f"spec '{spec.name}' has no cassette (expected "
        f"{display_path(cassette_path(spec))}); record it with: {record_command(spec)}"
        for spec in chosen
        if not cassette_path(spec).exists()
    ]
    if not found:
        raise click.ClickException("\n".join(missing))
    return found


@cassette.command(short_help="Estimate what re-recording specs would cost.")
@click.argument("targets", nargs=-1, required=True, metavar="SPEC|FOLDER|CASSETTE...")
def cost(targets: tuple[str, ...]) -> None:
    """Estimate what re-recording would cost, before anything is spent: each cassette's
    answers, their usage folded as the API bills it (advisor and compaction steps, web
    searches) and priced at today's prices (Claude Code's own), by the model each request
    asked for. Spend no more than that with `--atom-max-cost-usd` (`atom run --max-cost-usd`).

    A TARGET is a spec file (`*.atom.yaml`, or `file::name` for one of its specs) or a
    folder of them, whose cassettes are estimated, or a cassette file. A spec without a
    cassette has no estimate: it is named, with the command that records it.
    """
    missing: list[str] = []
    rows = [
        (label, estimate(_load(path)))
        for target in targets
        for label, path in _cost_targets(target, missing)
    ]
    width = max((len(label) for label, _ in rows), default=0)
    total = Estimate()
    for label, found in rows:
        total.answers += found.answers
        total.used += found.used
        total.usd += found.usd
        click.echo(
            f"{label:<{width}}  {plural(found.answers, 'answer')}, "
            f"{found.tokens} tokens, ${found.usd:.4f}"
        )
    for line in missing:
        click.echo(line)
    steps = total.used.by_kind()
    extra = "".join(f", {kind} {n}" for kind, n in steps.items() if kind != "message")
    click.echo(
        f"Estimate: {plural(len(rows), 'cassette')}, {total.tokens} tokens{extra}, "
        f"${total.usd:.4f} at today's prices"
    )


def _cost_targets(target: str, missing: list[str]) -> list[tuple[str, Path]]:
    """(label, cassette) of a target; a spec without a cassette goes to `missing`."""
    if Path(target).is_dir():
        files = spec_files([Path(target)])
        return [found for file in files for found in _cost_targets(str(file), missing)]
    if not _is_spec(target):
        return [(display_path(Path(target)), Path(target))]
    found = []
    for spec in _specs_named(target, arms=False):
        label = f"{display_path(Path(target.partition('::')[0]))}::{spec.name}"
        if cassette_path(spec).exists():
            found.append((label, cassette_path(spec)))
        else:
            missing.append(f"{label}: no cassette, no estimate (record it: {record_command(spec)})")
    return found


@cassette.command(short_help="Scan cassettes for secrets and unnormalized requests.")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.pass_context
def check(ctx: click.Context, files: tuple[Path, ...]) -> None:
    """Check cassettes before a commit (for a pre-commit hook); FILES may be directories.

    A directory is searched recursively for `*.yaml` files under a folder named
    `cassettes` (the directory itself may be one) and for calibration cassettes
    (`calibration/<spec>/cassette.yaml`), so spec files, scripts and samples beside them
    are skipped; a spec file (`*.atom.yaml`) stands for its specs' cassettes and its
    calibration cassette. Without FILES, the ini
    option `atom_paths` that `pytest --atom` collects. Each finding is one line,
    `<file>: interaction <n>: <what>` (interactions numbered from 1, as `atom cassette
    show` numbers them); secret values are never printed.

    \b
    Findings:
      - a secret: a known token shape or the value of a secret environment variable,
        anywhere in the file, or a credential header (x-api-key, authorization, ...)
      - a raw path of the recording machine: its run folder, or a home or temp path
        (/home/<user>/, /Users/<user>/, /root/, /tmp/...) the machine wrote: path
        normalization did not happen. A path the model wrote itself (/tmp/x.py in a
        tool input, a code-execution container's path) is the conversation: no finding
      - a /v1/messages request with none of <DATE>, <RUN_DIR>, <METADATA>: not
        recorded through pytest-atom, so it will not replay elsewhere
      - a malformed interaction: a value of the wrong type (a header that is a
        number, a body that is a list) or a key left out; a replay refuses it
      - an answer cut before message_stop that the recording did not mark as a
        fault it kept (x-atom-fault): a replay would serve it as whole

    \b
    Notes (a replay copes; they do not change the exit status):
      - a machine detail recorded before pytest-atom masked it (a kernel release, a
        login shell, ...): masked again on every load; `atom cassette refresh` rewrites it
      - no prompt or script hash: an edited prompt or script would replay unnoticed;
        `atom cassette stamp SPEC` writes them
      - a spec's check that runs outside the sandbox (`unsandboxed: true`), with its reason

    A `*.partial.yaml` is no cassette but what a failed recording kept (it never replays):
    it is reported as a stale leftover, to delete or to replace by recording again.

    Exit status: 0 clean, 1 findings or stale partials, 2 a path could not be read as a
    cassette (not one, not UTF-8, or truncated: cut short before vcrpy's closing
    `version:` key).
    """
    if not files:
        files = atom_paths(quiet=False, argument="FILES")
    tally = Tally()
    try:
        for finding in audit_cassettes(files, tally):
            if finding.kind == "unreadable":
                click.echo(f"Error: {finding.text}", err=True)
            else:
                click.echo(f"{finding.where}: {finding.text}")
    except SpecError as err:  # a spec file named among FILES
        raise ContentError(inert(str(err))) from None
    for note in unsandboxed_notes(files):
        click.echo(f"{tally.count(note).where}: {note.text}")
    click.echo(_summary(tally))
    ctx.exit(2 if tally.unreadable else 1 if tally.findings or tally.partials else 0)


def _summary(tally: Tally) -> str:
    summary = f"{plural(tally.checked, 'cassette')} checked, {plural(tally.findings, 'finding')}"
    if tally.notes:
        summary += f", {plural(tally.notes, 'note')}"
    if tally.partials:
        summary += f", {plural(tally.partials, 'stale partial')}"
    if tally.unreadable:
        summary += f", {tally.unreadable} unreadable"
    return summary


@cassette.command(short_help="Rewrite cassettes for this Claude Code without spending a token.")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
def refresh(specs: tuple[Path, ...]) -> None:
    """Refresh the cassettes of SPECS (files or folders) for the Claude Code installed here.

    Each spec is replayed with the live CLI, matched on the conversation, and served the
    recorded answers; then the cassette's requests and metadata are rewritten to what this
    CLI sent, atomically, so `--atom-match=strict` passes with it. No request leaves the
    machine. Where the conversation itself diverges, the cassette is left as it was and
    the divergence is reported: that needs a re-recording, not a refresh. A scripted spec
    without a cassette has nothing to refresh (its script answers) and is passed over.

    Exit status: 0 all refreshed, 1 some were not, 2 a spec could not be run at all.
    """
    from pytest_atom.run.execution import HARNESS_ERRORS

    harness, found = _refreshing(specs)
    refused = 0
    for spec in found:
        if spec.script is not None and not cassette_path(spec).is_file():
            click.echo(f"{spec.name}: nothing to refresh: its script answers every turn")
            continue
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
        if drift := drift_line(result.drift):
            click.echo(f"  {drift}")
        if not result.outcome.ok:
            click.echo(f"  note: the spec fails with this Claude Code:\n{result.report()}")
    sys.exit(1 if refused else 0)


@cassette.command(short_help="Store the prompt and script hashes in cassettes that still fit.")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
def stamp(specs: tuple[Path, ...]) -> None:
    """Store the prompt and script hashes in the cassettes of SPECS (files or folders), so
    that an edited prompt or script is refused with the command that re-records it.

    Cassettes recorded before pytest-atom stored these hashes cannot tell when they are
    stale. A hash is stamped only where the cassette is proven to fit the spec as it is:
    a replay (offline, matched on the conversation) must serve every recorded turn with
    no divergence, which proves the prompt and all else the user owns; and a cassette
    recorded from a script must hold, turn for turn, what the script answers now, which
    no replay can tell (it serves the recorded answers). Whether the spec's checks pass
    is its verdict, not the cassette's fit: an xfail spec's cassette is stamped too.
    Only the metadata changes, written atomically.

    Exit status: 0 all stamped (or already), 1 some could not be, 2 a spec could not run.
    """
    from pytest_atom.audit.stamp import stamp_cassette
    from pytest_atom.run.execution import HARNESS_ERRORS

    harness, found = _refreshing(specs)
    refused = 0
    for spec in found:
        try:
            done = stamp_cassette(spec, harness)
        except CassetteError as exc:
            raise click.ClickException(str(exc)) from None
        except HARNESS_ERRORS as exc:
            raise click.ClickException(f"{spec.name}: {exc}") from None
        click.echo(done.line)
        refused += not done.fits
    sys.exit(1 if refused else 0)


def _refreshing(specs: tuple[Path, ...]) -> tuple[Harness, list[Spec]]:
    """The harness that replays for `refresh` and `stamp`, and the specs of SPECS."""
    from pytest_atom.run.harness import host_harness

    files = spec_files(specs)
    harness = host_harness({"record_mode": "refresh"}, spec_dirs={f.parent for f in files})
    return harness, collect_specs(files, harness.registry())
