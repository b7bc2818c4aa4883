"""The pytest plugin's entry point: options, ini settings, the marker and the fixtures.

It is loaded into every pytest run of every project that installs pytest-atom, so it
imports no part of the harness: without ``--atom`` a run pays for this module alone.
With ``--atom``, `pytest_configure` registers `pytest_atom.pytest.session.AtomSession`, which
collects specs and runs them; the fixtures import what they need when a test asks.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_atom.model import workspaces
from pytest_atom.model.modes import JUDGE_MODES, MATCH_MODES, RECORD_MODES
from pytest_atom.model.settings import PARSERS
from pytest_atom.paths import SPEC_SUFFIX, display_path

if TYPE_CHECKING:
    from pytest_atom.pytest.fixture import AtomFixture


def _setting(name: str) -> Any:
    """An option's type: the setting's own parser (`pytest_atom.model.settings`), so a value means
    and is checked the same on the command line, in the ini file and in the config."""

    def parse(text: str) -> Any:
        try:
            return PARSERS[name](text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{exc}, not {text!r}") from None

    return parse


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_atom import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Every option defaults to None ("unset"): `pytest_atom.model.settings` decides what wins."""
    group = parser.getgroup("atom", "pytest-atom: Claude Code agent task specs")
    add = group.addoption
    add(
        "--atom",
        action="store_true",
        dest="atom",
        default=False,
        help="collect *.atom.yaml specs and run each through the real Claude Code CLI.",
    )
    add(
        "--atom-record-mode",
        dest="atom_record_mode",
        default=None,
        choices=RECORD_MODES,
        help="none (default): replay cassettes, never reach the network; once: record specs "
        "with no cassette; new_episodes: record what does not match; all: record everything "
        "anew; refresh: replay with this Claude Code and rewrite the cassette's requests "
        "(no tokens).",
    )
    add(
        "--atom-match",
        dest="atom_match",
        default=None,
        choices=MATCH_MODES,
        help="conversation (default): a recorded request matches when the conversation is "
        "the same, whatever Claude Code wraps it in; structural: tool-result text aside too; "
        "strict: the whole request body.",
    )
    add(
        "--atom-upstream",
        dest="atom_upstream",
        default=None,
        metavar="URL",
        help="where recording forwards to (default: a scripted spec's own script, else "
        "$ANTHROPIC_BASE_URL, else the Anthropic API).",
    )
    add(
        "--atom-strict-version",
        dest="atom_strict_version",
        action="store_true",
        default=None,
        help="fail a replay whose cassette was recorded with another Claude Code version.",
    )
    add(
        "--atom-rejudge",
        dest="atom_rejudge",
        action="store_true",
        default=None,
        help="replay the agent's sessions and record the reflector's anew (after changing "
        "accept: or criteria:), replacing only the reflector's part of each cassette.",
    )
    add(
        "--atom-judge",
        dest="atom_judge",
        default=None,
        choices=JUDGE_MODES,
        help="recall (default): a replay takes the recorded verdict (and plan) without "
        "starting the reflector (planner) when its whole input is unchanged: its request and "
        "the folder it reads; rerun: start it anyway.",
    )
    add(
        "--atom-threshold",
        dest="atom_threshold",
        default=None,
        metavar="SCORE",
        type=_setting("threshold"),
        help="reflector score a spec must exceed to pass, unless the spec sets its own "
        "(default 0.8).",
    )
    add(
        "--atom-max-cost-usd",
        dest="atom_max_cost_usd",
        default=None,
        metavar="USD",
        type=_setting("max_cost_usd"),
        help="what a recording session may spend in all (at Claude Code's prices, as the "
        "answers arrive): once reached, no new Claude Code call starts, the running ones are "
        "stopped, the rest of the specs are skipped and pytest exits 2. Estimate first with "
        "`atom cassette cost`.",
    )
    add(
        "--atom-runs-dir",
        dest="atom_runs_dir",
        default=None,
        metavar="DIR",
        help="where each spec run gets its isolated folder (default: .atom/runs under rootdir).",
    )
    add(
        "--atom-resume",
        dest="atom_resume",
        default=None,
        metavar="RUN_DIR",
        help="continue a multi-step spec's interrupted run in RUN_DIR from its latest "
        "committed step (specs whose runs RUN_DIR is not run afresh).",
    )
    add(
        "--atom-keep-runs",
        dest="atom_keep_runs",
        type=_setting("keep_runs"),
        default=None,
        metavar="N",
        help="after the session, keep the newest N run folders of each spec, and every "
        "failed run of this session (default 10; 0 keeps all).",
    )
    add(
        "--atom-keep-runs-size",
        dest="atom_keep_runs_size",
        type=_setting("keep_runs_size"),
        default=None,
        metavar="SIZE",
        help="after the session, also delete the oldest run folders until all fit in SIZE "
        "(such as 500MB); the newest of each spec and this session's failures stay.",
    )
    add(
        "--atom-repeat",
        dest="atom_repeat",
        type=_setting("repeat"),
        default=None,
        metavar="N",
        help="run each spec N times and report its pass rate (Wilson 95 %% interval), "
        "pass@k and pass^k, and its mean score and turns with their intervals.",
    )
    add(
        "--atom-seed",
        dest="atom_seed",
        type=_setting("seed"),
        default=None,
        metavar="N",
        help="draw the choices of stochastic scripts (a turn's `choices:`) from N, with the "
        "spec and the repeat: the same N plays the same choices (default: a fresh seed, "
        "printed in the header).",
    )
    add(
        "--atom-arms",
        dest="atom_arms",
        type=_setting("arms"),
        default=None,
        metavar="NAME,...",
        help="run only these arms of specs with `arms:` (default: every arm); specs "
        "without arms run as usual.",
    )
    add(
        "--atom-min-pass-rate",
        dest="atom_min_pass_rate",
        default=None,
        metavar="R",
        type=_setting("min_pass_rate"),
        help="gate on pass rates: the run fails when a spec passes less than R (0..1) of its "
        "repeats, and succeeds otherwise even if some repeats failed.",
    )
    add(
        "--atom-report",
        dest="atom_report",
        default=None,
        metavar="DIR",
        help="write one JSON trace per spec run (seed 003's invocation-trace shape) and the "
        "transcript of every Claude session into DIR, secrets scrubbed, and the session's "
        "results.json (what `atom results combine` joins across CI shards).",
    )
    add(
        "--atom-html",
        dest="atom_html",
        default=None,
        metavar="PATH",
        help="write one self-contained HTML report of the run to PATH (transcripts, checks, "
        "verdicts, diffs; secrets scrubbed); `atom view` opens the last one.",
    )
    add(
        "--atom-baseline",
        dest="atom_baseline",
        default=None,
        metavar="PATH",
        help="compare the run with a baseline (atom baseline save): a regression in outcome, "
        "score, turns, tokens or cost beyond its tolerance fails the run.",
    )
    for name, help_text in _INI_SETTINGS.items():
        parser.addini(f"atom_{name}", help_text, default="")
    parser.addini(
        "atom_paths",
        "spec paths collected by `pytest --atom` when none are given (better: `paths:` in "
        ".atom/config.yaml, which a pytest without pytest-atom never reads).",
        type="paths",
        default=[],
    )


