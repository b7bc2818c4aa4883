"""Scripted mode: the gateway plays assistant turns from a small YAML script
(docs/how-to/scripts.md), so a spec runs with the real CLI and no model.

Each agent turn request (one that offers tools) takes the next turn; side requests
(session titles, token counts) are answered on the side and never consume one. The
reflector's, the planner's and a simulated user's sessions take their own lanes' turns:
the harness marks each request with its role (wire.roles); an unmarked one is the agent's.

A turn may give weighted ``choices:`` instead: which one plays is drawn when the script is
played (`Script.play`) from a key of the run's seed, the spec, its arm and the repeat
(`draw_key`), so the same key plays the same choices and repeats draw independently.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_atom import yamldoc
from pytest_atom.errors import ScriptError, YamlDocError
from pytest_atom.gateway import messages
from pytest_atom.gateway.server import Reply
from pytest_atom.wire.request import CONVERSATION_KINDS, GatewayRequest
from pytest_atom.wire.roles import STRUCTURED_OUTPUT
from pytest_atom.wire.verdict_schema import verdict_error
from pytest_atom.words import plural


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class Turn:
    text: str | None
    tool_use: tuple[ToolUse, ...]
    line: int
    #: A `choices:` turn has no content: playing the script puts one choice's turns there.
    choices: tuple[Choice, ...] = ()


@dataclass(frozen=True)
class Choice:
    """One of a turn's `choices:`: played with probability weight / sum of weights."""

    weight: float
    turns: tuple[Turn, ...]
    line: int


def draw_key(seed: int, spec: str, arm: str | None = None, repeat: int | None = None) -> str:
    """What a script's choices are drawn from: the run's seed, the spec (``file::name``), its
    arm and its repeat (1 when the spec runs once)."""
    return f"{seed}:{spec}:{arm or ''}:{repeat or 1}"


def draws(key: str) -> Iterator[float]:
    """Uniform numbers in [0, 1) for `key`: SHA-256 of ``key:n``, so a key draws the same on
    every machine and Python, and different keys draw independently."""
    n = 0
    while True:
        digest = hashlib.sha256(f"pytest-atom:{key}:{n}".encode()).digest()
        yield int.from_bytes(digest[:8], "big") / 2**64
        n += 1


def _pick(choices: Sequence[Choice], u: float) -> int:
    total = sum(c.weight for c in choices)
    edges = itertools.accumulate(c.weight / total for c in choices)
    # The last one where rounding leaves u just above every edge.
    return next((n for n, edge in enumerate(edges) if u < edge), len(choices) - 1)


