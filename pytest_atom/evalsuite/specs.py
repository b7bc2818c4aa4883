"""A `claude plugin eval` case as specs, run like any other.

A case maps onto a spec: its prompt, one iteration, one attempt, ``limits: {max_turns}``,
``timeout: timeout_seconds``, ``claude: {allowed_tools, plugins}``; deterministic graders are
`accept:` checks (the trajectory checks for ``tool_used``/``tool_order``, the kinds registered
for the rest in `pytest_atom.evalsuite.graders`), ``llm`` and ``baseline`` graders are the
reflector's criteria, judged by 3 votes each and gating one by one
(``reflector: {votes: 3, gate: criteria}``); its arms are `arms:` and its runs are repeats.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from pytest_atom.errors import SpecError
from pytest_atom.evalsuite.suites import ATOM_DIR, WITH, WITHOUT, EvalCase, Grader
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import parse_specs

#: Judge votes per llm and baseline grader, as the CLI gives them (a 2-of-3 majority passes).
JUDGE_VOTES = 3


#: The baseline trajectory shown to the judge: its first and last lines, as the CLI elides it.
_BASELINE_LINES = 12


def case_specs(case: EvalCase, check_kinds: Sequence[str]) -> list[Spec]:
    """The case's specs: one per arm (``name[with-plugin]``, ``name[without-plugin]``) when
    it belongs to a plugin, else one; each with its script and cassette in `atom_dir`."""
    base = case.plugin if case.plugin is not None else case.folder
    # Read as if the spec sat at `base` (never written): the plugin is its folder, ".".
    virtual = base / f"{ATOM_DIR}-eval-{case.name}.atom.yaml"
    text = yaml.safe_dump(_spec_data(case), sort_keys=False, allow_unicode=True)
    try:
        specs = parse_specs(virtual, text, check_kinds=check_kinds)
    except SpecError as err:  # the case passed validation: a value the spec format refuses
        raise SpecError(err.message, case.file, line=case.line) from None
    return [
        dataclasses.replace(
            spec,
            path=case.file,
            line=case.line,
            script=case.script(spec.arm),
            cassette=case.cassette(spec.arm),
        )
        for spec in specs
    ]


def _spec_data(case: EvalCase) -> dict[str, Any]:
    """The spec a case stands for, as the mapping a ``.atom.yaml`` would hold."""
    execution = case.execution
    data: dict[str, Any] = {
        "name": case.name,
        "description": case.description or f"claude plugin eval case {case.name}",
        "prompt": case.prompt,
        "max_iterations": 1,
        "attempts": 1,
        "timeout": int(execution.get("timeout_seconds", 300)),
        "limits": {"max_turns": int(execution.get("max_turns", 10))},
        "accept": [_check(g) for g in case.graders if _check(g) is not None],
        "criteria": [_criterion(g) for g in case.graders if g.kind in ("llm", "baseline")],
        # The CLI's judge: 3 votes per llm grader, passed on a majority; each grader passes
        # or fails on its own (its default --threshold 1.0), never a score over them all.
        "reflector": {"votes": JUDGE_VOTES, "gate": "criteria"},
    }
    if claude := _claude(case):
        data["claude"] = claude
    if execution.get("model"):
        data["model"] = str(execution["model"])
    if execution.get("env"):
        data["env"] = {k: str(v).replace("$", "$$") for k, v in execution["env"].items()}
    if case.plugin is not None:
        data["arms"] = _arms(case)
        data["reference_arm"] = WITHOUT  # the plugin's arm is measured against none
    if not data["criteria"]:
        del data["criteria"]
    return data


def _claude(case: EvalCase) -> dict[str, Any]:
    """The spec's ``claude:``: the case's tool lists, system prompt and plugin."""
    execution = case.execution
    claude: dict[str, Any] = {}
    if execution.get("allowed_tools"):
        claude["allowed_tools"] = list(execution["allowed_tools"])
    args: list[str] = []
    if execution.get("disallowed_tools"):
        args += ["--disallowedTools", ",".join(execution["disallowed_tools"])]
    if execution.get("append_system_prompt"):
        args += ["--append-system-prompt", str(execution["append_system_prompt"])]
    if args:
        claude["args"] = args
    if case.plugin is not None:
        claude["plugins"] = ["."]
    return claude


def _arms(case: EvalCase) -> dict[str, Any]:
    """With the plugin and without it; the without arm drops the with-only graders."""
    both = [g for g in case.graders if not g.with_only]
    return {
        WITH: {},
        WITHOUT: {
            "claude": {"plugins": []},
            "accept": [c for g in both if (c := _check(g)) is not None],
            "criteria": [_criterion(g) for g in both if g.kind in ("llm", "baseline")],
        },
    }


def _check(grader: Grader) -> dict[str, Any] | None:
    """A deterministic grader as an `accept:` entry; None for the judged ones."""
    p = grader.params
    if grader.kind == "tool_used":
        return {
            "tool_used": {
                "name": p["tool"],
                **({"input": p["input_match"]} if p.get("input_match") else {}),
                "min": p.get("min", 1),
                "max": p.get("max"),
            }
        }
    if grader.kind == "tool_order":
        ends = [_tool(p["before"]), _tool(p["after"])]
        if not any(e["input_match"] for e in ends):
            return {"tool_order": [e["tool"] for e in ends]}
        return {"eval_tool_order": {"grader": grader.name, "before": ends[0], "after": ends[1]}}
    if grader.kind == "regex":
        kind = "eval_regex" if p["target"] in ("last_message", "trace") else "eval_file_regex"
        keys = ("target", "pattern", "flags", "match")
        return {kind: {"grader": grader.name, **{k: p[k] for k in keys}}}
    if grader.kind == "file_exists":
        return {
            "eval_file_exists": {"grader": grader.name, "path": p["path"], "exists": p["exists"]}
        }
    return None


def _tool(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"tool": value, "input_match": None}
    return {"tool": value["tool"], "input_match": value.get("input_match")}


def _criterion(grader: Grader) -> str:
    """A judged grader as a criterion named ``grader NAME: …``, so an unmet one says which."""
    p = grader.params
    if grader.kind == "llm":
        focus = p["focus"]
        on = {"last_message": "the agent's last message", "trace": "what the agent did"}.get(
            focus if isinstance(focus, str) else "",
            f"the file {focus['path']}" if isinstance(focus, dict) else "the files it wrote",
        )
        return f"grader {grader.name}: {str(p['criteria']).strip()} (judged on {on})"
    rows = Path(p["baseline_path"]).read_text(encoding="utf-8").splitlines()
    rows = [r for r in rows if r.strip()]
    if len(rows) > 2 * _BASELINE_LINES:
        hidden = len(rows) - 2 * _BASELINE_LINES
        rows = [*rows[:_BASELINE_LINES], f"[… {hidden} lines elided …]", *rows[-_BASELINE_LINES:]]
    shown = "\n".join(f"    {r}" for r in rows)
    return (
        f"grader {grader.name}: at least as well as the baseline trajectory below: "
        f"{str(p['criteria']).strip()}\n"
        f"  Baseline ({p['baseline_file']}):\n{shown}"
    )
