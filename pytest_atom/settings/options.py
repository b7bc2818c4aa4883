"""Every pytest-atom setting, declared once: `RunSettings`, whose fields are the option table.

Each field of `RunSettings` is one setting: its name, its type and default, and its row (an
`Option`): its parser, its scope (the whole run, or one test), which files may set it, its
help. Everything else is generated from these rows:

- pytest's ``--atom-NAME`` options and ``atom_NAME`` ini keys (`pytest_atom.plugin`);
- ``atom run``'s click options (`atom_cli.common.setting_options`);
- the keys `.atom/config.yaml` accepts and how each is checked (`settings.config`);
- `PER_TEST`, the settings a test's mark or its `atom_settings` fixture may set;
- the documentation's option table (`options_markdown`, via docs/hooks.py).

To add a setting, add one field here (and its parser to `settings.parsers` if its kind of
value is new): no other file names it. tests/settings/test_declared_once.py holds that.

This module is data (a declarative table, the one exception to the 60-line rule) and
imports nothing of the harness, so the pytest plugin can load it in every pytest run.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from pytest_atom.settings import parsers as p
from pytest_atom.settings.modes import (
    DEFAULT_MATCH,
    JUDGE_MODES,
    MATCH_MODES,
    RECORD_MODES,
    SETUP_CACHE_MODES,
    JudgeMode,
    MatchMode,
    RecordMode,
    SetupCacheMode,
)

#: What a setting's value is: the front ends choose their option types from it.
Kind = Literal["choice", "flag", "text", "number", "size", "names", "path", "paths", "tolerance"]
#: Who may set it: the whole run only, or also one test (its mark, `atom_settings`).
Scope = Literal["run", "test"]

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

DEFAULT_KEEP_RUNS = 10
#: Run folders of a project, all specs together (`keep_runs_size`): ten runs of a
#: JavaScript project with its node_modules (185 MB each) fit.
DEFAULT_KEEP_RUNS_SIZE = 2 * 10**9
#: The user's set-up cache (`setup_cache_size`), all projects together: a dozen or so
#: virtualenvs or node_modules trees, each key's newest; the least recently used go first.
DEFAULT_SETUP_CACHE_SIZE = 5 * 10**9


@dataclass(frozen=True)
class Option:
    """One setting's row: how each front end and file spells it, how its value is checked,
    who may set it and what it means. A path is relative to the folder the command ran in,
    or in a file to the project's root."""

    kind: Kind
    help: str
    #: The default as the documentation states it; unset: the field's default (`_shown`).
    default: str = ""
    #: Raw value in, typed value out, ValueError with the fix; unset: its kind's
    #: (`_KIND_PARSERS`), or one made from its `choices`.
    parser: p.Parser | None = None
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    #: `path` options: "dir" or "file", and whether it must already exist.
    path: Literal["dir", "file"] | None = None
    exists: bool = False
    #: A path the run writes: checked before any spec runs (`settings.output_paths`).
    output: bool = False
    #: Settable on the command lines (`--atom-NAME`, `atom run --NAME`)?
    command_line: bool = True
    #: Settable in pytest's ini file (`atom_NAME`)? In `.atom/config.yaml` (`NAME:`)?
    in_ini: bool = True
    in_config: bool = True
    scope: Scope = "run"
    #: Can its value change an item's outcome? Then it is part of the outcome cache's input
    #: digest. Yes unless a row says no: an unclassified setting must not let a stored pass
    #: stand for a run made another way.
    outcome: bool = True
    #: What the ini file's help adds to "default for --atom-NAME".
    ini_note: str = ""
    #: The `RunSettings` field: filled in from the field this row is declared on.
    name: str = ""

    def parse(self, value: Any) -> Any:
        """`value` checked and typed by this setting's parser; ValueError with the fix."""
        return (self.parser or p.choice(self.choices))(value)

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


_ROW = "pytest_atom.option"
T = TypeVar("T")


def setting(default: T, row: Option) -> T:
    """A `RunSettings` field with its default and its row (the field gives the row its
    name). Typed as the default, so a type checker reads the field as it is declared."""
    return field(default=default, metadata={_ROW: row})


