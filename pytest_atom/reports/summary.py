"""The terminal summary of a session: one row per spec run, fitted to the terminal's width,
with the notes under it. Every line is inert (`pytest_atom.inert`): a node id spells the
spec file's name, a plan the planner's words."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pytest_atom.baseline.compare import summary_cell as baseline_cell
from pytest_atom.cost.usage import ROLES
from pytest_atom.environment import left_out_names_line
from pytest_atom.inert import inert
from pytest_atom.reports.table import table_lines
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.verdict import ADVISORY_WORDS


def _whole(rows: Sequence[SummaryRow], key: str) -> int:
    return sum(int(row.properties.get(key) or 0) for row in rows)


def _listed(row: SummaryRow, key: str) -> list[str]:
    """A property that lists names, ``a, b``, as its names."""
    return [name for name in str(row.properties.get(key) or "").split(", ") if name]


def sandbox_warning_lines(rows: Sequence[SummaryRow]) -> list[str]:
    off = list(dict.fromkeys(row.nodeid for row in rows if not row.sandboxed))
    if not off:
        return []
    many = len(off) > 1
    return [
        inert(
            f"warning: {len(off)} spec{'s' * many} ran {'their agents' if many else 'its agent'} "
            f"without Claude Code's sandbox (`sandbox: false`): {'their' if many else 'its'} commands "
            "could write outside "
            f"the attempt folder and reach the network: {', '.join(off)}"
        )
    ]


def criteria_trust_lines(rows: Sequence[SummaryRow]) -> list[str]:
    """How many criteria gated and were advisory, and why, and which runs' were advisory;
    nothing when no criterion had a calibration floor."""
    judged = [row for row in rows if "atom_criteria_advisory" in row.properties]
    unfloored = _whole(judged, "atom_criteria_unfloored")
    gated = _whole(judged, "atom_criteria_gated")
    advisory = _whole(judged, "atom_criteria_advisory")
    if not judged or unfloored == gated + advisory:
        return []
    reasons = Counter(r for row in judged for r in _listed(row, "atom_criteria_advisory_reasons"))
    why = ", ".join(f"{n} {ADVISORY_WORDS.get(r, r)}" for r, n in sorted(reasons.items()))
    plain = f" ({unfloored} without a calibration floor)" if unfloored else ""
    line = f"criteria: {gated} gated{plain}, {advisory} advisory" + (f" ({why})" if why else "")
    if not advisory:
        return [inert(line)]
    line += ": an advisory verdict fails nothing until `atom calibrate` calibrates its judge"
    where = ", ".join(
        dict.fromkeys(row.nodeid for row in judged if _whole([row], "atom_criteria_advisory"))
    )
    return [inert(line), inert(f"  advisory in: {where}")]


def failed_tries_lines(rows: Sequence[SummaryRow]) -> list[str]:
    """CLI calls that failed and were retried, and how much of the figures they took."""
    tried = [row for row in rows if row.properties.get("atom_failed_tries")]
    if not tried:
        return []
    count = _whole(tried, "atom_failed_tries")
    tokens = _whole(tried, "atom_failed_tries_tokens")
    usd = sum(float(row.properties.get("atom_failed_tries_cost_usd") or 0) for row in tried)
    return [
        inert(
            f"failed tries: {count} CLI call{'s' * (count != 1)} failed and {'were' if count != 1 else 'was'} "
            f"retried ({', '.join(row.nodeid for row in tried)}): {tokens} tokens, ${usd:.4f}, "
            "included in the figures above"
        )
    ]


def environment_lines(rows: Sequence[SummaryRow]) -> list[str]:
    """Once a session: the specs whose failure could be the environment's doing, and the
    caller variables their runs left out, by name, with how to pass one."""
    suspects = [row for row in rows if row.properties.get("atom_environment")]
    if not suspects:
        return []
    names = sorted({n for row in suspects for n in _listed(row, "atom_left_out_variables")})
    which = "; ".join(f"{row.nodeid} (`{row.properties['atom_environment']}`)" for row in suspects)
    many = len(suspects) > 1
    line = (
        f"environment: {len(suspects)} spec{'s' * many} failed on what may be the run's "
        f"environment: {which}"
    )
    listed = left_out_names_line(names)
    return [inert(line + (f". {listed}" if listed else ""))]


def _role_cell(row: SummaryRow, role: str) -> str:
    used = row.roles.get(role)
    if used is None or not used.tokens:
        return "-"
    recalled = role in _listed(row, "atom_recalled")
    # Tokens only: Claude Code's price of a scripted or replayed session was not spent.
    return str(used.tokens) + (RECALLED if recalled else "")


#: The widest summary a terminal gets (a narrower one's own width); wider rows wrap.
SUMMARY_WIDTH = 100


def summary_width(is_terminal: bool, columns: int) -> int | None:
    """The width the summary must fit: a terminal's (at most `SUMMARY_WIDTH`); None (a line
    a spec) for no terminal. ``COLUMNS`` alone makes no terminal: pytest-xdist's workers set
    ``COLUMNS=80`` for every process they start."""
    return min(columns, SUMMARY_WIDTH) if is_terminal else None


def summary_table(rows: Sequence[SummaryRow], width: int | None = None) -> list[str]:
    """The terminal summary: a line per spec run; when wider than `width`, the name and
    outcome on a line and the figures under it (`width` None: never)."""
    roles = _summary_roles(rows)
    compared = any(row.baseline is not None for row in rows)  # --atom-baseline: its deltas
    plans = [inert(f"{row.nodeid}: {row.plan}") for row in rows if row.plan]
    lines = _aligned(_table(rows, roles, compared), compared, left=2)
    if width is None:
        return lines + plans
    plans = [_clip_right(plan, width) for plan in plans]  # the whole plan is in HTML
    if max(map(len, lines)) <= width:
        return lines + plans
    return _stacked(rows, roles, compared, width) + plans


def summary_cells(rows: Sequence[SummaryRow]) -> list[tuple[str, ...]]:
    """The summary table's header, then a row of cells a run, unpadded (for Markdown)."""
    compared = any(row.baseline is not None for row in rows)
    table = _table(rows, _summary_roles(rows), compared)
    return [tuple(cell.strip() for cell in row) for row in table]


