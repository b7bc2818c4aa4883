"""Report formats: one `ReportFormat` protocol, one module per format, found through the
``pytest_atom.report_formats`` entry-point group (`reports.format.report_formats`) and kept
apart by an import-linter contract.

Each registered format renders a real run: a result built from stream-json lines shaped like
the CLI's (fast), and the passing scenario of tests/judge_helpers.py, run once per session
through the real CLI with a script (slow). What a format renders is exactly what its module's
own functions give, which the other report tests pin byte for byte.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pickle
import pkgutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

import pytest_atom.reports
from pytest_atom.reports.format import ReportFormat, builtin_formats
from pytest_atom.reports.html import HTML, spec_view
from pytest_atom.reports.json_trace import JSON_TRACE
from pytest_atom.reports.junit import JUNIT_PROPERTIES
from pytest_atom.reports.markdown import MARKDOWN, Beside, first_cause, summary_markdown
from pytest_atom.reports.otel import spec_spans
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.text import TEXT, failure_report
from pytest_atom.reports.trace import build_trace
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import SpecResult
from tests.helpers import VALIDATOR
from tests.html_helpers import assistant, result_for, tool_result
from tests.judge_helpers import kept

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
CONTRACT = "Report formats are independent"


def format_modules() -> dict[str, list[str]]:
    """Each module of `pytest_atom.reports` that defines a format, with the names of the
    `ReportFormat` objects of its own classes that it holds (found by the protocol, not by
    the registry, so a format left out of the entry-point group shows)."""
    found: dict[str, list[str]] = {}
    for info in pkgutil.iter_modules(pytest_atom.reports.__path__, "pytest_atom.reports."):
        module = importlib.import_module(info.name)
        names = [
            name
            for name, value in vars(module).items()
            if isinstance(value, ReportFormat)
            and not isinstance(value, type)
            and type(value).__module__ == info.name
        ]
        if names:
            found[info.name] = names
    return found


def independent_modules() -> list[str]:
    """The modules pyproject.toml's report-format independence contract keeps apart."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    [contract] = [c for c in contracts if c["name"] == CONTRACT]
    assert contract["type"] == "independence"
    modules: list[str] = contract["modules"]
    return modules


def test_the_registry_lists_exactly_the_format_modules_each_with_one_format() -> None:
    modules = format_modules()
    registered = [type(f).__module__ for f in builtin_formats()]
    assert sorted(registered) == sorted(modules)  # each format module, and nothing else
    assert all(len(names) == 1 for names in modules.values()), modules
    assert [f.name for f in builtin_formats()] == [
        "html",
        "json-trace",
        "junit-properties",
        "markdown",
        "otel",
        "text",
    ]


def test_the_independence_contract_keeps_exactly_the_registered_formats_apart() -> None:
    assert sorted(independent_modules()) == sorted(type(f).__module__ for f in builtin_formats())


def imports_of(module: str) -> set[str]:
    """Every module `module` imports, at load, in a function or for the type checker only."""
    path = Path(importlib.import_module(module).__file__ or "")
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_no_format_module_imports_another() -> None:
    """What lint-imports checks (it follows chains too), read here from each module's own
    imports, so the rule holds wherever the tests run."""
    modules = set(independent_modules())
    assert {name: imports_of(name) & modules for name in modules} == {
        name: set() for name in modules
    }
    # The registry imports no format: it finds them through the entry-point group.
    assert not imports_of("pytest_atom.reports.format") & modules


def rendered_by_own_functions(result: SpecResult, repeat: int | None) -> dict[str, Any]:
    """What each format's module gave for a run before the protocol: its own functions."""
    trace = [("atom_trace", "traces/t.json")] if result.trace is not None else []
    return {
        "text": failure_report(result),
        "junit-properties": [*trace, *result_properties(result).items()],
        "json-trace": build_trace(result, repeat=repeat),
        "html": spec_view(result, repeat=repeat),
        "markdown": summary_markdown(
            [SummaryRow.of(result.spec.name, result_properties(result), result.outcome)],
            Beside(causes={result.spec.name: first_cause(result)}),
        ),
        "otel": spec_spans(result, repeat=repeat),
    }