def setting_made(factory: Callable[[], T], row: Option) -> T:
    """`setting` for a mutable default, made afresh for each `RunSettings` (not hashed)."""
    return field(default_factory=factory, hash=False, metadata={_ROW: row})


@dataclass(frozen=True)
class RunSettings:
    """How specs run, whatever front end runs them: one field per setting, in the order
    the documentation and ``--help`` list them. `pytest_atom.settings.resolved` says which
    place that sets a setting wins."""

    record_mode: RecordMode = setting(
        "none",
        Option(
            "choice",
            "none (the default): replay cassettes, never reach the network; once: record specs "
            "with no cassette; new_episodes: record what does not match; all: record everything "
            "anew; refresh: replay with this Claude Code and rewrite the cassette's requests "
            "(no tokens).",
            choices=RECORD_MODES,
            scope="test",
        ),
    )
    match: MatchMode = setting(
        DEFAULT_MATCH,
        Option(
            "choice",
            "conversation (the default): a recorded request matches when the conversation is "
            "the same, whatever Claude Code wraps it in; structural: tool-result text aside too; "
            "strict: the whole request body.",
            choices=MATCH_MODES,
            scope="test",
        ),
    )
    upstream: str | None = setting(
        None,
        Option(
            "text",
            "where recording forwards to (default: a scripted spec's own script, else "
            "$ANTHROPIC_BASE_URL, else the Anthropic API).",
            default="a scripted spec's script, else $ANTHROPIC_BASE_URL, else the Anthropic API",
            parser=p.text,
            metavar="URL",
            scope="test",
        ),
    )
    strict_version: bool = setting(
        False,
        Option(
            "flag",
            "fail a replay whose cassette was recorded with another Claude Code version.",
            ini_note="true or false",
            scope="test",
        ),
    )
    rejudge: bool = setting(
        False,
        Option(
            "flag",
            "replay the agent's sessions and record the reflector's anew (after changing "
            "accept: or criteria:), replacing only the reflector's part of each cassette.",
            in_ini=False,
            in_config=False,  # a one-off action
            scope="test",
        ),
    )
    judge: JudgeMode = setting(
        "recall",
        Option(
            "choice",
            "recall (the default): a replay takes the recorded verdict (and plan) without "
            "starting the reflector (planner) when its whole input is unchanged: its request and "
            "the folder it reads; rerun: start it anyway.",
            choices=JUDGE_MODES,
            ini_note="recall or rerun",
            scope="test",
        ),
    )
    #: The default of the specs that state none: a spec's own `reflector: {threshold}` is
    #: part of the test, like an assertion's expected value, and wins.
    threshold: float = setting(
        0.8,
        Option(
            "number",
            "reflector score a spec must exceed to pass, unless the spec sets its own (default 0.8).",
            parser=p.threshold,
            metavar="SCORE",
            ini_note="a spec's own `reflector: {threshold}` wins",
            scope="test",
        ),
    )
    require_calibration: float | None = setting(
        None,
        Option(
            "number",
            "a criterion's verdict gates only when the judge's calibration for it (`atom "
            "calibrate`) is fresh and its Cohen's kappa is at least KAPPA; otherwise it is "
            "advisory: shown, never failing the spec.",
            parser=p.kappa,
            metavar="KAPPA",
            ini_note="a criterion's own `min_kappa` wins",
            scope="test",
        ),
    )
    max_cost_usd: float | None = setting(
        None,
        Option(
            "number",
            "what a recording session may spend in all (at Claude Code's prices, as the "
            "answers arrive): once reached, no new Claude Code call starts, the running ones are "
            "stopped, the rest of the specs are skipped and the run exits 2. Estimate first with "
            "`atom cassette cost`.",
            default="no limit",
            parser=p.dollars,
            metavar="USD",
            ini_note="US dollars",
        ),
    )
    runs_dir: Path | None = setting(  # None: .atom/runs under the project's root
        None,
        Option(
            "path",
            "where each spec run gets its isolated folder (default: .atom/runs in the project's "
            "root: the folder holding .atom/config.yaml, else pytest's rootdir).",
            default=".atom/runs",
            metavar="DIR",
            path="dir",
            output=True,
            outcome=False,
        ),
    )
    resume: Path | None = setting(
        None,
        Option(
            "path",
            "continue a multi-step spec's interrupted run in RUN_DIR from its latest "
            "committed step (specs whose runs RUN_DIR is not run afresh).",
            metavar="RUN_DIR",
            path="dir",
            exists=True,
            in_ini=False,
            in_config=False,  # a one-off action
        ),
    )
    keep_runs: int = setting(
        DEFAULT_KEEP_RUNS,
        Option(
            "number",
            "after the session, keep the newest N run folders of each spec, and every "
            "failed run of this session (default 10; 0 keeps all).",
            parser=p.whole(0, " (0 keeps every run folder)"),
            metavar="N",
            outcome=False,
        ),
    )
    keep_runs_size: int | None = setting(
        DEFAULT_KEEP_RUNS_SIZE,
        Option(
            "size",
            "after the session, also delete the oldest run folders until all fit in SIZE "
            "(such as 500MB; 0: no bound); the newest of each spec and this session's failures "
            "stay (default 2GB).",
            default="2GB",
            metavar="SIZE",
            outcome=False,
        ),
    )
    #: How a spec's set-up result is cached and restored (pytest_atom.setup_cache).
    setup_cache: SetupCacheMode = setting(
        "copy",
        Option(
            "choice",
            "what a spec's setup: made in the attempt folder (a virtualenv, node_modules) is "
            "kept per user, keyed on the commands, the whole workspace by content (or the "
            "files the spec's setup: {inputs} name), the toolchain and the environment, and "
            "restored without running them. copy (the default): restored by reflink where the "
            "file system can, else copied, after a check of the entry's content; off: set-up "
            "runs every time.",
            choices=SETUP_CACHE_MODES,
            ini_note="copy or off",
        ),
    )
    setup_cache_size: int | None = setting(
        DEFAULT_SETUP_CACHE_SIZE,
        Option(
            "size",
            "after the session, delete the least recently used set-up cache entries until the "
            "cache fits in SIZE (0: no bound; default 5GB); `atom cache prune` does it by hand.",
            default="5GB",
            metavar="SIZE",
            outcome=False,
        ),
    )
    paths: tuple[Path, ...] = setting(
        (),
        Option(
            "paths",
            "spec paths collected by `pytest --atom` when none are given (better: `paths:` in "
            ".atom/config.yaml, which a pytest without pytest-atom never reads).",
            command_line=False,
            outcome=False,
        ),
    )
    repeat: int = setting(
        1,
        Option(
            "number",
            "run each spec N times and report its pass rate (Wilson 95 % interval), "
            "pass@k and pass^k, and its mean score and turns with their intervals (default 1; "
            "a spec's own `repeats:` wins).",
            parser=p.whole(1),
            metavar="N",
            outcome=False,
        ),
    )
    #: None until `with_seed` gives the run a fresh one.
    seed: int | None = setting(
        None,
        Option(
            "number",
            "draw the choices of stochastic scripts (a turn's `choices:`) from N, with the "
            "spec and the repeat: the same N plays the same choices (default: a fresh seed, "
            "printed in the header).",
            default="a fresh seed",
            parser=p.whole(0, ", such as the seed an earlier run printed"),
            metavar="N",
            in_ini=False,
            in_config=False,
            outcome=False,
        ),
    )
    arms: tuple[str, ...] = setting(
        (),
        Option(
            "names",
            "run only these arms of specs with `arms:` (default: every arm); specs "
            "without arms run as usual.",
            default="every arm",
            metavar="NAME,...",
            in_ini=False,
            in_config=False,
            outcome=False,
        ),
    )
    #: A gate of the whole run, as `min_pass_rate` is (`suite.ending.decide`).
    pass_at_least: int | None = setting(
        None,
        Option(
            "number",
            "a spec passes when at least K of its repeats pass (pass^k), and the run succeeds "
            "though single repeats failed (default: every repeat must pass; K above a spec's "
            "repeats asks for all of them). A spec's own `pass_at_least:` wins over it and "
            "over --atom-min-pass-rate.",
            default="every repeat",
            parser=p.whole(1),
            metavar="K",
            outcome=False,
        ),
    )
    min_pass_rate: float | None = setting(  # the pass rates, not single runs, gate the run
        None,
        Option(
            "number",
            "gate on pass rates: the run fails when a spec passes less than R (0..1) of its "
            "repeats, and succeeds otherwise even if some repeats failed.",
            default="none",
            parser=p.rate,
            metavar="R",
            outcome=False,
        ),
    )
    report: Path | None = setting(  # JSON traces and transcripts go here
        None,
        Option(
            "path",
            "write one JSON trace per spec run (an invocation trace, docs/how-to/reports.md) and the "
            "transcript of every Claude session into DIR, secrets scrubbed, and the session's "
            "results.json (what `atom results combine` joins across CI shards).",
            default="none",
            metavar="DIR",
            path="dir",
            output=True,
            ini_note="relative to the project's root",
            outcome=False,
        ),
    )
    html: Path | None = setting(
        None,
        Option(
            "path",
            "write one self-contained HTML report of the run to PATH (transcripts, checks, "
            "verdicts, diffs; secrets scrubbed); `atom view` opens the last one.",
            metavar="PATH",
            path="file",
            output=True,
            ini_note="relative to the project's root",
            outcome=False,
        ),
    )
    markdown: Path | None = setting(
        None,
        Option(
            "path",
            "write the run's Markdown summary to PATH (outcomes, regressions first, each "
            "failure's first cause, figures, criteria trust; secrets scrubbed); with "
            "$GITHUB_STEP_SUMMARY set, a session appends it there too.",
            metavar="PATH",
            path="file",
            output=True,
            ini_note="relative to the project's root",
            outcome=False,
        ),
    )
    baseline: Path | None = setting(
        None,
        Option(
            "path",
            "compare the run with a baseline (atom baseline save): a regression in outcome, "
            "score, turns, tokens or cost beyond its tolerance fails the run.",
            metavar="PATH",
            path="file",
            ini_note="relative to the project's root",
            outcome=False,
        ),
    )
    #: Per metric, how far it may move the wrong way (`settings.parsers.parse_tolerance`).
    baseline_tolerance: dict[str, float | None] = setting_made(
        dict,
        Option(
            "tolerance",
            "tolerances for --atom-baseline, e.g. 'turns=0.5 tokens=0.2 duration_s=none' "
            "(a spec's own `baseline: {tolerance: …}` wins).",
            default="the built-in tolerances",
            command_line=False,
        ),
    )

    #: The OTLP/HTTP collector each session is sent to as one trace (`reports.otel`).
    otel: str | None = setting(
        None,
        Option(
            "text",
            "send the session to this OpenTelemetry collector (OTLP/HTTP, such as "
            "http://localhost:4318) as one trace: spec, attempt, each Claude Code session, "
            "model call and tool call, with the GenAI conventions' tokens and the cost; secrets "
            "scrubbed (pip install 'pytest-atom[otel]').",
            parser=p.otlp_traces,
            metavar="URL",
            outcome=False,
        ),
    )

    history: str = setting(
        ".atom/history.db",
        Option(
            "text",
            "record each run in this history store (`atom history` reads it): a SQLite file "
            "(relative to the project's root; default .atom/history.db), a team's "
            "postgresql://user@host/db (pip install 'pytest-atom[postgres]'), or none.",
            parser=p.history_store,
            metavar="URL",
            ini_note="a path relative to the project's root, a postgresql:// URL, or none",
            outcome=False,
        ),
    )
    last_failed: bool = setting(
        False,
        Option(
            "flag",
            "run only the items (spec, case, arm; all their repeats) that failed in the last "
            "run the history store holds, as pytest --lf does; with none, run everything.",
            in_ini=False,
            in_config=False,  # a one-off selection, like -k
            outcome=False,
        ),
    )

    #: The outcome cache (`pytest_atom.outcome_cache.cache`): an item whose input digest equals
    #: a stored passing item's is reported from the history store and not run.
    cache: bool = setting(
        False,
        Option(
            "flag",
            "report an item whose inputs (what its run can read: spec and case, workspace, "
            "cassette or script, files the spec names, the code in pytest's process, the "
            "toolchain, environment, outcome settings) equal those of a passing item in the "
            "history store from the store, marked cached, without starting Claude Code; any "
            "changed input runs it (`atom history why SPEC` names it). A recording never is.",
            ini_note="true or false",
            outcome=False,
        ),
    )

    def with_seed(self) -> RunSettings:
        """These settings with a seed: the one set, else a fresh one (the front end prints)."""
        return self if self.seed is not None else replace(self, seed=secrets.randbelow(10**6))

    def runs_under(self, root: Path) -> Path:
        """The runs folder: `runs_dir` (relative to `root`), else `root/.atom/runs`."""
        return root / self.runs_dir if self.runs_dir else root / ".atom" / "runs"

    def spec_paths(self, root: Path) -> list[Path]:
        """`paths`, relative ones under `root`."""
        return [(root / path).resolve() for path in self.paths]

    def output(self, name: str, root: Path) -> Path | None:
        """The path setting `name` (runs_dir, report, html, baseline), relative ones under
        `root`; the runs folder has one even when unset."""
        if name == "runs_dir":
            return self.runs_under(root)
        path: Path | None = getattr(self, name)
        return None if path is None else root / path


