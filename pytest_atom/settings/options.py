"""Every pytest-atom setting, declared once: the table both front ends are generated from.

`pytest_atom.plugin` turns each row into a ``--atom-*`` option and an ``atom_*`` ini
registration, `atom_cli.run_cmd` into one of ``atom run``'s click options, and
`pytest_atom.settings.resolved` reads it to know which settings a file may set. Help texts,
choices and path rules therefore cannot differ between the front ends, and
`options_markdown` renders the same rows for the documentation.

This module is data (a declarative table, the one exception to the 60-line rule) and
imports nothing of the harness, so the pytest plugin can load it in every pytest run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_atom.settings.modes import JUDGE_MODES, MATCH_MODES, RECORD_MODES, SETUP_CACHE_MODES

#: What a setting's value is: the front ends choose their option types from it.
Kind = Literal["choice", "flag", "text", "number", "size", "names", "path", "paths", "tolerance"]

#: pytest's configuration files, in the order pytest prefers them within one folder: the
#: one list that decides a project's root (pytest's rootdir) everywhere in pytest-atom.
INI_NAMES = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)


@dataclass(frozen=True)
class Option:
    """One setting: its name in `RunSettings`, how each front end and file spells it, and
    what it means.

    A path given on a command line is taken from the folder the command ran in (pytest's
    ``invocation_params.dir``, ``atom run``'s current folder); in a file (the ini file,
    ``.atom/config.yaml``) from the project's root.
    """

    name: str  # the `RunSettings` field, and the key in `.atom/config.yaml`
    kind: Kind
    help: str
    default: str  # as the documentation states it
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    #: `path` options: "dir" or "file", and whether it must already exist.
    path: Literal["dir", "file"] | None = None
    exists: bool = False
    #: A path the run writes: checked before any spec runs (`settings.output_paths`).
    output: bool = False
    #: Settable on the command lines (`--atom-NAME`, `atom run --NAME`)?
    command_line: bool = True
    #: Settable in a file (`atom_NAME` in the ini file, `NAME:` in `.atom/config.yaml`)?
    in_files: bool = True
    #: What the ini file's help adds to "default for --atom-NAME".
    ini_note: str = ""

    @property
    def pytest_flag(self) -> str:
        return "--atom-" + self.name.replace("_", "-")

    @property
    def run_flag(self) -> str:
        """``atom run``'s spelling: the pytest option without its ``atom-`` prefix."""
        return "--" + self.name.replace("_", "-")

    @property
    def ini_name(self) -> str:
        return "atom_" + self.name

    @property
    def ini_help(self) -> str:
        if not self.command_line:
            return self.help
        return f"default for {self.pytest_flag}{f' ({self.ini_note})' if self.ini_note else ''}."


