"""``final_message: REGEX``: the main agent's last message matches a Python regex
(searched with re.MULTILINE)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check

#: Characters of the last message an evidence shows.
_MESSAGE_CHARS = 2000


class FinalMessage(BuiltinKind):
    name = "final_message"
    schema: Mapping[str, Any] = {
        "type": "string",
        "description": "Python regex searched (re.MULTILINE) in the main agent's last message.",
    }
    reads_run = True

    def build(self, entry: Entry, value: str) -> dict[str, Any]:
        return {"pattern": entry.regex(value)}

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"final_message /{params['pattern']}/"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        run = scene.agent_run
        pattern: str = check.params["pattern"]
        message = run.final_message
        if message is None:
            return CheckResult(
                check, False, "the agent wrote no message", f"calls made: {run.tools()}"
            )
        shown = message if len(message) <= _MESSAGE_CHARS else message[: _MESSAGE_CHARS - 1] + "…"
        if re.search(pattern, message, re.MULTILINE):
            return CheckResult(check, True, f"the last message matches /{pattern}/", shown)
        return CheckResult(check, False, f"the last message does not match /{pattern}/", shown)


KIND = FinalMessage()
