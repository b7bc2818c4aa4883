"""What the HTML report shows of the history store: values the store fills
(`pytest_atom.history.view`), so the report never reads the store, nor the store knows
how a page looks; and a spec's trend drawn as an inline SVG (`trend_svg`).
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape


@dataclass(frozen=True)
class TrendPoint:
    """One run of a spec's line: how many of its trials (repeats) passed; cached outcomes
    and rescores are no trials, and a run of nothing else is no point."""

    run_id: str
    started: str  # "2026-11-29 05:59", as the page shows it
    passed: int
    runs: int
    outcome: str  # the outcome of a single item, or "3/5 passed"

    @property
    def rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


@dataclass(frozen=True)
class SpecTrend:
    """A spec's line (spec, case, arm) over its last runs, oldest first."""

    label: str
    points: tuple[TrendPoint, ...]

    @property
    def passed(self) -> int:
        return sum(p.passed for p in self.points)

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.points)


@dataclass(frozen=True)
class ComparisonRow:
    """One line that changed since the previous run (`history.diff.ItemChange`)."""

    label: str
    direction: str  # regressed, improved, changed, added, removed, within noise
    before: str
    after: str
    findings: tuple[str, ...]  # the checks, criteria, tool calls and deltas, one line each


@dataclass(frozen=True)
class HistoryView:
    run_id: str
    #: "<id> (<kind>, <when>)": the earlier run compared with, None: there is none.
    previous: str | None
    rows: tuple[ComparisonRow, ...]
    unchanged: int
    trends: tuple[SpecTrend, ...]
    #: Why there is no comparison (the store is off, could not be read), when there is none.
    note: str = ""
    #: How the earlier run was chosen (`history.query.like_run`), and what differs, a line each.
    paired: str = ""
    settings: tuple[str, ...] = ()


WIDTH, HEIGHT, PAD = 240, 44, 6


def _colour(point: TrendPoint) -> str:
    if point.passed == point.runs and point.runs:
        return "pass"
    return "fail" if point.passed == 0 else "mixed"


def _xy(index: int, count: int, rate: float) -> tuple[float, float]:
    step = (WIDTH - 2 * PAD) / max(count - 1, 1)
    x = PAD + index * step if count > 1 else WIDTH / 2
    return round(x, 1), round(PAD + (1 - rate) * (HEIGHT - 2 * PAD), 1)


def trend_svg(trend: SpecTrend) -> Markup:
    """`trend` as an ``<svg>`` element, in the page with no script and no network: a dot
    per run (green all passed, red none, amber some), joined by a line, each dot titled
    with its run, time and outcome; every text escaped."""
    points = trend.points
    spots = [_xy(n, len(points), p.rate) for n, p in enumerate(points)]
    summary = (
        f"{trend.label}: {trend.passed} of {trend.runs} passed over the last "
        f"{len(points)} run{'s' * (len(points) != 1)}"
    )
    parts = [
        f'<svg class="trend" role="img" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(summary)}</title>",
        f'<line class="axis" x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" '
        f'y2="{HEIGHT - PAD}"/>',
    ]
    if len(spots) > 1:
        line = " ".join(f"{x},{y}" for x, y in spots)
        parts.append(f'<polyline class="rate" fill="none" points="{line}"/>')
    for point, (x, y) in zip(points, spots, strict=True):
        said = f"{point.run_id} · {point.started} · {point.outcome}"
        parts.append(
            f'<circle class="run {_colour(point)}" cx="{x}" cy="{y}" r="3.5" '
            f'data-run="{escape(point.run_id)}"><title>{escape(said)}</title></circle>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
