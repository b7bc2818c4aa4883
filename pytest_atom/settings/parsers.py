"""The parsers of settings' values: raw value in (text from an ini file or a command line,
a YAML scalar, click's value), typed value out, or ValueError saying how to fix it, the
same wherever the value was set; and the baseline's tolerances, as settings and a spec's
`tolerance:` write them.
"""

from __future__ import annotations

import importlib.util
import math
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytest_atom.extensions import builtin_names, declared

#: A value's parser: raw value in, typed value out, ValueError with the fix.
Parser = Callable[[Any], Any]


def choice(choices: Iterable[str]) -> Callable[[Any], str]:
    options = tuple(choices)

    def parse(value: Any) -> str:
        if value not in options:
            raise ValueError(f"use one of {', '.join(options)}")
        return str(value)

    return parse


def flag(value: Any) -> bool:
    """A boolean, or the ini file's words for one (true/false, yes/no, 1/0, on/off)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off", ""):
        return False
    raise ValueError("use true or false")


def _number_in(within: Callable[[float], bool], fix: str) -> Callable[[Any], float]:
    """A number `within` a range; a boolean or anything float() refuses is outside every one."""

    def parse(value: Any) -> float:
        try:
            number = math.nan if isinstance(value, bool) else float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not within(number):
            raise ValueError(fix)
        return number

    return parse


threshold = _number_in(lambda n: 0 < n < 1, "use a number between 0 and 1, such as 0.8")
rate = _number_in(lambda n: 0 <= n <= 1, "use a pass rate between 0 and 1, such as 0.8")
#: Cohen's κ (1: a judge agrees with the labels, 0: as by chance).
kappa = _number_in(lambda n: -1 <= n <= 1, "use Cohen's kappa, a number from -1 to 1, such as 0.6")
dollars = _number_in(
    lambda n: math.isfinite(n) and n > 0, "use an amount of US dollars > 0, such as 2.50"
)


def whole(minimum: int, hint: str = "") -> Callable[[Any], int]:
    """A whole number >= `minimum`; `hint` ends the fix (what the smallest one means)."""

    def parse(value: Any) -> int:
        text = str(value).strip()
        if isinstance(value, bool) or not text.isdigit() or int(text) < minimum:
            raise ValueError(f"use a whole number >= {minimum}{hint}")
        return int(text)

    return parse


#: How far each metric may move the wrong way before it is a regression; None: never.
#: score and pass_rate are absolute drops; the others relative rises (0.25 = 25 %).
DEFAULT_TOLERANCE: dict[str, float | None] = {
    "pass_rate": 0.0,
    "score": 0.05,
    "turns": 0.25,
    "tokens": 0.10,
    "cost_usd": 0.10,
    "duration_s": None,  # wall time is noisy: shown, not gated unless asked for
}


def parse_tolerance(text: str) -> dict[str, float | None]:
    """``"turns=0.5, score=0.1, duration_s=0.5, cost_usd=none"`` (the ini option's form)."""
    found: dict[str, float | None] = {}
    for part in re.split(r"[,\s]+", text.strip()):
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep or name not in DEFAULT_TOLERANCE:
            raise ValueError(
                f"{part!r}: write metric=value with metric one of {', '.join(DEFAULT_TOLERANCE)}"
            )
        found[name] = None if value.lower() in ("none", "null", "") else _fraction(name, value)
    return found


def _fraction(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number >= 0:
        raise ValueError(f"tolerance {name}={value!r} must be a number >= 0, or none")
    return number


def format_tolerance(tolerance: Mapping[str, float | None]) -> str:
    """The inverse of parse_tolerance: how a spec's own tolerances travel as a property."""
    return ",".join(f"{k}={'none' if v is None else f'{v:g}'}" for k, v in tolerance.items())


def tolerance(value: Any) -> dict[str, float | None]:
    """Per-metric tolerances: ``turns=0.5 tokens=0.2``, or a mapping of them."""
    if isinstance(value, Mapping):
        value = " ".join(f"{k}={v}" for k, v in value.items())
    return parse_tolerance(str(value))


def text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("use a non-empty string")
    return value.strip()


def names(value: Any) -> tuple[str, ...]:
    """Arm names: a list, or one string of them separated by commas; each once."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ValueError("use arm names separated by commas, such as with-skill,without-skill")
    found = tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))
    bad = [n for n in found if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", n)]
    if bad or not found:
        raise ValueError(
            f"{', '.join(map(repr, bad)) or 'nothing'} is no arm name: use names as in a spec's `arms:`, "
            "separated by commas"
        )
    return found


_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30}


def size(value: Any) -> int:
    """A size in bytes: ``500MB``, ``2GiB``, ``1_000_000``; 0 means no bound."""
    given = str(value).strip().lower().replace("_", "").replace(" ", "")
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([a-z]*)", given)
    if isinstance(value, bool) or match is None or match[2] not in _UNITS:
        raise ValueError("use a size such as 500MB, 2GB or 800MiB (0: no bound)")
    return int(float(match[1]) * _UNITS[match[2]])


def spec_paths(value: Any) -> tuple[Path, ...]:
    """Spec files or folders: a list, or one space-separated string (pytest's ini style)."""
    items = shlex.split(value) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(
        isinstance(i, (str, Path)) and str(i).strip() for i in items
    ):
        raise ValueError("use a list of spec files or folders, such as [specs]")
    return tuple(Path(str(i).strip()).expanduser() for i in items)


def history_store(value: Any) -> str:
    """Where the run history goes: a SQLite file's path, a URL of an installed backend (the
    ``pytest_atom.stores`` entry-point group, read without importing one), or ``none``."""
    given = text(str(value) if isinstance(value, Path) else value)
    scheme = given.split("://", 1)[0].lower() if "://" in given else ""
    schemes = {p.name for p in declared("pytest_atom.stores")} if scheme else set()
    if scheme and scheme not in schemes:
        others = sorted(schemes - set(builtin_names("pytest_atom.stores")))
        extra = "".join(f", {name}://…" for name in others)
        raise ValueError(
            f"{scheme}:// is not a history store: use a SQLite file's path (default "
            f".atom/history.db), postgresql://user@host/db{extra}, or none"
        )
    return "none" if given.lower() == "none" else given


#: What ``--atom-otel`` needs beyond pytest-atom's own dependencies (the ``otel`` extra).
OTEL_MODULES = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")


def otlp_traces(value: Any) -> str:
    """An OTLP/HTTP collector's traces URL (``http(s)://host:port`` gets ``/v1/traces``);
    refused where the ``otel`` extra is not installed: before any spec runs, not after."""
    given = text(value)
    parts = urlsplit(given)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("use an OTLP/HTTP collector's URL, such as http://localhost:4318")
    missing = [name for name in OTEL_MODULES if not _importable(name)]
    if missing:
        raise ValueError(
            f"sending traces needs {', '.join(missing)}: pip install 'pytest-atom[otel]'"
        )
    return given if parts.path.strip("/") else given.rstrip("/") + "/v1/traces"


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def path(value: Any) -> Path:
    """One path, ``~`` expanded."""
    return Path(text(str(value) if isinstance(value, Path) else value)).expanduser()