def _summary_roles(rows: Sequence[SummaryRow]) -> tuple[str, ...]:
    """Tokens per role, once any spec used more than its executor."""
    used = [r for r in ROLES if any(_role_cell(row, r) != "-" for row in rows)]
    return tuple(used) if set(used) - {"executor"} else ()


def _table(
    rows: Sequence[SummaryRow], roles: tuple[str, ...], compared: bool
) -> list[tuple[str, ...]]:
    """The header and a row of cells a spec run, a recalled role's word hung right of its
    column's figures: ``4570 recalled`` over ``13`` would put the 13 under "recalled"."""
    table = [_summary_header(roles, compared)] + [_summary_cells(r, roles, compared) for r in rows]
    first = len(table[0]) - len(roles) - 3 - compared  # the role columns: before the costs
    hung = {
        i
        for i in range(first, first + len(roles))
        if any(row[i].endswith(RECALLED) for row in table[1:])
    }
    pad = " " * len(RECALLED)
    return [
        tuple(c + pad if i in hung and not c.endswith(RECALLED) else c for i, c in enumerate(row))
        for row in table
    ]


#: What a role's cell says when a replay recalled that session's answer.
RECALLED = " recalled"


def _summary_header(roles: tuple[str, ...], compared: bool) -> tuple[str, ...]:
    header = ("spec", "outcome", "score", "attempts", "iter", "tokens", *roles)
    return header + ("cost $", "list $", "time s") + (("vs baseline",) if compared else ())