@dataclass(frozen=True)
class Script:
    """A spec's `script:`: the turns the gateway plays in order instead of a model, for the
    agent and for the reflector, the planner and a simulated user (one answer each)."""

    path: Path | None
    turns: tuple[Turn, ...]
    reflector: tuple[Turn, ...] = ()
    planner: tuple[Turn, ...] = ()
    #: A played script's picks: the index of the choice each `choices:` turn played, in
    #: order (the turns' lane first, then the reflector's, then the planner's; depth first).
    picks: tuple[int, ...] = ()
    user: tuple[Turn, ...] = ()

    @property
    def stochastic(self) -> bool:
        return any(t.choices for t in (*self.turns, *self.reflector, *self.planner, *self.user))

    def play(self, key: str) -> Script:
        """This script with each `choices:` turn replaced by the one `key` draws (`draw_key`)."""
        numbers = draws(key)
        return self._expand(lambda choices: _pick(choices, next(numbers)))

    def replay(self, picks: Sequence[int]) -> Script | None:
        """This script played with the given picks (a recording's), None when they do not fit."""
        given = iter(picks)

        def pick(choices: Sequence[Choice]) -> int:
            index = next(given, -1)
            if not 0 <= index < len(choices):
                raise IndexError(index)
            return index

        try:
            played = self._expand(pick)
        except IndexError:
            return None
        return played if len(played.picks) == len(picks) else None

    def _expand(self, pick: Callable[[Sequence[Choice]], int]) -> Script:
        picked: list[int] = []

        def lane(turns: Sequence[Turn]) -> tuple[Turn, ...]:
            out: list[Turn] = []
            for turn in turns:
                if not turn.choices:
                    out.append(turn)
                    continue
                index = pick(turn.choices)
                picked.append(index)
                out += lane(turn.choices[index].turns)
            return tuple(out)

        turns, reflector, planner = lane(self.turns), lane(self.reflector), lane(self.planner)
        user = lane(self.user)
        return Script(self.path, turns, reflector, planner, (*self.picks, *picked), user)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Script:
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ScriptError(f"cannot read script {path}: {exc.strerror}") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise ScriptError(
                f"script {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line "
                f"{line}): save it as UTF-8"
            ) from None
        try:
            root, _ = yamldoc.load(text)  # no alias bombs; every tag known
        except YamlDocError as exc:
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
        unknown = set(top) - {"turns", "reflector", "planner", "user"}
        if unknown:
            raise fail(
                root,
                f"unknown key {sorted(unknown)[0]!r}: a script has 'turns', 'reflector', "
                "'planner' and 'user'",
            )
        turns_node = top.get("turns")
        if not isinstance(turns_node, yaml.SequenceNode) or not turns_node.value:
            raise fail(root, "a script needs a non-empty 'turns:' list")
        turns = tuple(cls._turn(n, fail) for n in turns_node.value)
        lanes: dict[str, tuple[Turn, ...]] = {}
        for lane, shape in _LANE_SHAPES.items():
            node = top.get(lane)
            if node is not None and not isinstance(node, yaml.SequenceNode):
                raise fail(node, f"'{lane}:' is a list of turns, {shape}")
            lanes[lane] = tuple(cls._turn(n, fail) for n in node.value) if node else ()
        return cls(path, turns, lanes["reflector"], lanes["planner"], user=lanes["user"])

    @classmethod
    def _turn(cls, node: yaml.Node, fail: Any) -> Turn:
        if isinstance(node, yaml.MappingNode) and any(k.value == "choices" for k, _ in node.value):
            return cls._choices(node, fail)
        data = yamldoc.construct(node)  # plain Python data
        if (
            not isinstance(data, dict)
            or not data
            or not set(data) <= {"text", "tool_use", "verdict", "plan", "reply"}
        ):
            raise fail(
                node,
                "each turn is a mapping with 'reply', 'text', 'tool_use', 'verdict' and/or 'plan'",
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
            # Checked here: the CLI would refuse it and ask again, hiding the cause.
            problem = verdict_error(data["verdict"])
            if problem:
                where, words = problem
                verdict = next(v for k, v in node.value if k.value == "verdict")
                raise fail(_node_at(verdict, where), f"the reflector's verdict: {words}")
            calls.append(ToolUse(STRUCTURED_OUTPUT, data["verdict"]))
        if "plan" in data:  # shorthand for the planner's structured answer
            if not isinstance(data["plan"], dict):
                raise fail(node, "'plan' is a mapping: the planner's JSON answer, {steps: [...]}")
            calls.append(ToolUse(STRUCTURED_OUTPUT, data["plan"]))
        if "reply" in data:  # shorthand for a simulated user's structured answer
            reply = data["reply"]
            if not isinstance(reply, dict) or not isinstance(reply.get("message"), str):
                raise fail(node, "'reply' is a mapping {message: <text>, done: <true|false>}")
            calls.append(ToolUse(STRUCTURED_OUTPUT, {"done": False, **reply}))
        return Turn(text, tuple(calls), node.start_mark.line + 1)

    @classmethod
    def _choices(cls, node: yaml.MappingNode, fail: Any) -> Turn:
        """A `choices:` turn, each choice checked where it is written."""
        keys = {k.value: v for k, v in node.value}
        if set(keys) != {"choices"}:
            raise fail(
                node,
                "a turn with 'choices:' has no other keys: put 'text' and 'tool_use' in the "
                "turns of each choice",
            )
        entries = keys["choices"]
        if not isinstance(entries, yaml.SequenceNode) or not entries.value:
            raise fail(
                entries,
                "'choices:' is a non-empty list of {weight: <number>, turns: [...]}, e.g. "
                "'- {weight: 3, turns: [{text: Done.}]}'",
            )
        choices = []
        for entry in entries.value:
            fields = (
                {k.value: v for k, v in entry.value} if isinstance(entry, yaml.MappingNode) else {}
            )
            if not fields or set(fields) - {"weight", "turns"}:
                extra = sorted(set(fields) - {"weight", "turns"})
                what = f"unknown key {extra[0]!r}: " if extra else ""
                raise fail(entry, f"{what}a choice is {{weight: <number>, turns: [...]}}")
            weight = yamldoc.construct(fields["weight"]) if "weight" in fields else None
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight > 0:
                raise fail(
                    fields.get("weight", entry),
                    f"a choice needs a 'weight:' above 0, such as 'weight: 3', not {weight!r}",
                )
            turns = fields.get("turns")
            if not isinstance(turns, yaml.SequenceNode) or not turns.value:
                raise fail(
                    turns or entry, "a choice needs a non-empty 'turns:' list, the turns it plays"
                )
            line = entry.start_mark.line + 1
            choices.append(
                Choice(float(weight), tuple(cls._turn(n, fail) for n in turns.value), line)
            )
        return Turn(None, (), node.start_mark.line + 1, tuple(choices))


#: The lanes besides the agent's turns, and what a turn of each looks like.
_LANE_SHAPES = {
    "reflector": "one verdict per attempt",
    "planner": "e.g. '- plan: {steps: [...]}'",
    "user": "e.g. '- reply: {message: Go on.}'",
}


def _node_at(node: yaml.Node, path: Sequence[str | int]) -> yaml.Node:
    """The node at `path` in `node` (keys and indexes), or the deepest one there is: where a
    script's reader is sent to fix a value."""
    for step in path:
        if isinstance(node, yaml.MappingNode):
            found = next((v for k, v in node.value if k.value == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            found = node.value[step] if step < len(node.value) else None
        else:
            found = None
        if found is None:
            break
        node = found
    return node


class ScriptedResponder:
    """Answers agent turns from a script, in order, and side requests generically."""

    def __init__(self, script: Script, model: str = "scripted", *, key: str = "") -> None:
        """`key` (`draw_key`) draws the choices of a stochastic script."""
        self.script = script.play(key) if script.stochastic else script
        self.model = model
        self._lock = threading.Lock()
        self._next = {"turns": 0, "reflector": 0, "planner": 0, "user": 0}
        self._side = 0
        #: Why the script first could not answer (it ran out of turns): the spec's fault, a
        #: spec error (`decide`), never the agent's failure.
        self.script_error: str | None = None

    def respond(self, request: GatewayRequest) -> Reply:
        body = request.json if isinstance(request.json, dict) else {}
        if request.kind == "count_tokens":
            return Reply.json({"input_tokens": messages.estimate_tokens(request.body)})
        kind = request.kind
        if kind in CONVERSATION_KINDS:  # the harness marks whose session it is
            lane = "turns" if kind == "turn" else kind
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
        noun, asker, fix = _EXHAUSTED[lane]
        count = plural(len(getattr(self.script, lane)), noun)
        text = f"{where} has {count} but {asker} asked for turn {index + 1}. {fix}"
        if self.script_error is None:
            self.script_error = text
        return Reply.refusal(f"pytest-atom scripted gateway: {text}")


#: Each lane's running out: what its turns are called, who asked, and how to fix it.
_EXHAUSTED = {
    "turns": (
        "turn",
        "the agent",
        "Add a turn, or end the last one with EXIT_LOOP_NOW.",
    ),
    "reflector": (
        "reflector turn",
        "the reflector",
        "Add a `reflector:` turn with a `verdict:` for each attempt (and each vote, with "
        "`reflector: {votes: N}`).",
    ),
    "planner": (
        "planner turn",
        "the planner",
        "Add a `planner:` turn with a `plan: {steps: [...]}`.",
    ),
    "user": (
        "user turn",
        "the simulated user",
        "Add a `user:` turn with a `reply: {message: ..., done: ...}`.",
    ),
}


def scripted(turns: Sequence[Mapping[str, Any]]) -> ScriptedResponder:
    """Shorthand for tests and the Python API: a responder from inline turns."""
    return ScriptedResponder(Script.from_data({"turns": list(turns)}))