OPTIONS: tuple[Option, ...] = (
    Option(
        "record_mode",
        "choice",
        "none (the default): replay cassettes, never reach the network; once: record specs "
        "with no cassette; new_episodes: record what does not match; all: record everything "
        "anew; refresh: replay with this Claude Code and rewrite the cassette's requests "
        "(no tokens).",
        default="none",
        choices=RECORD_MODES,
    ),
    Option(
        "match",
        "choice",
        "conversation (the default): a recorded request matches when the conversation is "
        "the same, whatever Claude Code wraps it in; structural: tool-result text aside too; "
        "strict: the whole request body.",
        default="conversation",
        choices=MATCH_MODES,
    ),
    Option(
        "upstream",
        "text",
        "where recording forwards to (default: a scripted spec's own script, else "
        "$ANTHROPIC_BASE_URL, else the Anthropic API).",
        default="a scripted spec's script, else $ANTHROPIC_BASE_URL, else the Anthropic API",
        metavar="URL",
    ),
    Option(
        "strict_version",
        "flag",
        "fail a replay whose cassette was recorded with another Claude Code version.",
        default="false",
        ini_note="true or false",
    ),
    Option(
        "rejudge",
        "flag",
        "replay the agent's sessions and record the reflector's anew (after changing "
        "accept: or criteria:), replacing only the reflector's part of each cassette.",
        default="false",
        in_files=False,
    ),
    Option(
        "judge",
        "choice",
        "recall (the default): a replay takes the recorded verdict (and plan) without "
        "starting the reflector (planner) when its whole input is unchanged: its request and "
        "the folder it reads; rerun: start it anyway.",
        default="recall",
        choices=JUDGE_MODES,
        ini_note="recall or rerun",
    ),
    Option(
        "threshold",
        "number",
        "reflector score a spec must exceed to pass, unless the spec sets its own (default 0.8).",
        default="0.8",
        metavar="SCORE",
        ini_note="a spec's own `reflector: {threshold}` wins",
    ),
    Option(
        "max_cost_usd",
        "number",
        "what a recording session may spend in all (at Claude Code's prices, as the "
        "answers arrive): once reached, no new Claude Code call starts, the running ones are "
        "stopped, the rest of the specs are skipped and the run exits 2. Estimate first with "
        "`atom cassette cost`.",
        default="no limit",
        metavar="USD",
        ini_note="US dollars",
    ),
    Option(
        "runs_dir",
        "path",
        "where each spec run gets its isolated folder (default: .atom/runs in the project's "
        "root: the folder holding .atom/config.yaml, else pytest's rootdir).",
        default=".atom/runs",
        metavar="DIR",
        path="dir",
        output=True,
    ),
    Option(
        "resume",
        "path",
        "continue a multi-step spec's interrupted run in RUN_DIR from its latest "
        "committed step (specs whose runs RUN_DIR is not run afresh).",
        default="none",
        metavar="RUN_DIR",
        path="dir",
        exists=True,
        in_files=False,
    ),
    Option(
        "keep_runs",
        "number",
        "after the session, keep the newest N run folders of each spec, and every "
        "failed run of this session (default 10; 0 keeps all).",
        default="10",
        metavar="N",
    ),
    Option(
        "keep_runs_size",
        "size",
        "after the session, also delete the oldest run folders until all fit in SIZE "
        "(such as 500MB; 0: no bound); the newest of each spec and this session's failures "
        "stay (default 2GB).",
        default="2GB",
        metavar="SIZE",
    ),
    Option(
        "setup_cache",
        "choice",
        "what a spec's setup: made in the attempt folder (a virtualenv, node_modules) is "
        "kept per user, keyed on the commands, the lock files (or the spec's setup: "
        "{inputs}), the toolchain and the environment, and restored without running them. "
        "copy (the default): restored by reflink where the file system can, else copied; "
        "link: hard links, fastest, files shared read-only with the cache; off: set-up "
        "runs every time.",
        default="copy",
        choices=SETUP_CACHE_MODES,
        ini_note="copy, link or off",
    ),
    Option(
        "setup_cache_size",
        "size",
        "after the session, delete the least recently used set-up cache entries until the "
        "cache fits in SIZE (0: no bound; default 5GB); `atom cache prune` does it by hand.",
        default="5GB",
        metavar="SIZE",
    ),
    Option(
        "paths",
        "paths",
        "spec paths collected by `pytest --atom` when none are given (better: `paths:` in "
        ".atom/config.yaml, which a pytest without pytest-atom never reads).",
        default="none",
        command_line=False,
    ),
    Option(
        "repeat",
        "number",
        "run each spec N times and report its pass rate (Wilson 95 % interval), "
        "pass@k and pass^k, and its mean score and turns with their intervals (default 1).",
        default="1",
        metavar="N",
    ),
    Option(
        "seed",
        "number",
        "draw the choices of stochastic scripts (a turn's `choices:`) from N, with the "
        "spec and the repeat: the same N plays the same choices (default: a fresh seed, "
        "printed in the header).",
        default="a fresh seed",
        metavar="N",
        in_files=False,
    ),
    Option(
        "arms",
        "names",
        "run only these arms of specs with `arms:` (default: every arm); specs "
        "without arms run as usual.",
        default="every arm",
        metavar="NAME,...",
        in_files=False,
    ),
    Option(
        "min_pass_rate",
        "number",
        "gate on pass rates: the run fails when a spec passes less than R (0..1) of its "
        "repeats, and succeeds otherwise even if some repeats failed.",
        default="none",
        metavar="R",
    ),
    Option(
        "report",
        "path",
        "write one JSON trace per spec run (seed 003's invocation-trace shape) and the "
        "transcript of every Claude session into DIR, secrets scrubbed, and the session's "
        "results.json (what `atom results combine` joins across CI shards).",
        default="none",
        metavar="DIR",
        path="dir",
        output=True,
        ini_note="relative to the project's root",
    ),
    Option(
        "html",
        "path",
        "write one self-contained HTML report of the run to PATH (transcripts, checks, "
        "verdicts, diffs; secrets scrubbed); `atom view` opens the last one.",
        default="none",
        metavar="PATH",
        path="file",
        output=True,
        ini_note="relative to the project's root",
    ),
    Option(
        "baseline",
        "path",
        "compare the run with a baseline (atom baseline save): a regression in outcome, "
        "score, turns, tokens or cost beyond its tolerance fails the run.",
        default="none",
        metavar="PATH",
        path="file",
        ini_note="relative to the project's root",
    ),
    Option(
        "baseline_tolerance",
        "tolerance",
        "tolerances for --atom-baseline, e.g. 'turns=0.5 tokens=0.2 duration_s=none' "
        "(a spec's own `baseline: {tolerance: …}` wins).",
        default="the built-in tolerances",
        command_line=False,
    ),
)

#: The rows by setting name.
BY_NAME = {option.name: option for option in OPTIONS}


def options_markdown() -> str:
    """The table as a Markdown table (for the documentation site's option reference)."""
    lines = [
        "| pytest option | ini file / `.atom/config.yaml` | `atom run` | type | default | help |",
        "|---|---|---|---|---|---|",
    ]
    for o in OPTIONS:
        flag = f"`{o.pytest_flag}`" if o.command_line else "-"
        ini = f"`{o.ini_name}` / `{o.name}:`" if o.in_files else "-"
        run = f"`{o.run_flag}`" if o.command_line else "-"
        kind = " \\| ".join(o.choices) if o.choices else (o.path or o.kind)
        text = o.help.replace("|", "\\|")
        lines.append(f"| {flag} | {ini} | {run} | {kind} | {o.default} | {text} |")
    return "\n".join(lines) + "\n"
