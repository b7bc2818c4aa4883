"""One settings model for every front end: `RunSettings`, resolved in one place.

A setting can come from several places; the first that sets it wins:

1. the command line (``--atom-record-mode``, or ``atom run --record-mode``);
2. ``@pytest.mark.atom(record_mode=...)`` on a test;
3. the ``atom_settings`` fixture (override it in a conftest);
4. the ini file (``atom_record_mode = ...`` in pytest's settings): still read, but a
   pytest without pytest-atom warns "Unknown config option" about such a key (an error
   under ``filterwarnings = error``), so `ini_note` says how to move it;
5. ``.atom/config.yaml`` (``record_mode: ...``, ``paths: [specs]``), where `atom init`
   writes them: a file only pytest-atom reads, so a pytest without it never meets them;
6. the default below.

Every layer gives raw values (text from an ini file, YAML scalars, click's parsed values);
each is checked by the same parser, and an error names the layer and the key it came
from. A spec's own keys (``reflector: {threshold: ...}``) are part of the test, like an
assertion's expected value, and win over `threshold`, which is the default for the specs
that state none.
"""

from __future__ import annotations

import math
import re
import secrets
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_atom.errors import SettingsError
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
from pytest_atom.settings.options import OPTIONS

DEFAULT_KEEP_RUNS = 10
#: Run folders of a project, all specs together (`keep_runs_size`): ten runs of a
#: JavaScript project with its node_modules (185 MB each) fit; the newest run of each
#: spec and a session's failures stay whatever the bound.
DEFAULT_KEEP_RUNS_SIZE = 2 * 10**9
#: The user's set-up cache (`setup_cache_size`), all projects together: a dozen or so
#: virtualenvs or node_modules trees, each key's newest; the least recently used go first.
DEFAULT_SETUP_CACHE_SIZE = 5 * 10**9


@dataclass(frozen=True)
class RunSettings:
    """How specs run, whatever front end runs them."""

    record_mode: RecordMode = "none"
    match: MatchMode = DEFAULT_MATCH
    strict_version: bool = False
    rejudge: bool = False
    #: A replay's reflector and planner whose whole input is unchanged: their recorded
    #: answer (``recall``), or a session started anyway (``rerun``).
    judge: JudgeMode = "recall"
    upstream: str | None = None
    threshold: float = 0.8
    runs_dir: Path | None = None  # None: .atom/runs under the project's root
    keep_runs: int = DEFAULT_KEEP_RUNS
    #: After a session, the oldest run folders go until all of them fit in this many bytes
    #: (0 or None: no bound); the newest of each spec and this session's failures stay.
    keep_runs_size: int | None = DEFAULT_KEEP_RUNS_SIZE
    #: How a spec's set-up result is cached and restored (run.setup_cache), and the bound
    #: of the user's cache after a session (0 or None: none).
    setup_cache: SetupCacheMode = "copy"
    setup_cache_size: int | None = DEFAULT_SETUP_CACHE_SIZE
    #: The spec files and folders `pytest --atom` (and `atom validate`) take when none are
    #: named; relative ones are the project root's.
    paths: tuple[Path, ...] = ()
    repeat: int = 1
    #: A multi-step spec's earlier run folder to continue from its latest committed step.
    resume: Path | None = None
    #: Outputs and gates of the whole run. A relative path from a file (the ini file,
    #: `.atom/config.yaml`) is the project root's; a front end makes its command line's
    #: absolute, from where the command ran.
    report: Path | None = None  # JSON traces and transcripts go here
    html: Path | None = None  # the HTML report
    baseline: Path | None = None  # compare the run with this baseline (atom baseline save)
    #: Per metric, how far it may move the wrong way (`baseline.compare.parse_tolerance`).
    baseline_tolerance: dict[str, float | None] = field(default_factory=dict, hash=False)
    min_pass_rate: float | None = None  # the pass rates, not single runs, gate the run
    #: What a recording session may spend in all, in dollars (pytest_atom.cost.spend).
    max_cost_usd: float | None = None
    #: `--atom-arms`: the arms of specs with `arms:` that run (empty: every arm).
    arms: tuple[str, ...] = ()
    #: What draws a stochastic script's `choices:` (with the spec, arm and repeat); None
    #: until `with_seed` gives the run a fresh one.
    seed: int | None = None

    def with_seed(self) -> RunSettings:
        """These settings with a seed: the one set, else a fresh one (which the front end
        prints, so the run can be reproduced with it)."""
        return self if self.seed is not None else replace(self, seed=secrets.randbelow(10**6))

    def runs_under(self, root: Path) -> Path:
        """The runs folder: `runs_dir` (relative to `root`), else `root/.atom/runs`."""
        return root / self.runs_dir if self.runs_dir else root / ".atom" / "runs"

    def spec_paths(self, root: Path) -> list[Path]:
        """`paths`, relative ones under `root`."""
        return [(root / p).resolve() for p in self.paths]

    def output(self, name: str, root: Path) -> Path | None:
        """The path setting `name` (report, html, baseline), relative ones under `root`."""
        path: Path | None = getattr(self, name)
        return None if path is None else root / path


