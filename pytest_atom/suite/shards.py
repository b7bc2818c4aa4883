"""A shard's results file, and the shards of a CI matrix combined into one run.

pytest-split gives each job of a CI matrix its share of the specs, so each job's summary,
baseline gate and HTML report see only that share. With ``--atom-report DIR`` a session
also writes ``DIR/results.json`` (`SHARD_RESULTS`): every run's row, its HTML view (built
where the spec ran: a later job has neither its run folder nor its workspace) and what
failed outside a spec run. `combine` joins the shards' files into the rows one unsharded
run would have had.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_atom.baseline.compare import BaselineGate, read_results, write_results
from pytest_atom.baseline.measure import (
    arm_lines,
    case_lines,
    conversation_lines,
    repeat_lines,
)
from pytest_atom.baseline.triggers import trigger_lines
from pytest_atom.errors import BaselineError
from pytest_atom.reports.summary import (
    criteria_trust_lines,
    environment_lines,
    failed_tries_lines,
    sandbox_warning_lines,
    summary_table,
)
from pytest_atom.results.rows import SummaryRow, spec_key
from pytest_atom.results.thresholds import RepeatGates

#: A shard's results file, in its ``--atom-report`` folder.
SHARD_RESULTS = "results.json"
#: The report format whose views a results file keeps, which ``atom results combine`` renders.
VIEWS_OF = "html"
_REPEAT = re.compile(r"\[r(\d+)\]$")
_BASELINE_PROPERTY = re.compile(r"^atom_baseline(_(?!tolerance$)\w+)?$")


@dataclass(frozen=True)
class ShardResults:
    """What one shard wrote, or several combined: the spec runs and what else failed."""

    sources: tuple[Path, ...]
    rows: tuple[SummaryRow, ...]
    views: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    failures: Mapping[str, str] = field(default_factory=dict)  # specs that could not run: why
    other_failures: int = 0  # failed tests that are no spec run (a Python test beside them)


def write_shard(
    path: Path,
    rows: Iterable[SummaryRow],
    views: Mapping[str, Mapping[str, Any] | None],
    *,
    failures: Mapping[str, str],
    other_failures: int,
    history: Mapping[str, Any] | None = None,
) -> Path:
    """Write a session's shard results file (scrubbed), with `history` its history run."""
    extra: dict[str, Any] = {
        "failures": dict(sorted(failures.items())),
        "other_failures": other_failures,
    }
    if history:
        extra["history"] = dict(history)
    return write_results(rows, path, views=views, extra=extra)


def read_shard(path: Path) -> ShardResults:
    """A shard's results: `path` is its ``--atom-report`` folder or the file itself (a
    plain results file, ``last-run.json``, reads too, without views)."""
    file = path / SHARD_RESULTS if path.is_dir() else path
    if path.is_dir() and not file.is_file():
        raise BaselineError(
            f"{path} holds no {SHARD_RESULTS}: run each shard with "
            f"`pytest --atom --atom-report {path}` and combine those folders"
        )
    rows = read_results(file)
    data = json.loads(file.read_text(encoding="utf-8"))
    views = {r["nodeid"]: r.get("view") for r in data["results"] if "view" in r}
    failures = data.get("failures") or {}
    return ShardResults(
        (file,), tuple(rows), views, dict(failures), int(data.get("other_failures") or 0)
    )


def _order(nodeid: str) -> tuple[str, int]:
    """By spec, then its repeats by number (r2 before r10)."""
    repeat = _REPEAT.search(nodeid)
    return spec_key(nodeid), int(repeat[1]) if repeat else 0


def combine(shards: Sequence[ShardResults]) -> ShardResults:
    """The shards as one run. A node id in two shards is an error naming both files: a
    spec counted twice would bias every pass rate and the gate."""
    seen: dict[str, Path] = {}
    for shard in shards:
        for nodeid in [*(row.nodeid for row in shard.rows), *shard.failures]:
            if nodeid in seen:
                where = (
                    f"twice in {seen[nodeid]}"
                    if seen[nodeid] == shard.sources[0]
                    else f"in {seen[nodeid]} and in {shard.sources[0]}"
                )
                raise BaselineError(
                    f"{nodeid} ran {where}: each spec must run in exactly one shard "
                    "(every job the same --splits N, each its own --group); give each "
                    "shard's folder once"
                )
            seen[nodeid] = shard.sources[0]
    rows = sorted((row for s in shards for row in s.rows), key=lambda row: _order(row.nodeid))
    return ShardResults(
        tuple(source for s in shards for source in s.sources),
        tuple(rows),
        {k: v for s in shards for k, v in s.views.items()},
        dict(sorted((k, v) for s in shards for k, v in s.failures.items())),
        sum(s.other_failures for s in shards),
    )


def gated_rows(rows: Iterable[SummaryRow], gate: BaselineGate | None) -> list[SummaryRow]:
    """The rows as one unsharded run with this gate would have them: a shard's own
    comparisons (a shard run with ``--atom-baseline``) are dropped, the gate's added."""
    found = []
    for row in rows:
        props = {k: v for k, v in row.properties.items() if not _BASELINE_PROPERTY.match(k)}
        if gate is not None:
            # The outcome as the shard finally saw it, as `finish` compares it.
            outcome = row.outcome.properties()
            props.update(gate.item_properties(row.nodeid, {**props, **outcome}, own={}))
        found.append(SummaryRow.of(row.nodeid, props, row.outcome))
    return found


def rate_lines(rows: Sequence[SummaryRow], gates: RepeatGates) -> list[str] | None:
    """The pass rates over repeats, each with its threshold met or not; None when the run
    neither repeats nor holds a spec to a count or a minimum."""
    if gates.min_pass_rate is None and not any(
        spec_key(row.nodeid) != row.nodeid or row.pass_at_least is not None for row in rows
    ):
        return None
    return repeat_lines(rows, gates.min_pass_rate, gates.pass_at_least)


def summary_lines(
    rows: list[SummaryRow],
    failures: Iterable[str],
    gate: BaselineGate | None,
    gates: RepeatGates,
    width: int | None,
) -> list[str]:
    """The combined run's summary, as the unsharded run prints it (`width`: the table's)."""
    lines = summary_table(rows, width)
    lines += [f"{label}: {row.nodeid}: {text}" for row in rows for label, text in row.notes()]
    lines += [
        f"error: {nodeid}: pytest-atom could not run it (see the shard's log)"
        for nodeid in failures
    ]
    lines += failed_tries_lines(rows) + environment_lines(rows) + criteria_trust_lines(rows)
    lines += sandbox_warning_lines(rows)
    lines += gate.lines() if gate is not None else []
    return (
        lines
        + (rate_lines(rows, gates) or [])
        + arm_lines(rows)
        + case_lines(rows)
        + conversation_lines(rows)
        + trigger_lines(rows)
    )
