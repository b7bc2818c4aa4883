"""The terminal summary fits a 100-column terminal (issue 29, papercut 4): a spec whose
row is wider takes two lines (three with tokens per role); the full table is in HTML."""

from __future__ import annotations

from pytest_atom.model.usage import ROLES
from pytest_atom.reports.summary import SUMMARY_WIDTH, summary_table
from tests.helpers import summary_row

LONG = "examples/a-project-with-a-long-folder-name/specs/release_notes_from_commits.atom.yaml"


def _figures(**more: object) -> dict[str, object]:
    props: dict[str, object] = {
        "atom_score": 0.87,
        "atom_attempts": 3,
        "atom_iterations": 12,
        "atom_agent_tokens": 1_234_567,
        "atom_cost_usd": 12.345678,
        "atom_recorded_cost_usd": 3.2,
        "atom_duration_s": 1234.5,
        "atom_recalled": "reflector",
        "atom_baseline": "regression",
        "atom_baseline_tokens": 123456,
        "atom_baseline_turns": 12,
        "atom_limit_exceeded": "exceeded max_turns: 3 > 2",
        "atom_plan": "plan: " + ", ".join(f"a-rather-long-step-name-{n}" for n in range(9)),
    }
    for role in ROLES:
        props[f"atom_{role}_tokens"], props[f"atom_{role}_cost_usd"] = 987_654, 1.2345
    return props | more


def test_a_summary_of_long_names_and_every_role_fits_100_columns() -> None:
    rows = [
        summary_row(
            f"{LONG}::write-release-notes-for-every-merged-pull-request[arm-{n}][r{n}]",
            label,
            _figures(),
        )
        for n, label in enumerate(("passed", "failed", "xfailed", "upstream error"), 1)
    ]
    lines = summary_table(rows, SUMMARY_WIDTH)
    assert max(len(line) for line in lines) <= SUMMARY_WIDTH
    # nothing is lost: each spec's name (its end, where it is cut), figures and roles
    for n, label in enumerate(("passed", "failed", "xfailed", "upstream error"), 1):
        assert any(line.endswith(f"[arm-{n}][r{n}]  {label}") for line in lines)
    text = "\n".join(lines)
    for role in ROLES:
        assert f"{role} 987654" in text
    assert text.count("1234567") == 4 and text.count("12.3457") == 4
    assert text.count("regression turns +12 tokens +123,456") == 4
    # the figures line up under their header
    header = next(line for line in lines if "time s" in line)
    column = header.index("time s") + len("time s")
    assert all(line[column - 6 : column] == "1234.5" for line in lines if "1234.5" in line)


def test_a_summary_that_fits_stays_one_line_a_spec() -> None:
    rows = [summary_row("a.atom.yaml::a", "passed", {"atom_agent_tokens": 10})]
    assert len(summary_table(rows, SUMMARY_WIDTH)) == 2


def test_without_roles_the_figures_share_the_second_line() -> None:
    rows = [summary_row(f"{LONG}::x", "passed", {"atom_agent_tokens": 10, "atom_duration_s": 1})]
    [spec, header, name, figures] = summary_table(rows, SUMMARY_WIDTH)
    assert (spec, name) == ("spec  outcome", f"{LONG}::x  passed")
    assert header.split() == [
        "score",
        "attempts",
        "iter",
        "tokens",
        "cost",
        "$",
        "rec",
        "$",
        "time",
        "s",
    ]
    assert figures.split() == ["-", "10", "0.0000", "-", "1.0"]


def test_a_terminal_gets_its_own_width_at_most_100_and_a_log_one_line_a_spec() -> None:
    from pytest_atom.reports.summary import summary_width

    assert summary_width(True, 80) == 80
    assert summary_width(True, 240) == SUMMARY_WIDTH
    assert summary_width(False, 80) is None  # a CI log or a file: one line a spec
    rows = [summary_row(f"{LONG}::x", "passed", {"atom_agent_tokens": 10})]
    assert len(summary_table(rows, None)) == 2 and len(summary_table(rows, 80)) == 4
    assert max(len(line) for line in summary_table(rows, 80)) <= 80
