"""What the history store keeps: one `RunRecord` per session, one `ItemRecord` per item.

Records are plain frozen values, the same for every backend and every reader, so none of
them needs a run's typed results. Each field is declared once, with its column (`column`):
its SQL type, the schema version that added it, and how its value is written and read
(`Codec`); the store's statements and migration steps are made from these declarations.

Records never hold a raw transcript: a check's detail and a criterion's reasons are
scrubbed before they are recorded (`history.write`), and tool calls are the tools' names.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import astuple, dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import Any, NamedTuple

from pytest_atom.results.spec_result import CheckRow, CriterionRow


class Codec(NamedTuple):
    """How a field's value becomes a column's (`write`) and back (`read`)."""

    write: Callable[[Any], Any]
    read: Callable[[Any], Any]


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


PLAIN = Codec(lambda v: v, lambda v: v)
#: An absent case or arm is stored as ``''``, so (spec, case, arm) compares and indexes
#: without NULLs.
BLANK = Codec(lambda v: v or "", lambda v: v or None)
FLAG = Codec(int, bool)
NUMBER = Codec(lambda v: v, lambda v: None if v is None else float(v))
#: Times as ISO-8601 UTC text, which sorts as time.
TIME = Codec(lambda v: v.isoformat(timespec="microseconds"), datetime.fromisoformat)
MAPPING = Codec(lambda v: _json(dict(v)), json.loads)
NAMES = Codec(lambda v: _json(list(v)), lambda v: tuple(json.loads(v)))


@dataclass(frozen=True)
class Column:
    """Where a record's field is kept: its column's name and SQL type (the common part of
    SQLite's and PostgreSQL's), the schema version whose step added it, and its `Codec`."""

    name: str
    sql: str
    since: int = 1
    codec: Codec = PLAIN


def column(sql: str, name: str = "", *, since: int = 1, codec: Codec = PLAIN) -> dict[str, Column]:
    """A field's metadata declaring its column (`name`: the field's own when empty); one
    added after the first schema that is NOT NULL needs a DEFAULT, for the rows before it."""
    return {"column": Column(name, sql, since, codec)}


def columns(record: type) -> tuple[tuple[str, Column], ...]:
    """(field name, its named `Column`) of each field of `record`, in order."""
    found = []
    for each in fields(record):
        declared: Column = each.metadata["column"]
        found.append((each.name, replace(declared, name=declared.name or each.name)))
    return tuple(found)


#: What an item is: a ``trial`` (the agent ran and was judged), a ``cached`` outcome (a stored
#: pass reported, nothing ran) or a ``rescore`` (a stored attempt judged again). Only trials
#: enter a series' pass rate, interval, means and trend.
ITEM_KINDS: tuple[str, ...] = ("trial", "cached", "rescore")

#: (spec base name, case, arm, repeat): one item of a run.
ItemKey = tuple[str, str | None, str | None, int | None]
#: (spec base name, case, arm): an item's line through the runs (its repeats together).
SeriesKey = tuple[str, str | None, str | None]


def series_label(series: SeriesKey, repeat: int | None = None) -> str:
    """``base[case][arm]``, as `Spec.name` spells a line, and ``[rN]`` for a `repeat`."""
    spec, case, arm = series
    parts = "".join(f"[{p}]" for p in (case, arm) if p is not None)
    return spec + parts + (f"[r{repeat}]" if repeat is not None else "")


def series_dict(series: SeriesKey) -> dict[str, str | None]:
    """A series as the JSON forms spell it."""
    return dict(zip(("spec", "case", "arm"), series, strict=True))


def new_run_id(started: datetime | None = None) -> str:
    """A run's id: its start time, sortable as text, and a random tail unique across machines."""
    when = (started or datetime.now(UTC)).astimezone(UTC)
    return f"{when:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class RunRecord:
    """One session: when it ran, on which commit, with which versions and settings (only what
    changes an outcome, as JSON). `kind`: ``pytest``, ``atom run``, ``import`` or ``rescore``
    (then `rescore_of` is the run it judged again)."""

    id: str = field(metadata=column("TEXT PRIMARY KEY"))
    started: datetime = field(metadata=column("TEXT NOT NULL", codec=TIME))
    kind: str = field(metadata=column("TEXT NOT NULL"))
    rescore_of: str | None = field(metadata=column("TEXT"))
    commit: str | None = field(metadata=column("TEXT", "git_commit"))
    dirty: bool = field(metadata=column("INTEGER NOT NULL", codec=FLAG))
    atom_version: str = field(metadata=column("TEXT NOT NULL"))
    claude_version: str | None = field(metadata=column("TEXT"))
    settings: Mapping[str, Any] = field(
        default_factory=dict, metadata=column("TEXT NOT NULL", codec=MAPPING)
    )


