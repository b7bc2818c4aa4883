"""``command: RUN`` or ``{run, exit_code, output, stdout, timeout, unsandboxed, reason}``: a
shell command, run in the workspace inside the agent's sandbox, exits as expected and prints
what it should."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from pytest_atom.checks.evidence import tail
from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.params import from_value, object_schema, param, to_params
from pytest_atom.checks.shell import CURRENT, run_shell, run_shell_split
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check

if TYPE_CHECKING:
    from pytest_atom.agents.claude_code.srt import ProcessSandbox

#: Lines of an expected-vs-actual stdout diff kept in evidence: reports show 20 lines of it.
DIFF_LINES = 14


@dataclass(frozen=True)
class Params:
    run: str = param(
        minLength=1,
        description="Shell command, run in the workspace, in the agent's sandbox (writes in the attempt folder and sandbox.write, network to sandbox.network, reads the run folder, the system and the toolchains).",
    )
    exit_code: int = param(default=0)
    output: str | None = param(
        optional=True,
        nullable=True,
        description="Python regex searched anywhere in stdout and stderr together (re.search with re.MULTILINE, not anchored: '1..15' also matches a longer output); anchor it with ^ and $, or use stdout.",
    )
    stdout: str | None = param(
        optional=True,
        nullable=True,
        omit=True,
        description="The exact stdout expected (stderr apart), compared after removing trailing newlines on both sides; a mismatch shows a unified diff.",
    )
    timeout: float = param(default=120, exclusiveMinimum=0)
    unsandboxed: bool = param(
        default=False,
        omit=True,
        description="Run the command outside the agent's sandbox, with the caller's file system and network (it still gets the run's environment). It runs what the agent wrote, so it needs a reason; atom validate and atom cassette check name it.",
    )
    reason: str | None = param(
        optional=True,
        omit=True,
        minLength=1,
        description="Why the command must reach beyond the sandbox; required with unsandboxed: true.",
    )


class Command(BuiltinKind):
    name = "command"
    schema: Mapping[str, Any] = {
        "oneOf": [{"type": "string", "minLength": 1}, object_schema(Params)],
    }

    def build(self, entry: Entry, value: str | dict[str, Any]) -> dict[str, Any]:
        value = {"run": value} if isinstance(value, str) else value
        p = from_value(Params, value)
        output = None if p.output is None else entry.regex(p.output, "output")
        unsandboxed = _unsandboxed(entry, value)
        return to_params(
            replace(
                p,
                exit_code=int(p.exit_code),
                output=output,
                timeout=float(p.timeout),
                reason=p.reason if unsandboxed else None,
            )
        )

    def describe(self, params: Mapping[str, Any]) -> str:
        p = params
        output = f" and prints /{p['output']}/" if p.get("output") is not None else ""
        if p.get("stdout") is not None:
            exact = json.dumps(p["stdout"].rstrip("\n"), ensure_ascii=False)
            exact = exact if len(exact) <= 40 else exact[:38] + '…"'
            output += f" and prints exactly {exact}"
        way_out = " (unsandboxed)" if p.get("unsandboxed") else ""
        return f"command `{p['run']}` exits {p['exit_code']}{output}{way_out}"

    def confined(self, params: Mapping[str, Any]) -> bool:
        return not params.get("unsandboxed")

    def run(self, check: Check, scene: Scene) -> CheckResult:
        p = check.params
        run, expected, timeout = p["run"], p["exit_code"], float(p["timeout"])
        exact = p.get("stdout")
        sandbox: ProcessSandbox | Literal["current"] | None = (
            None if p.get("unsandboxed") else CURRENT
        )
        workspace, env = scene.workspace, scene.env
        if exact is None:
            code, output = run_shell(run, workspace, env, timeout, sandbox=sandbox)
            stdout = stderr = ""
        else:  # stdout compared on its own, so stderr's warnings cannot spoil it
            code, stdout, stderr = run_shell_split(run, workspace, env, timeout, sandbox=sandbox)
            output = stdout + stderr
        evidence = f"$ {run}\n{tail(output)}"
        if code is None:
            return CheckResult(check, False, f"`{run}` timed out after {timeout:g}s", evidence)
        evidence += f"\n[exit code {code}]"
        if code != expected:
            return CheckResult(
                check, False, f"`{run}` exited {code}, expected {expected}", evidence
            )
        if p.get("output") is not None and not re.search(p["output"], output, re.MULTILINE):
            return CheckResult(
                check,
                False,
                f"`{run}` exited {code} but its output does not match /{p['output']}/",
                evidence,
            )
        if exact is not None and exact.rstrip("\n") != stdout.rstrip("\n"):
            summary, diff = stdout_diff(exact, stdout)
            more = f"\n[stderr]\n{tail(stderr, 3)}" if stderr.strip() else ""
            return CheckResult(
                check,
                False,
                f"`{run}` exited {code} but {summary}",
                f"$ {run}\n{diff}{more}\n[exit code {code}]",
            )
        return CheckResult(check, True, f"`{run}` exited {code}", evidence)


KIND = Command()


def _unsandboxed(entry: Entry, value: dict[str, Any]) -> bool:
    """``unsandboxed: true`` and its ``reason:``, both or neither: every way out is explained."""
    unsandboxed, reason = bool(value.get("unsandboxed")), value.get("reason")
    if unsandboxed and reason is None:
        raise entry.error(
            f"{entry.label('unsandboxed')!r} runs the command outside the agent's sandbox, "
            'on files the agent wrote: say why with `reason:` (e.g. reason: "talks to the '
            'database on the host"), or remove `unsandboxed: true`',
            "unsandboxed",
        )
    if reason is not None and not unsandboxed:
        raise entry.error(
            f"{entry.label('reason')!r} explains a way out of the sandbox, and the check "
            "asks for none: add `unsandboxed: true`, or remove `reason:`",
            "reason",
        )
    return unsandboxed


def stdout_diff(expected: str, actual: str, limit: int = DIFF_LINES) -> tuple[str, str]:
    """A one-line summary and a unified diff of expected vs actual stdout, trailing newlines
    ignored, cut after `limit` lines so reports, which show an evidence's end, show its start."""
    want, got = expected.rstrip("\n").split("\n"), actual.rstrip("\n").split("\n")
    first = next(
        (i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
        min(len(want), len(got)),
    )
    summary = (
        f"its stdout differs from the expected one from line {first + 1} "
        f"({len(want)} line{'s' * (len(want) != 1)} expected, {len(got)} printed)"
    )
    lines = list(difflib.unified_diff(want, got, "expected stdout", "actual stdout", lineterm=""))
    if len(lines) > limit:
        lines = [*lines[:limit], f"… ({len(lines) - limit} more diff lines)"]
    return summary, "\n".join(lines)
