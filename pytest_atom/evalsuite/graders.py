"""The grader kinds of `claude plugin eval` that the spec format has no check for.

A regex, a ``file_exists`` glob and a ``tool_order`` whose ends match a call's input map onto
the kinds below (the rest onto trajectory checks). Each reads like the CLI's own grader
(Claude Code 2.1.331) and names the grader in its summary.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.checks.trajectory import Trajectory
from pytest_atom.diffs import agent_files
from pytest_atom.evalsuite.case_schema import js_regex
from pytest_atom.files import shown_text
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check
from pytest_atom.words import shorten


def _regex_result(check: Check, text: str, where: str) -> CheckResult:
    p = check.params
    pattern = js_regex(p["pattern"], p["flags"])
    found = pattern.findall(text)
    mode = p["match"]
    if mode == "contains":
        passed, summary = bool(found), f"/{p['pattern']}/ found in {where}"
        summary = summary if passed else f"/{p['pattern']}/ not found in {where}"
    elif mode == "not_contains":
        passed = not found
        summary = f"/{p['pattern']}/ {'absent from' if passed else 'found in'} {where}"
    else:
        wanted = int(mode.removeprefix("count:"))
        passed, summary = len(found) == wanted, f"{len(found)} matches in {where}, {wanted} wanted"
    shown = shorten(Scrubber().scrub(text), 2000)
    return CheckResult(check, passed, f"grader {p['grader']}: {summary}", shown)


def _trace(run: Trajectory) -> str:
    """The run as the CLI's trace: one JSON line per tool call, then the last message."""
    rows = [
        json.dumps({"tool": c.name, "input": c.input, "output": c.result}, ensure_ascii=False)
        for c in run.calls
    ]
    return "\n".join([*rows, run.final_message or ""])


def eval_regex(check: Check, run: Trajectory) -> CheckResult:
    """A regex grader over the last message or the trace."""
    if check.params["target"] == "last_message":
        return _regex_result(check, run.final_message or "", "the last message")
    return _regex_result(check, _trace(run), "the trace")


def eval_file_regex(check: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
    """A regex grader over one file, or over the files the agent wrote (path, then text): a
    case starts from an empty folder, so each file there is one the agent wrote."""
    target = check.params["target"]
    if isinstance(target, dict):
        text = shown_text(workspace, target["path"])
        if text is None:
            return CheckResult(
                check,
                False,
                f"grader {check.params['grader']}: {target['path']} does not exist",
                f"files written: {', '.join(agent_files(workspace)) or 'none'}",
            )
        return _regex_result(check, text, target["path"])
    parts = []
    for rel in agent_files(workspace):
        parts += [rel, shown_text(workspace, rel) or ""]
    return _regex_result(check, "\n".join(parts), "the files written")


def _glob(pattern: str) -> re.Pattern[str]:
    """The CLI's glob: ``**/`` any folders, ``*`` within a folder, ``?`` one character."""
    out, i = "^", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + ".", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + "$")


def eval_file_exists(check: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
    """A file_exists grader: a file the agent wrote matches the glob (`exists: false`: none)."""
    p = check.params
    files = agent_files(workspace)
    hits = [f for f in files if _glob(p["path"]).match(f)]
    passed = bool(hits) == p["exists"]
    state = f"{p['path']} {'exists' if hits else 'is missing'}"
    wanted = "" if passed else f", expected {'present' if p['exists'] else 'absent'}"
    return CheckResult(
        check,
        passed,
        f"grader {p['grader']}: {state}{wanted}",
        f"files written: {', '.join(files) or 'none'}",
    )


def eval_tool_order(check: Check, run: Trajectory) -> CheckResult:
    """A tool_order grader whose ends match a call's input too: `before`'s first call first."""
    p = check.params

    def first(end: Mapping[str, Any]) -> int:
        pattern = end.get("input_match")
        return next(
            (
                n
                for n, c in enumerate(run.calls)
                if c.name == end["tool"]
                and (pattern is None or re.search(pattern, json.dumps(c.input)))
            ),
            -1,
        )

    before, after = first(p["before"]), first(p["after"])
    if before < 0 or after < 0:
        never = p["before"]["tool"] if before < 0 else p["after"]["tool"]
        return CheckResult(check, False, f"grader {p['grader']}: {never} never called", run.tools())
    passed = before < after
    said = "precedes" if passed else "does not precede"
    summary = f"grader {p['grader']}: {p['before']['tool']} {said} {p['after']['tool']}"
    return CheckResult(check, passed, summary, run.tools())


def register_checks(registry: CheckRegistry) -> CheckRegistry:
    """The grader kinds the spec format has no check for, added to `registry` (once)."""
    for kind, fn in (("eval_file_regex", eval_file_regex), ("eval_file_exists", eval_file_exists)):
        if kind not in registry:
            registry.register(kind, fn)
    for kind, run_fn in (("eval_regex", eval_regex), ("eval_tool_order", eval_tool_order)):
        if kind not in registry:
            registry.register_trajectory(kind, run_fn)
    return registry