def _lists(rows: Any) -> list[list[Any]]:
    return [list(astuple(row)) for row in rows]


def _checks(rows: Any) -> tuple[CheckRow, ...]:
    return tuple(CheckRow(str(n), bool(p), str(d)) for n, p, d in rows)


def _criteria(rows: Any) -> tuple[CriterionRow, ...]:
    return tuple(CriterionRow(str(t), float(s), bool(p), str(r)) for t, s, p, r in rows)


#: A check's and a criterion's rows as JSON lists, in their fields' order.
CHECKS = Codec(lambda v: _json(_lists(v)), lambda v: _checks(json.loads(v)))
CRITERIA = Codec(lambda v: _json(_lists(v)), lambda v: _criteria(json.loads(v)))


@dataclass(frozen=True)
class ItemRecord:
    """One item of a run: (spec, case, arm, repeat), its outcome and what it is made of.
    `outcome` is `results.outcome.Outcome.label` lower-cased, as pytest says it. `tokens` and
    `cost_usd` are by role, the dollars at Claude Code's list price; `spent_usd` is what the
    item paid an API (0 scripted, replayed or cached; None: not recorded). `tool_calls` is the
    executor's tool names in call order. `digest` and `digest_parts` are the item's input digest
    (the outcome cache's key) and its parts; None means unknown, never "unchanged"."""

    #: Its run's id ("" until the run is stored: the store writes its run's).
    run_id: str = field(
        metadata=column("TEXT NOT NULL REFERENCES atom_runs (id) ON DELETE CASCADE")
    )
    spec: str = field(metadata=column("TEXT NOT NULL"))
    spec_path: str = field(metadata=column("TEXT NOT NULL"))
    case: str | None = field(metadata=column("TEXT NOT NULL", "spec_case", codec=BLANK))
    arm: str | None = field(metadata=column("TEXT NOT NULL", codec=BLANK))
    repeat: int | None = field(metadata=column("INTEGER", "repeat_no"))
    outcome: str = field(metadata=column("TEXT NOT NULL"))
    kind: str = field(default="trial", metadata=column("TEXT NOT NULL DEFAULT 'trial'", since=3))
    checks: tuple[CheckRow, ...] = field(default=(), metadata=column("TEXT NOT NULL", codec=CHECKS))
    criteria: tuple[CriterionRow, ...] = field(
        default=(), metadata=column("TEXT NOT NULL", codec=CRITERIA)
    )
    tokens: Mapping[str, int] = field(
        default_factory=dict, metadata=column("TEXT NOT NULL", codec=MAPPING)
    )
    cost_usd: Mapping[str, float] = field(
        default_factory=dict, metadata=column("TEXT NOT NULL", codec=MAPPING)
    )
    spent_usd: float | None = field(
        default=None, metadata=column("DOUBLE PRECISION", since=3, codec=NUMBER)
    )
    wall_seconds: float = field(
        default=0.0, metadata=column("DOUBLE PRECISION NOT NULL", codec=NUMBER)
    )
    tool_calls: tuple[str, ...] = field(default=(), metadata=column("TEXT NOT NULL", codec=NAMES))
    digest: str | None = field(default=None, metadata=column("TEXT", since=2))
    digest_parts: Mapping[str, str] = field(
        default_factory=dict, metadata=column("TEXT NOT NULL DEFAULT '{}'", since=2, codec=MAPPING)
    )
    run_folder: str | None = field(default=None, metadata=column("TEXT"))
    #: The outcome's one line (the score against the threshold, the check that failed).
    why: str = field(default="", metadata=column("TEXT NOT NULL"))
    #: The final verdict's score, None when no reflector judged.
    score: float | None = field(default=None, metadata=column("DOUBLE PRECISION", codec=NUMBER))
    #: A conversation's (a spec's `user:`) messages from the user, the prompt included, up to
    #: the user saying it was done: the turns to success of an item that passed. None: no
    #: conversation, or the user never said it was done.
    user_turns: int | None = field(default=None, metadata=column("INTEGER", since=4))

    @property
    def key(self) -> ItemKey:
        return (self.spec, self.case, self.arm, self.repeat)

    @property
    def series(self) -> SeriesKey:
        return (self.spec, self.case, self.arm)

    @property
    def cached(self) -> bool:
        return self.kind == "cached"

    @property
    def trial(self) -> bool:
        """Whether the agent ran and was judged: what pass rates and means count."""
        return self.kind == "trial"

    @property
    def passed(self) -> bool:
        """Whether the agent succeeded (``passed``, or ``xpassed`` against an expectation)."""
        return self.outcome in ("passed", "xpassed")

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens.values())

    @property
    def total_cost(self) -> float:
        """Claude Code's list price of the item's sessions (see `cost.usage.Dollars`)."""
        return sum(self.cost_usd.values())