#: Run settings an ini file may set; each is the default for its command-line option.
_INI_SETTINGS = {
    "record_mode": "default for --atom-record-mode.",
    "match": "default for --atom-match.",
    "upstream": "default for --atom-upstream.",
    "strict_version": "default for --atom-strict-version (true or false).",
    "judge": "default for --atom-judge (recall or rerun).",
    "threshold": "default for --atom-threshold (a spec's own `reflector: {threshold}` wins).",
    "runs_dir": "default for --atom-runs-dir.",
    "keep_runs": "default for --atom-keep-runs.",
    "keep_runs_size": "default for --atom-keep-runs-size.",
    "repeat": "default for --atom-repeat.",
    "min_pass_rate": "default for --atom-min-pass-rate.",
    "max_cost_usd": "default for --atom-max-cost-usd (US dollars).",
    "report": "default for --atom-report (relative to rootdir).",
    "html": "default for --atom-html (relative to rootdir).",
    "baseline": "default for --atom-baseline (relative to rootdir).",
    "baseline_tolerance": "tolerances for --atom-baseline, e.g. 'turns=0.5 tokens=0.2 "
    "duration_s=none' (a spec's own `baseline: {tolerance: …}` wins).",
}


def pytest_configure(config: pytest.Config) -> None:
    workspaces.forget()
    config.addinivalue_line(
        "markers",
        "atom(**settings): pytest-atom settings for this test (record_mode, match, "
        "upstream, strict_version, rejudge, judge, threshold); a spec item carries it bare.",
    )
    if not config.option.atom:
        return
    from pytest_atom.pytest.session import AtomSession

    session = AtomSession(config)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        harness = session.harness
        config.args += [str(p) for p in harness.settings.spec_paths(harness.root)]
    config.pluginmanager.register(session, "atom-session")
    html, report_dir = session.harness.html, session.harness.report_dir
    if html is not None or report_dir is not None:
        from pytest_atom.pytest.html_plugin import HtmlReport  # Jinja2 only when asked for
        from pytest_atom.reports.shards import SHARD_RESULTS

        results = None if report_dir is None else report_dir / SHARD_RESULTS
        config.pluginmanager.register(
            HtmlReport(config, html, session.harness.runs_dir, results), "atom-html"
        )


