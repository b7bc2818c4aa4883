"""``tool_results: FILE``: did each tool call give the result the imported session saw?

`atom import` writes the results a session's tools gave beside the spec; this check compares
a run's main-agent calls with them in order. A scripted replay plays the session's calls
whatever their results, so this is where a workspace that is not what the session started
from shows: the check names each call whose result differs.

Both sides are compared in a normal form, so what only differs by machine or release does not
count:

- the session's folder and the run's workspace both read as relative paths;
- wall times (``1 passed in 0.03s``) are ``<DURATION>``;
- ``<system-reminder>`` blocks the CLI appends to results are left out;
- a Read result's line-number gutter (``     1→`` or ``1\\t``) is left out;
- the file tools' own success messages (Write, Edit, MultiEdit, NotebookEdit), which the CLI
  words itself and rewords between releases, count only as success or error: the checks on
  the files judge what they wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom import yamldoc
from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.errors import CheckError, YamlDocError
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.replay.transcript import tool_label
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check
from pytest_atom.words import shorten

if TYPE_CHECKING:
    from pytest_atom.checks.trajectory import Trajectory

#: Tools whose result is the CLI's own wording of a success: compared as success or error.
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.DOTALL)
#: A Read result's line numbers; a blank line's number ends its line once blanks are stripped.
_GUTTER = re.compile(r"^ *\d+(?:→|\t|$)", re.MULTILINE)
#: Divergent calls an evidence lists in full; more are counted.
_LISTED = 10


def normal_result(text: str, folders: Iterable[str | Path] = ()) -> str:
    """`text` with `folders` (the session's or the run's) as relative paths, wall times and
    system reminders masked, and trailing blanks gone."""
    # The gateway's own rule, loaded when a result is compared: collecting specs (which
    # registers this check kind) loads no gateway.
    from pytest_atom.replay.normalize import mask_durations

    text = _REMINDER.sub("\n", text)
    for folder in sorted({str(f).rstrip("/") for f in folders if str(f).strip("/")}, key=len)[::-1]:
        edge = r"(?<![\w.-])" + re.escape(folder)
        text = re.sub(edge + "/", "", text)
        text = re.sub(edge + r"(?![\w.-])", ".", text)
    text = mask_durations(text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def comparable(tool: str, text: str, is_error: bool) -> str:
    """What of a normal result is compared: a file tool's success only as such, a Read's body."""
    if tool in WRITE_TOOLS and not is_error:
        return "(succeeded)"
    if tool == "Read":
        text = "\n".join(line.rstrip() for line in _GUTTER.sub("", text).splitlines()).strip()
    return text


def load_expected(path: Path) -> list[dict[str, Any]]:
    """The calls of an expected-results file (``calls:`` entries with tool, result, is_error)."""
    try:
        data = yamldoc.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckError(f"cannot read the session's results {path}: {exc}") from None
    except YamlDocError as exc:
        where = f"{path}:{exc.line}:{exc.column}" if exc.line else str(path)
        raise CheckError(f"cannot read the session's results {where}: {exc.message}") from None
    calls = data.get("calls") if isinstance(data, dict) else None
    if not isinstance(calls, list) or not all(
        isinstance(c, dict) and isinstance(c.get("tool"), str) for c in calls
    ):
        raise CheckError(
            f"{path} holds no 'calls:' list of {{tool, input, result, is_error}} entries, as "
            "atom import writes them: import the session again"
        )
    return calls


def _first_difference(expected: str, actual: str) -> tuple[str, str]:
    want, got = expected.splitlines() or [""], actual.splitlines() or [""]
    for a, b in zip(want, got, strict=False):
        if a != b:
            return a, b
    if len(want) != len(got):
        n = min(len(want), len(got))
        return (want[n] if n < len(want) else "(end)"), (got[n] if n < len(got) else "(end)")
    scrub = Scrubber().scrub
    return shorten(scrub(expected), 160), shorten(scrub(actual), 160)


def _short(text: str) -> str:
    return repr(shorten(Scrubber().scrub(text.strip()), 120))


def divergences(expected: Sequence[Mapping[str, Any]], trajectory: Trajectory) -> list[str]:
    """One line per call whose result differs from the session's (or that one side lacks)."""
    actual = [c for c in trajectory.calls if c.by_main]
    folders = [trajectory.workspace, trajectory.workspace.resolve()] if trajectory.workspace else []
    found = []
    for number in range(1, max(len(expected), len(actual)) + 1):
        want = expected[number - 1] if number <= len(expected) else None
        got = actual[number - 1] if number <= len(actual) else None
        if got is None:
            assert want is not None
            found.append(
                f"call {number} {want['tool']} {want.get('input') or ''}: the session made it, "
                "this run did not"
            )
            continue
        label = f"call {number} {got.name} {tool_label(got.name, got.input)} ({got.where})"
        if want is None:
            found.append(f"{label}: this run made it, the session did not")
            continue
        if want["tool"] != got.name:
            found.append(f"{label}: the session called {want['tool']} here")
            continue
        if want.get("result") is None:  # the session saw no result (it was cut off)
            continue
        saw_error, gave_error = bool(want.get("is_error")), got.is_error
        raw_saw, raw_gave = str(want.get("result") or ""), normal_result(got.result or "", folders)
        if saw_error != gave_error:
            state = {True: "an error", False: "a success"}
            found.append(
                f"{label}: the session saw {state[saw_error]} {_short(raw_saw)}, this run gave "
                f"{state[gave_error]} {_short(raw_gave)}"
            )
            continue
        saw = comparable(want["tool"], raw_saw, saw_error)
        gave = comparable(got.name, raw_gave, gave_error)
        if saw != gave:
            a, b = _first_difference(saw, gave)
            found.append(f"{label}: the session saw {_short(a)}, this run gave {_short(b)}")
    return found


class ToolResults(BuiltinKind):
    name = "tool_results"
    schema: Mapping[str, Any] = {
        "type": "string",
        "minLength": 1,
        "description": "A file of tool results, relative to the spec file's folder (atom import writes one): each of the main agent's calls, in order, gave the result listed there; a divergent call is named.",
    }
    reads_run = True

    def build(self, entry: Entry, value: str) -> dict[str, Any]:
        return {"file": entry.spec_file(value)}

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"tool_results {params['file'].name}"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        """Every main-agent call gave the session's result."""
        trajectory = scene.agent_run
        path: Path = check.params["file"]
        expected = load_expected(path)
        found = divergences(expected, trajectory)
        if not found:
            return CheckResult(
                check,
                True,
                f"all {len(expected)} tool calls gave the results the session saw",
                f"compared with {path.name}",
            )
        listed = found[:_LISTED] + (
            [f"… and {len(found) - _LISTED} more"] if len(found) > _LISTED else []
        )
        return CheckResult(
            check,
            False,
            f"{len(found)} of {len(expected)} tool calls diverge from the session: {found[0]}",
            "\n".join(listed)
            + f"\n(the session's results: {path}; a workspace other than the one the session "
            "started from gives other results: check the spec's workspace and ref)",
        )


KIND = ToolResults()
