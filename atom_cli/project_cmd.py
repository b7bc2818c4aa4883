"""`atom init` scaffolds a project that `pytest --atom` runs at once; `atom doctor` checks a machine.

`init` never overwrites a file that exists (unless `--force`, and then only its own
scaffold files). Its settings (`paths: [specs]`) go into `.atom/config.yaml`, which only
pytest-atom reads, never into pytest's own ini: a key there makes every pytest without
pytest-atom (a contributor's, tox's, a CI job's) warn "Unknown config option", which
``filterwarnings = error`` turns into an abort.
"""

from __future__ import annotations

import shlex
import sys
from importlib.resources import files
from pathlib import Path

import click

from pytest_atom.doctor import run_probes
from pytest_atom.paths import display_path
from pytest_atom.settings.project import find_ini, project_root
from pytest_atom.settings.resolved import ini_note
from pytest_atom.words import plural

# --------------------------------------------------------------------------- atom init

SPEC_DIR = "specs"
#: Scaffold files, relative to the project folder (the ones `--force` may overwrite), and
#: their templates in atom_cli/scaffold/.
SCAFFOLD: dict[str, str] = {
    f"{SPEC_DIR}/hello.atom.yaml": "hello.atom-spec.yaml",
    f"{SPEC_DIR}/scripts/hello.yaml": "hello-script.yaml",
    f"{SPEC_DIR}/workspaces/hello/README.md": "hello-README.md",
    ".atom/config.yaml": "config.yaml",
}

RUNS_IGNORE = ".atom/runs/"
#: .gitignore lines that already keep the run folders out of git.
_IGNORES_RUNS = {
    prefix + path + suffix
    for prefix in ("", "/")
    for path in (".atom", ".atom/runs")
    for suffix in ("", "/", "/*", "/**")
}
#: The history store's embedded default (with SQLite's -wal and -shm files): the project's
#: own, never committed (a team shares a PostgreSQL store instead).
HISTORY_IGNORE = ".atom/history.db*"
_IGNORES_HISTORY = {
    prefix + path + suffix
    for prefix in ("", "/")
    for path, suffixes in ((".atom", ("", "/", "/*", "/**")), (".atom/history.db", ("*",)))
    for suffix in suffixes
}
#: What a failed recording keeps beside the cassette it did not replace: never committed.
PARTIALS_IGNORE = "*.partial.yaml"
_IGNORES_PARTIALS = {PARTIALS_IGNORE, "**/" + PARTIALS_IGNORE, "/**/" + PARTIALS_IGNORE}
#: The last session's results are `.atom/runs/last-run.json`: `RUNS_IGNORE` keeps them out too.


@click.command()
@click.argument(
    "directory",
    default=".",
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option("--force", is_flag=True, help="Overwrite the example spec and config files.")
def init(directory: Path, force: bool) -> None:
    """Scaffold a pytest-atom project in DIRECTORY (default: the current folder).

    Creates an example spec that `pytest --atom` runs offline from a script, a project
    config (.atom/config.yaml, which names specs/ as the spec folder) and .gitignore
    entries for run folders. pytest's own settings are left alone. Existing files are
    kept; `--force` overwrites the example spec and config only.
    """
    directory.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    for relative, template in SCAFFOLD.items():
        content = (files("atom_cli") / "scaffold" / template).read_text(encoding="utf-8")
        click.echo(_write_scaffold(directory, relative, content, force))
    ini = find_ini(directory)
    note = ini and ini_note(ini.values, display_path(ini.path))
    if note:
        notes.append(note.removeprefix("pytest-atom: "))
    # The specs only: a bare `pytest --atom` would run the project's whole suite too.
    run = f"pytest --atom {SPEC_DIR}"
    click.echo(_ignore_runs(directory))
    for note in notes:
        click.echo(f"note: {note}")
    click.echo("")
    click.echo("Next steps:")
    if directory.resolve() != Path.cwd().resolve():
        click.echo(f"  cd {shlex.quote(str(directory))}")
    click.echo(f"  {run:<42} # runs specs/hello.atom.yaml from its script: no network, no API key")
    click.echo("To record a real session of the agent and replay it from then on:")
    click.echo("  export ANTHROPIC_API_KEY=...               # needed for recording only")
    click.echo("  (delete the `script:` line from specs/hello.atom.yaml)")
    click.echo(
        f"  {run + ' --atom-record-mode=once':<42} # writes specs/cassettes/hello/hello.yaml; "
        "later runs replay it offline"
    )


def _write_scaffold(directory: Path, relative: str, content: str, force: bool) -> str:
    path = directory / relative
    existed = path.exists() or path.is_symlink()
    if existed and not force:
        return f"kept existing {relative}"
    if existed and (path.is_symlink() or not path.is_file()):
        # Never write through a link or over a folder: that could reach outside the project.
        return f"kept existing {relative} (not a regular file, even with --force)"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return f"{'overwrote' if existed else 'created'} {relative}"


def _ignore_runs(directory: Path) -> str:
    """Keep run folders, the history store and partial cassettes out of git."""
    path = directory / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    lines = {line.strip() for line in text.splitlines()}
    missing = [
        (comment, pattern)
        for comment, pattern, known in (
            ("pytest-atom run folders and last-run.json", RUNS_IGNORE, _IGNORES_RUNS),
            ("pytest-atom's run history store", HISTORY_IGNORE, _IGNORES_HISTORY),
            ("pytest-atom: what failed recordings kept", PARTIALS_IGNORE, _IGNORES_PARTIALS),
        )
        if not lines & known
    ]
    if not missing:
        return f".gitignore already ignores {RUNS_IGNORE}, {HISTORY_IGNORE} and {PARTIALS_IGNORE}"
    prefix = "" if not text or text.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8") as out:
        out.write(prefix + "".join(f"# {comment}\n{pattern}\n" for comment, pattern in missing))
    added = ", ".join(pattern for _, pattern in missing)
    return f"{'updated' if text else 'created'} .gitignore: {added}"


# ------------------------------------------------------------------------- atom doctor

_MARKS = {
    True: {"ok": "✓", "warn": "!", "fail": "✗", "skip": "-", "info": "·"},
    False: {"ok": "ok", "warn": "WARN", "fail": "FAIL", "skip": "SKIP", "info": "info"},
}


@click.command()
def doctor() -> None:
    """Check this machine: the Claude Code CLI, credentials, Node.js and a real CLI run.

    Exits 1 when a check fails; warnings (another CLI version, say) do not.
    """
    tty = sys.stdout.isatty()
    width = max(len(m) for m in _MARKS[tty].values())
    counts = {"ok": 0, "warn": 0, "fail": 0, "skip": 0, "info": 0}
    for finding in run_probes(project_root()):  # the probes: pytest_atom.doctor
        counts[finding.status] += 1
        mark = _MARKS[tty][finding.status].ljust(width)
        color = {"ok": "green", "warn": "yellow", "fail": "red"}.get(finding.status)
        shown = click.style(mark, fg=color) if tty and color else mark
        click.echo(f"{shown} {finding.name}: {finding.detail}")

    failed, warned = counts["fail"], counts["warn"]
    if failed:
        click.echo(f"\n{plural(failed, 'check')} failed.")
        click.get_current_context().exit(1)
    extra = f" ({plural(warned, 'warning')})" if warned else ""
    click.echo(f"\nAll checks passed{extra}.")