def _choice(choices: Iterable[str]) -> Callable[[Any], str]:
    options = tuple(choices)

    def parse(value: Any) -> str:
        if value not in options:
            raise ValueError(f"use one of {', '.join(options)}")
        return str(value)

    return parse


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off", ""):
        return False
    raise ValueError("use true or false")


def _threshold(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not 0 < number < 1:
        raise ValueError("use a number between 0 and 1, such as 0.8")
    return number


def _whole(minimum: int, hint: str) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        text = str(value).strip()
        if isinstance(value, bool) or not text.isdigit() or int(text) < minimum:
            raise ValueError(f"use a whole number >= {minimum}{hint}")
        return int(text)

    return parse


def _rate(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not 0 <= number <= 1:
        raise ValueError("use a pass rate between 0 and 1, such as 0.8")
    return number


def _dollars(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not (math.isfinite(number) and number > 0):
        raise ValueError("use an amount of US dollars > 0, such as 2.50")
    return number


def _tolerance(value: Any) -> dict[str, float | None]:
    from pytest_atom.settings.tolerance import parse_tolerance

    if isinstance(value, Mapping):
        value = " ".join(f"{k}={v}" for k, v in value.items())
    return parse_tolerance(str(value))


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("use a non-empty string")
    return value.strip()


def _names(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ValueError("use arm names separated by commas, such as with-skill,without-skill")
    names = tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", n)]
    if bad or not names:
        raise ValueError(
            f"{', '.join(map(repr, bad)) or 'nothing'} is no arm name: use names as in a spec's `arms:`, "
            "separated by commas"
        )
    return names


_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30}


def _size(value: Any) -> int:
    """A size in bytes: ``500MB``, ``2GiB``, ``1_000_000``; 0 means no bound."""
    text = str(value).strip().lower().replace("_", "").replace(" ", "")
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([a-z]*)", text)
    if isinstance(value, bool) or match is None or match[2] not in _UNITS:
        raise ValueError("use a size such as 500MB, 2GB or 800MiB (0: no bound)")
    return int(float(match[1]) * _UNITS[match[2]])


def _spec_paths(value: Any) -> tuple[Path, ...]:
    """Spec files or folders: a list, or one string of paths separated by spaces (the ini
    style of pytest's `paths` options)."""
    items = shlex.split(value) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(
        isinstance(i, (str, Path)) and str(i).strip() for i in items
    ):
        raise ValueError("use a list of spec files or folders, such as [specs]")
    return tuple(Path(str(i).strip()).expanduser() for i in items)


def _path(value: Any) -> Path:
    return Path(_text(str(value) if isinstance(value, Path) else value)).expanduser()


#: Each setting's parser: raw value in, typed value out, ValueError with the fix.
PARSERS: dict[str, Callable[[Any], Any]] = {
    "record_mode": _choice(RECORD_MODES),
    "match": _choice(MATCH_MODES),
    "strict_version": _flag,
    "rejudge": _flag,
    "judge": _choice(JUDGE_MODES),
    "upstream": _text,
    "threshold": _threshold,
    "runs_dir": _path,
    "keep_runs": _whole(0, " (0 keeps every run folder)"),
    "keep_runs_size": _size,
    "setup_cache": _choice(SETUP_CACHE_MODES),
    "setup_cache_size": _size,
    "paths": _spec_paths,
    "repeat": _whole(1, ""),
    "resume": _path,
    "arms": _names,
    "seed": _whole(0, ", such as the seed an earlier run printed"),
    "report": _path,
    "html": _path,
    "baseline": _path,
    "baseline_tolerance": _tolerance,
    "min_pass_rate": _rate,
    "max_cost_usd": _dollars,
}
#: The settings a file (ini or `.atom/config.yaml`) may set, from the option table
#: (`pytest_atom.settings.options`); rejudge and resume are one-off actions, arms a selection
#: like ``-k``, and a seed reproduces one run (a fixed one would make every run the same
#: sample).
FILE_SETTINGS = tuple(option.name for option in OPTIONS if option.in_files)
#: The settings a command line sets (``--atom-NAME``, ``atom run --NAME``).
COMMAND_LINE_SETTINGS = tuple(option.name for option in OPTIONS if option.command_line)


def from_here(values: Mapping[str, Any], here: Path) -> dict[str, Any]:
    """A command line's `values`, its paths made absolute from `here`, the folder the
    command ran in: ``--atom-runs-dir out`` from a subfolder means that subfolder's ``out``
    under pytest and under ``atom run`` alike (a file's paths are the project root's)."""
    out = dict(values)
    for option in OPTIONS:
        given = out.get(option.name)
        if option.path and option.command_line and given:
            out[option.name] = (here / Path(str(given)).expanduser()).resolve()
    return out


@dataclass(frozen=True)
class Layer:
    """Raw values from one place, and how to name that place in an error."""

    source: str  # e.g. "the ini file", ".atom/config.yaml", "@pytest.mark.atom"
    values: Mapping[str, Any]
    key: Callable[[str], str] = str  # how the place spells a setting's name

    def describe(self, name: str) -> str:
        return f"{self.key(name)} in {self.source}"


def parse_setting(name: str, value: Any, where: str) -> Any:
    """One raw value, checked; `where` names its place for the error."""
    if name not in PARSERS:
        raise SettingsError(f"unknown setting {name!r} in {where}; known: {', '.join(PARSERS)}")
    try:
        return PARSERS[name](value)
    except ValueError as exc:
        raise SettingsError(f"{where} = {value!r}: {exc}") from None


def ini_note(keys: Iterable[str], where: str) -> str | None:
    """The note for pytest-atom keys found in pytest's own ini file (`where`): a pytest
    without pytest-atom installed warns "Unknown config option" about each. None: none."""
    found = sorted(k for k in keys if k.startswith("atom_") and k[5:] in FILE_SETTINGS)
    if not found:
        return None
    moved = ", ".join(f"{k[5:]}:" for k in found)
    return (
        f"pytest-atom: {', '.join(found)} in {where} would make a pytest without pytest-atom "
        f"warn 'Unknown config option' (an error under filterwarnings = error): move "
        f"{'it' if len(found) == 1 else 'them'} to .atom/config.yaml as {moved}"
    )


def resolve(layers: Iterable[Layer]) -> RunSettings:
    """RunSettings from `layers`, strongest first; unset (None or "") values are skipped."""
    chosen: dict[str, Any] = {}
    for layer in layers:
        for name, value in layer.values.items():
            if name in chosen or value is None or value == "" or value == []:
                continue
            chosen[name] = parse_setting(name, value, layer.describe(name))
    return RunSettings(**chosen)
