"""One token and cost figure per spec and role: the terminal
summary, JUnit, the trace and the HTML report of one run say the same numbers."""

from __future__ import annotations

import json
import re
from xml.etree import ElementTree

import pytest

from pytest_atom.cost.usage import ROLES
from tests.helpers import ShippedRun


def _summary(output: str) -> dict[str, dict[str, str]]:
    """Each spec's summary cells by column, from either layout (one line a spec, or its
    name and outcome, its figures, then its tokens per role), roles included."""
    lines = output.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("spec  "))
    found: dict[str, dict[str, str]] = {}
    if lines[start] != "spec  outcome":
        header = re.split(r"\s{2,}", lines[start])
        for line in lines[start + 1 :]:
            if "::" not in line.split(" ")[0] or "  " not in line:  # past the table (plans)
                break
            cells = re.split(r"\s{2,}", line)
            found[cells[0]] = dict(zip(header, cells, strict=True))
        return found
    header = re.split(r"\s{2,}", lines[start + 1].strip())
    name, figures_next = "", False
    for line in lines[start + 2 :]:
        if figures_next:  # the line after a spec's name: its figures
            found[name] |= dict(zip(header, re.split(r"\s{2,}", line.strip()), strict=True))
            figures_next = False
        elif "::" in line.split(" ")[0] and "  " in line:  # a spec's name and outcome
            name, figures_next = line.rpartition("  ")[0], True
            found[name] = {}
        elif line.startswith("        ") and name:  # tokens per role
            for part in line.strip().split(", "):
                role, tokens, *_ = part.split(" ")
                found[name][role] = tokens
        else:
            break
    return found


@pytest.mark.slow
def test_the_terminal_junit_trace_and_html_say_the_same_figures(shipped_run: ShippedRun) -> None:
    summary = _summary(shipped_run.output)
    junit = ElementTree.parse(shipped_run.junit).getroot()
    page = shipped_run.report.read_text(encoding="utf-8")
    checked = 0
    for case in junit.iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "atom_tokens" not in props:
            continue
        nodeid = next(n for n in summary if n.endswith(f"::{case.get('name')}"))
        stem, spec = nodeid.split("/")[-1].split(".atom.yaml::")
        trace = json.loads((shipped_run.traces / stem / f"{spec}.json").read_text())
        tokens, usd = int(props["atom_tokens"] or 0), float(props["atom_cost_usd"] or 0)
        assert trace["cost"]["tokens"] == tokens, nodeid
        assert int(summary[nodeid]["tokens"]) == tokens, nodeid
        assert float(summary[nodeid]["cost $"]) == pytest.approx(usd, abs=5e-5), nodeid
        assert trace["cost"]["usd"] == pytest.approx(usd, abs=1e-6), nodeid
        assert f'data-sort="{tokens}">{tokens:,}<' in page, nodeid
        by_role = trace["cost"]["by_role"]
        assert sum(r["tokens"] for r in by_role.values()) == tokens, nodeid
        assert set(ROLES) - set(by_role) <= {"user"}, nodeid  # the user: a conversation's
        for role in ROLES:
            used = int(props.get(f"atom_{role}_tokens") or 0)
            assert by_role.get(role, {"tokens": 0})["tokens"] == used, (nodeid, role)
            shown = summary[nodeid].get(role, "-").split(" ")[0]
            assert shown == (str(used) if used else "-"), (nodeid, role, summary[nodeid])
        checked += 1
    assert checked >= 5
