"""A spec's trend as an inline SVG: its pass rate over its last runs, drawn in the page.

No script and no network: the SVG is markup in the HTML file, one dot per run (green all
passed, red none, amber some of its repeats), joined by a line, each dot titled with its
run, time and outcome (a browser shows the title on hover). Every text is escaped.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from pytest_atom.reports.history_view import SpecTrend, TrendPoint

__all__ = ["HEIGHT", "WIDTH", "trend_svg"]

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
    """The trend of `trend` as an ``<svg>`` element (its `label` is named in its title)."""
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