@pytest.fixture
def atom_settings() -> dict[str, Any]:
    """pytest-atom settings for the tests (and specs) below this conftest: override it.

    Keys as in `pytest_atom.RunSettings` (``record_mode``, ``match``, ``threshold``, ...).
    The command line and ``@pytest.mark.atom(...)`` win over it; it wins over the ini
    file and ``.atom/config.yaml``.
    """
    return {}


@pytest.fixture
def atom(request: pytest.FixtureRequest, atom_settings: dict[str, Any]) -> AtomFixture:
    """Run atom specs from a Python test: `atom.run("x.atom.yaml")` or `atom.run(prompt=...)`."""
    from pytest_atom.pytest.fixture import AtomFixture

    return AtomFixture(request, atom_settings)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Never collect a spec's workspace, with or without ``--atom``: its tests are fixture
    data, often failing on purpose, and a copy of the project's tests would abort plain
    pytest with "import file mismatch". A folder costs one cached `os.scandir` of each
    parent up to the rootdir; YAML is read only where spec files are."""
    if collection_path.name.endswith((".py", SPEC_SUFFIX)) or not collection_path.is_dir():
        return None
    if workspaces.is_spec_workspace(collection_path, config.rootpath):
        return True
    return None


_SPECS_SEEN = pytest.StashKey[list[Path]]()
_HINTED = pytest.StashKey[bool]()


def pytest_report_header(config: pytest.Config) -> str | None:
    """Once a session, how to move pytest-atom keys out of pytest's own ini file: a line,
    not a warning, which ``filterwarnings = error`` would turn into an abort."""
    from pytest_atom.model.settings import FILE_SETTINGS, ini_note

    if config.inipath is None:
        return None
    keys = [f"atom_{name}" for name in FILE_SETTINGS]
    return ini_note([k for k in keys if config.getini(k)], display_path(config.inipath))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> None:
    """Without ``--atom`` a spec is no test, and pytest says only "not found": add a hint.

    Only for a spec named on the command line (or, in `pytest_collection_finish`, for
    specs met while nothing else was collected): a project whose plain `pytest` run passes
    specs by on purpose gets no hint. The hint is one line on the terminal, never a
    warning: ``filterwarnings = error`` would make a warning a traceback.
    """
    config = parent.config
    if config.option.atom or not file_path.name.endswith(SPEC_SUFFIX):
        return
    file_path = file_path.resolve()
    config.stash.setdefault(_SPECS_SEEN, []).append(file_path)
    if config.args_source == pytest.Config.ArgsSource.ARGS and file_path in _named_files(config):
        _hint(config, file_path, f"{file_path.name} is a pytest-atom spec")


def pytest_collection_finish(session: pytest.Session) -> None:
    seen = session.config.stash.get(_SPECS_SEEN, [])
    if seen and not session.items and session.config.args_source == pytest.Config.ArgsSource.ARGS:
        named = _named_files(session.config)
        # Only specs inside a folder that was named: pytest also lists the folders on its
        # way to a named file, and their specs were never asked for.
        unnamed = [p for p in seen if p not in named and any(n in p.parents for n in named)]
        if unnamed:
            _hint(session.config, unnamed[0], f"{len(unnamed)} pytest-atom spec file(s) were found")


def _named_files(config: pytest.Config) -> set[Path]:
    base = config.invocation_params.dir
    return {(base / arg.split("::")[0]).resolve() for arg in config.args}


def _hint(config: pytest.Config, location: Path, what: str) -> None:
    """One line, once a session, on the terminal (stderr without pytest's terminal)."""
    if config.stash.get(_HINTED, False):
        return
    config.stash[_HINTED] = True
    line = f"hint: {what}, but specs run only with --atom: pytest --atom {display_path(location)}"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(line, yellow=True, bold=True)
    else:
        sys.stderr.write(line + "\n")