def built_run(tmp_path: Path) -> SpecResult:
    """A failed one-attempt run from the CLI's stream-json lines: a Bash call that failed,
    a text turn, a failed check; its trace written under traces/ (a relative path)."""
    result = result_for(
        tmp_path,
        assistant(
            "m1", {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls /x"}}
        ),
        tool_result("t1", "ls: cannot access '/x': No such file or directory", is_error=True),
        assistant("m2", {"type": "text", "text": "Done. EXIT_LOOP_NOW"}),
        check_passed=False,
    )
    return dataclasses.replace(result, trace=Path("traces/t.json"))


@pytest.mark.parametrize("report_format", builtin_formats(), ids=lambda f: f.name)
@pytest.mark.parametrize("repeat", [None, 2])
def test_every_registered_format_renders_a_run_built_from_real_values_as_its_module_does(
    report_format: ReportFormat[object], repeat: int | None, tmp_path: Path
) -> None:
    result = built_run(tmp_path)
    expected = rendered_by_own_functions(result, repeat)[report_format.name]
    assert report_format.render(result, repeat=repeat) == expected


def test_what_each_format_renders_of_a_failed_run(tmp_path: Path) -> None:
    result = built_run(tmp_path)
    text = TEXT.render(result)
    assert text.startswith("atom spec 'demo' failed (")
    assert "    FAIL file_exists hello.txt (line 8): hello.txt exists" in text
    assert "    Bash `ls /x`: ls: cannot access '/x': No such file or directory" in text
    pairs = JUNIT_PROPERTIES.render(result)
    assert pairs[0] == ("atom_trace", "traces/t.json")  # where the trace is, first
    assert ("atom_decision", "fail") in pairs and ("atom_source", "scripted") in pairs
    trace = JSON_TRACE.render(result, repeat=2)
    VALIDATOR.validate(trace)
    assert trace["state"] == "failed"
    assert (
        trace["children"][0]["sessions"][0]["transcript"]
        == "demo.r2.transcripts/a01-executor-1.jsonl"
    )
    view = HTML.render(result)
    assert view["properties"] == dict(pairs[1:]) and view["trace"]["state"] == "failed"
    summary = MARKDOWN.render(result)
    assert summary.startswith("### pytest-atom: 1 failed\n")
    assert "| `demo` | failed | `1 of 1 check failed: file_exists hello.txt: hello.txt " in summary


def test_a_result_reports_with_the_renderer_its_maker_handed_it(tmp_path: Path) -> None:
    """No import fills a renderer in: a result made without one says how to render it,
    though the text format is loaded; one made with the text format's keeps it through
    `dataclasses.replace` and a pickle (what xdist and the shared scenarios do)."""
    bare = built_run(tmp_path)
    with pytest.raises(RuntimeError, match=r"made without a renderer: .*TEXT\.render\(result\)"):
        bare.report()
    made = dataclasses.replace(bare, renderer=TEXT.render)
    assert made.report() == failure_report(bare)
    assert dataclasses.replace(made, warnings=["w"]).report() == failure_report(
        dataclasses.replace(bare, warnings=["w"])
    )
    assert pickle.loads(pickle.dumps(made)).report() == made.report()
    assert made == bare  # the renderer is how it reads, not what the run was


@pytest.mark.slow
@pytest.mark.parametrize("report_format", builtin_formats(), ids=lambda f: f.name)
def test_every_registered_format_renders_a_real_scripted_run(
    report_format: ReportFormat[object], passing_run: Path
) -> None:
    """The passing scenario: the real CLI, a scripted executor and reflector."""
    result, _ = kept(passing_run, "passing")
    expected = rendered_by_own_functions(result, None)[report_format.name]
    assert report_format.render(result) == expected
    assert result.report() == TEXT.render(result)  # run_spec handed it the text format