#: The parser of each kind of value that has one parser whatever the setting.
_KIND_PARSERS: dict[Kind, p.Parser] = {
    "flag": p.flag,
    "path": p.path,
    "size": p.size,
    "names": p.names,
    "paths": p.spec_paths,
    "tolerance": p.tolerance,
}


def _shown(default: Any) -> str:
    """A field's default as the documentation states it: ``false``, ``none``, ``0.8``."""
    return "false" if default is False else "none" if default in (None, ()) else str(default)


def _rows() -> tuple[Option, ...]:
    """The rows of `RunSettings`' fields, each named for its field, its default and parser
    filled in where the row leaves them to its field and kind."""
    made: list[Field[Any]] = list(fields(RunSettings))
    return tuple(
        replace(
            row,
            name=f.name,
            default=row.default or _shown(f.default),
            parser=row.parser or _KIND_PARSERS.get(row.kind),
        )
        for f in made
        for row in [f.metadata[_ROW]]
    )


#: Every setting's row, in the order of `RunSettings`.
OPTIONS: tuple[Option, ...] = _rows()
#: The rows by setting name.
BY_NAME = {option.name: option for option in OPTIONS}
#: The settings a test may set for itself (a mark, the `atom_settings` fixture); the rest
#: (where runs go, how many stay, how often each spec runs) belong to the whole session.
PER_TEST = tuple(o.name for o in OPTIONS if o.scope == "test")
#: The settings pytest's ini file (``atom_NAME``) and `.atom/config.yaml` (``NAME:``) may set;
#: neither sets rejudge and resume (one-off actions), arms (a selection like ``-k``) or a seed
#: (it reproduces one run; a fixed one would make every run the same sample).
INI_SETTINGS = tuple(o.name for o in OPTIONS if o.in_ini)
CONFIG_SETTINGS = tuple(o.name for o in OPTIONS if o.in_config)
#: The settings whose value can change an item's outcome (`Option.outcome`): the outcome
#: cache's digest holds their values.
OUTCOME_SETTINGS = tuple(o.name for o in OPTIONS if o.outcome)
#: The settings a command line sets (``--atom-NAME``, ``atom run --NAME``).
COMMAND_LINE_SETTINGS = tuple(o.name for o in OPTIONS if o.command_line)


def options_markdown() -> str:
    """The table as a Markdown table (for the documentation site's option reference)."""
    lines = [
        "| pytest option | ini file / `.atom/config.yaml` | `atom run` | type | default | help |",
        "|---|---|---|---|---|---|",
    ]
    for o in OPTIONS:
        flag = f"`{o.pytest_flag}`" if o.command_line else "-"
        ini = " / ".join(
            ([f"`{o.ini_name}`"] if o.in_ini else []) + ([f"`{o.name}:`"] if o.in_config else [])
        )
        run = f"`{o.run_flag}`" if o.command_line else "-"
        kind = " \\| ".join(o.choices) if o.choices else (o.path or o.kind)
        text = o.help.replace("|", "\\|")
        lines.append(f"| {flag} | {ini or '-'} | {run} | {kind} | {o.default} | {text} |")
    return "\n".join(lines) + "\n"