def _outcome_cell(row: SummaryRow) -> str:
    return row.outcome.summary_label + (" (cached)" if row.cached else "")


def cached_lines(rows: Sequence[SummaryRow]) -> list[str]:
    """With --atom-cache: how many runs the store's outcomes stood in for, so a green run
    that ran nothing never passes for one that ran everything."""
    cached = [row for row in rows if row.cached]
    if not cached:
        return []
    return [
        f"cached: {len(cached)} of {len(rows)} spec run{'s' * (len(rows) != 1)} reported from "
        "the history store (--atom-cache): their inputs equal a stored run's, so no Claude "
        "Code started for them; `atom history why SPEC` names what would run one again"
    ]


def _summary_cells(row: SummaryRow, roles: tuple[str, ...], compared: bool) -> tuple[str, ...]:
    return (
        inert(row.nodeid),
        _outcome_cell(row),  # what stopped a failed run; the rest: its report
        "-" if row.score is None else f"{row.score:.2f}",
        "" if row.attempts is None else str(row.attempts),
        "" if row.iterations is None else str(row.iterations),
        # Every session's, as HTML, JUnit (atom_tokens) and the trace say; the role
        # columns that follow break it down.
        "" if row.tokens is None else str(row.tokens),
        *(_role_cell(row, role) for role in roles),
        f"{row.cost_usd:.4f}",  # spent
        # Claude Code's price of the sessions, paid or not: never added to the spend.
        f"{row.list_price_usd:.4f}" if row.list_price_usd else "-",
        f"{row.duration_s:.1f}",
    ) + ((baseline_cell(row.properties),) if compared else ())


def _aligned(table: Sequence[tuple[str, ...]], compared: bool, *, left: int) -> list[str]:
    """Columns padded: the first `left` (and the baseline's, last) to the left."""
    count = len(table[0])
    header, *rows = table
    last = count - 1 if compared else count
    return table_lines(header, rows, right=range(left, last))


def _stacked(
    rows: Sequence[SummaryRow], roles: tuple[str, ...], compared: bool, width: int
) -> list[str]:
    """The summary for a narrow terminal: per spec its name and outcome, its figures under
    the header's, then its baseline deltas and tokens per role when they do not fit."""
    indent = "    "
    header, *cells = [row[2:] for row in _table(rows, roles, compared)]
    figures = _aligned([header, *cells], compared, left=0)
    more: list[list[str]] = [[] for _ in rows]
    if max(len(indent) + len(line) for line in figures) > width:
        keep = [i for i, name in enumerate(header) if name.rstrip() not in roles]
        figures = _aligned(
            [tuple(row[i] for i in keep) for row in [header, *cells]], compared, left=0
        )
        if compared and max(len(indent) + len(line) for line in figures) > width:
            figures = _aligned(
                [tuple(row[i] for i in keep[:-1]) for row in [header, *cells]], False, left=0
            )
            more = [[_clip_right(f"{indent * 2}vs baseline: {c[-1]}", width)] for c in cells]
        for extra, row in zip(more, rows, strict=True):
            extra += _role_lines(row, roles, indent * 2, width)
    lines = ["spec  outcome", indent + figures[0]]
    for row, line, extra in zip(rows, figures[1:], more, strict=True):
        label = _outcome_cell(row)
        name = _clip_left(inert(row.nodeid), max(width - 2 - len(label), 20))
        lines += [_clip_right(f"{name}  {label}", width), _clip_right(indent + line, width)]
        lines += extra
    return lines


def _role_lines(row: SummaryRow, roles: tuple[str, ...], indent: str, width: int) -> list[str]:
    """``executor 31911, reflector 4563 recalled``, wrapped at `width`."""
    parts = [f"{role} {cell}" for role in roles if (cell := _role_cell(row, role)) != "-"]
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += ", " + part
        else:
            lines.append(_clip_right(indent + part, width))
    return lines


def _clip_left(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[len(text) - width + 1 :]


def _clip_right(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