@dataclass(frozen=True, slots=True)
class ItemFigures:
    """What a listing reads of an item (`Store.figures`), without parsing its rows."""

    run_id: str
    outcome: str
    digest: str | None
    total_tokens: int
    total_cost: float
    wall_seconds: float
    kind: str = "trial"
    spent_usd: float | None = None
    repeat: int | None = None


# --- as JSON: across xdist's process border, and in a session's results.json ------------------


def run_to_dict(run: RunRecord) -> dict[str, Any]:
    """`run` as JSON values."""
    return {**vars(run), "started": run.started.isoformat(), "settings": dict(run.settings)}


def run_from_dict(data: Mapping[str, Any]) -> RunRecord:
    """The run `run_to_dict` wrote; KeyError or ValueError when it is not one."""
    values = {f.name: data[f.name] for f in fields(RunRecord)}
    values["started"] = datetime.fromisoformat(str(data["started"]))
    values["dirty"] = bool(data["dirty"])
    return RunRecord(**values)


def item_to_dict(item: ItemRecord) -> dict[str, Any]:
    """`item` as JSON values."""
    data = dict(vars(item))
    data["checks"] = _lists(item.checks)
    data["criteria"] = _lists(item.criteria)
    data["tool_calls"] = list(item.tool_calls)
    for name in ("tokens", "cost_usd"):
        data[name] = dict(data[name])
    # Pairs, not a mapping: a results file is scrubbed as text, and ``"code dist:x": "sha256:…"``
    # would read as a secret's assignment (a part's value is a hash by construction).
    data["digest_parts"] = [[name, value] for name, value in sorted(item.digest_parts.items())]
    return data


def item_from_dict(data: Mapping[str, Any]) -> ItemRecord:
    """The item `item_to_dict` wrote; KeyError, TypeError or ValueError when it is not."""
    values = {f.name: data[f.name] for f in fields(ItemRecord) if f.name in data}
    if "kind" not in data and data.get("cached"):  # written before items had a kind
        values["kind"] = "cached"
    values["checks"] = _checks(data["checks"])
    values["criteria"] = _criteria(data["criteria"])
    values["tool_calls"] = tuple(str(name) for name in data["tool_calls"])
    parts = data.get("digest_parts") or {}
    values["digest_parts"] = dict(parts.items() if isinstance(parts, Mapping) else parts)
    return ItemRecord(**values)
