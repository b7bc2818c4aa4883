"""Scripted mode: the gateway plays assistant turns from a small YAML script.

This is how the project tests itself with the real CLI and how a user checks a spec's
acceptance checks without recording anything. A script lists the agent's turns::

    turns:
      - text: I'll create the file.
        tool_use:
          - name: Bash
            input: {command: "printf 'hello\\n' > hello.txt"}
      - text: "Created hello.txt.\\n\\nEXIT_LOOP_NOW"

Each agent turn request (one that offers tools) takes the next turn; side requests
(session titles, token counts) are answered on the side and never consume one. The
reflector's sessions take `reflector:` turns (``- verdict: {...}``) and a planner's
(planner mode) `planner:` turns (``- plan: {steps: [...]}``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_atom import yamldoc
from pytest_atom.replay.gateway import messages
from pytest_atom.replay.gateway.server import GatewayRequest, Reply

#: The tool Claude Code adds for `--json-schema`: a request offering it is the reflector's.
STRUCTURED_OUTPUT = "StructuredOutput"
#: The title of the planner's answer schema: a structured request with it is the planner's.
PLAN_TITLE = "pytest-atom plan"


def structured_role(body: Any) -> str | None:
    """Whose session a request offering StructuredOutput is: "planner" when its answer
    schema is the plan's (titled so, or asking for ``steps`` where a verdict has a
    ``score``), else "reflector"; None for a request without it."""
    tools = body.get("tools") if isinstance(body, dict) else None
    for tool in tools or []:
        if isinstance(tool, dict) and tool.get("name") == STRUCTURED_OUTPUT:
            schema = tool.get("input_schema")
            schema = schema if isinstance(schema, dict) else {}
            props = schema.get("properties")
            props = props if isinstance(props, dict) else {}
            planner = schema.get("title") == PLAN_TITLE or (
                "steps" in props and "score" not in props
            )
            return "planner" if planner else "reflector"
    return None


class ScriptError(Exception):
    """A script file that cannot be played; the message names file, line and fix."""


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class Turn:
    text: str | None
    tool_use: tuple[ToolUse, ...]
    line: int


@dataclass(frozen=True)
class Script:
    path: Path | None
    turns: tuple[Turn, ...]
    reflector: tuple[Turn, ...] = ()  # the judging session's turns, one verdict per attempt
    planner: tuple[Turn, ...] = ()  # planner mode: the planner session's turns, one plan

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Script:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ScriptError(f"cannot read script {path}: {exc.strerror}") from None
        try:
            root = yamldoc.compose(yaml.SafeLoader(text))  # no alias bombs
        except yamldoc.YamlDocError as exc:
            where = f"{path}:{exc.line}:{exc.column}" if exc.line else str(path)
            raise ScriptError(f"{exc.message} at {where}") from None
        return cls.from_node(root, path)

    @classmethod
    def from_data(cls, data: Any) -> Script:
        """A script given inline (tests, the Python API) rather than as a file."""
        return cls.from_node(yaml.compose(yaml.safe_dump(data), Loader=yaml.SafeLoader), None)

    @classmethod
    def from_node(cls, root: yaml.Node | None, path: Path | None) -> Script:
        where = str(path) if path else "<script>"

        def fail(node: yaml.Node, problem: str) -> ScriptError:
            return ScriptError(f"{problem} at {where}:{node.start_mark.line + 1}")

        if not isinstance(root, yaml.MappingNode):
            raise ScriptError(f"script {where} must be a mapping with a 'turns:' list")
        top = {k.value: v for k, v in root.value}
        unknown = set(top) - {"turns", "reflector", "planner"}
        if unknown:
            raise fail(
                root,
                f"unknown key {sorted(unknown)[0]!r}: a script has 'turns', 'reflector' "
                "and 'planner'",
            )
        turns_node = top.get("turns")
        if not isinstance(turns_node, yaml.SequenceNode) or not turns_node.value:
            raise fail(root, "a script needs a non-empty 'turns:' list")
        reflector_node = top.get("reflector")
        if reflector_node is not None and not isinstance(reflector_node, yaml.SequenceNode):
            raise fail(reflector_node, "'reflector:' is a list of turns, one verdict per attempt")
        turns = tuple(cls._turn(node, fail) for node in turns_node.value)
        reflector = (
            tuple(cls._turn(n, fail) for n in reflector_node.value) if reflector_node else ()
        )
        planner_node = top.get("planner")
        if planner_node is not None and not isinstance(planner_node, yaml.SequenceNode):
            raise fail(planner_node, "'planner:' is a list of turns, e.g. '- plan: {steps: [...]}'")
        planner = tuple(cls._turn(n, fail) for n in planner_node.value) if planner_node else ()
        return cls(path, turns, reflector, planner)

    @staticmethod
    def _turn(node: yaml.Node, fail: Any) -> Turn:
        data = yaml.SafeLoader(b"").construct_document(node)  # plain Python data
        if (
            not isinstance(data, dict)
            or not data
            or not set(data) <= {"text", "tool_use", "verdict", "plan"}
        ):
            raise fail(
                node, "each turn is a mapping with 'text', 'tool_use', 'verdict' and/or 'plan'"
            )
        text = data.get("text")
        if text is not None and not isinstance(text, str):
            raise fail(node, "a turn's 'text' must be a string")
        uses = data.get("tool_use") or []
        if not isinstance(uses, list) or not all(
            isinstance(u, dict)
            and isinstance(u.get("name"), str)
            and isinstance(u.get("input", {}), dict)
            for u in uses
        ):
            raise fail(node, "'tool_use' is a list of {name: <tool>, input: {...}}")
        calls = [ToolUse(u["name"], u.get("input", {})) for u in uses]
        if "verdict" in data:  # shorthand for the reflector's structured answer
            if not isinstance(data["verdict"], dict):
                raise fail(node, "'verdict' is a mapping: the reflector's JSON answer")
            calls.append(ToolUse(STRUCTURED_OUTPUT, data["verdict"]))
        if "plan" in data:  # shorthand for the planner's structured answer
            if not isinstance(data["plan"], dict):
                raise fail(node, "'plan' is a mapping: the planner's JSON answer, {steps: [...]}")
            calls.append(ToolUse(STRUCTURED_OUTPUT, data["plan"]))
        return Turn(text, tuple(calls), node.start_mark.line + 1)


class ScriptedResponder:
    """Answers agent turns from a script, in order, and side requests generically."""

    def __init__(self, script: Script, model: str = "scripted") -> None:
        self.script = script
        self.model = model
        self._lock = threading.Lock()
        self._next = {"turns": 0, "reflector": 0, "planner": 0}
        self._side = 0

    def respond(self, request: GatewayRequest) -> Reply:
        body = request.json if isinstance(request.json, dict) else {}
        if request.kind == "count_tokens":
            return Reply.json({"input_tokens": messages.estimate_tokens(request.body)})
        if request.kind == "turn":
            lane = structured_role(body) or "turns"
            script_turns = getattr(self.script, lane)
            with self._lock:
                index = self._next[lane]
                self._next[lane] += 1
            if index >= len(script_turns):
                return self._exhausted(lane, index)
            prefix = "msg_atom" if lane == "turns" else f"msg_atom_{lane}"
            content = self._content(script_turns[index], index, prefix)
            msg_id = f"{prefix}_{index + 1:04d}"
        else:
            with self._lock:
                self._side += 1
                msg_id = f"msg_atom_side_{self._side:04d}"
            content = [{"type": "text", "text": self._side_text(body)}]
        msg = messages.message(
            msg_id,
            str(body.get("model") or self.model),
            content,
            input_tokens=messages.estimate_tokens(request.body),
            output_tokens=messages.estimate_tokens(json.dumps(content)),
        )
        if body.get("stream"):
            return Reply(200, {"content-type": "text/event-stream"}, messages.sse_stream(msg))
        return Reply.json(msg)

    @staticmethod
    def _content(turn: Turn, index: int, prefix: str) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        for k, use in enumerate(turn.tool_use):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{prefix.removeprefix('msg_')}_{index + 1:04d}_{k + 1}",
                    "name": use.name,
                    "input": dict(use.input),
                }
            )
        return blocks

    @staticmethod
    def _side_text(body: Mapping[str, Any]) -> str:
        fmt = (body.get("output_config") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            return json.dumps(
                messages.sample_for_schema(fmt.get("schema") or {}, "Scripted session")
            )
        return "Scripted session"

    def _exhausted(self, lane: str, index: int) -> Reply:
        where = self.script.path or "the script"
        if lane == "planner":
            text = (
                f"pytest-atom scripted gateway: {where} has {len(self.script.planner)} "
                f"planner turns but the planner asked for turn {index + 1}. Add a "
                "`planner:` turn with a `plan: {steps: [...]}`."
            )
        elif lane == "reflector":
            text = (
                f"pytest-atom scripted gateway: {where} has {len(self.script.reflector)} "
                f"reflector turns but the reflector asked for turn {index + 1}. Add a "
                "`reflector:` turn with a `verdict:` for each attempt."
            )
        else:
            text = (
                f"pytest-atom scripted gateway: {where} has {len(self.script.turns)} turns but "
                f"the agent asked for turn {index + 1}. Add a turn, or end the last one with "
                "EXIT_LOOP_NOW."
            )
        return Reply.refusal(text)


def scripted(turns: Sequence[Mapping[str, Any]]) -> ScriptedResponder:
    """Shorthand for tests and the Python API: a responder from inline turns."""
    return ScriptedResponder(Script.from_data({"turns": list(turns)}))
