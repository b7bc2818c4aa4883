"""A conversation's user: who answers the agent after each of its turns (a spec's `user:`).

After each agent turn the user says the next message, sent into the same session by the
atom loop (`AtomRuntime`'s `reply`), or says it is done. A scripted user says the spec's
`script:` messages in order; a simulated one is a model playing `persona` after `goal` in
a structured session of its own (role ``user``, recorded and replayed like the
reflector). The user also answers the agent's ``AskUserQuestion`` questions
(`AgentSession.answer`). docs/explanation/how-a-spec-runs.md, "Conversations", states the
contract.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_atom.agents.protocol import Agent
from pytest_atom.errors import StructuredSessionError
from pytest_atom.results.record import IterationRecord
from pytest_atom.spec.types import UserSpec

#: The simulated user's answer, as its session's ``--json-schema``.
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "Your next message to the agent."},
        "done": {
            "type": "boolean",
            "description": "True when your goal is met and the conversation can end.",
        },
    },
    "required": ["message", "done"],
    "additionalProperties": False,
}

_PLAY = (
    "You are playing a user who talks to an AI coding agent, so that the agent can be "
    "tested. Stay in character; never mention that you are playing a part. Write only "
    "what the user would type.\n\nWho you are: {persona}\n\nYour goal: {goal}\n\n"
    "The conversation so far:\n{transcript}\n\n"
)
_NEXT = (
    "Write your next message to the agent as `message`. Set `done` to true when your goal is "
    "met (then `message` is your last words), else false."
)
_QUESTION = (
    "The agent now asks you: {question}\nThe options it offers:\n{options}\n"
    "Answer as `message`: an option's label, or your own words if none fits; `done` false."
)


@dataclass
class UserSessions:
    """How a simulated user's model is asked: a fresh session of `agent()` per question."""

    agent: Callable[[], Agent]
    folder: Path
    session_id: Callable[[str], str]  # a session's label to its pinned id
    timeout: float | None = None


@dataclass
class Conversation:
    """One attempt loop's conversation: what was said, and the user who says the next."""

    user: UserSpec
    opening: str
    sessions: UserSessions | None = None
    transcript: list[tuple[str, str]] = field(default_factory=list)
    records: list[IterationRecord] = field(default_factory=list)  # the simulated user's
    asked: list[tuple[str, str | None]] = field(default_factory=list)  # with their answers
    sent: int = 0  # messages the user sent, the opening prompt included
    done: bool = False
    error: str | None = None
    _label: str = "a01"

    def begin(self, attempt: int, message: str) -> None:
        self._label = f"a{attempt:02d}"
        if not self.transcript:
            self.transcript.append(("user", message))
            self.sent = 1

    def reply(self, record: IterationRecord) -> str | None:
        """The user's next message after the agent's turn `record`; None: the user is done."""
        said = "\n".join(t for t in record.texts if t.strip()) or record.output
        self.transcript.append(("agent", said.strip()))
        if not self.user.simulated:
            turn = self.sent - 1
            if turn >= len(self.user.script):
                self.done = True
                return None
            message = self.user.script[turn]
        else:
            answer = self._ask(f"turn{self.sent}", _NEXT)
            if answer is None:  # the attempt fails on it (the atom loop reports it)
                raise RuntimeError(f"the simulated user gave no reply: {self.error}")
            message, done = answer
            if done:
                self.done = True
                return None
        self.transcript.append(("user", message))
        self.sent += 1
        return message

    def answer(self, tool_input: Mapping[str, Any]) -> Mapping[str, str] | None:
        """The answers to an ``AskUserQuestion`` call: the script's `answers:` in order, or
        the simulated user's; None when nobody answers."""
        answers: dict[str, str] = {}
        for question in tool_input.get("questions") or []:
            text = str(question.get("question", ""))
            reply = self._answer_one(question)
            self.asked.append((text, reply))
            if reply is None:
                return None
            answers[text] = reply
            self.transcript.append(("agent asks", text))
            self.transcript.append(("user answers", reply))
        return answers

    def _answer_one(self, question: Mapping[str, Any]) -> str | None:
        if not self.user.simulated:
            given = sum(1 for _, a in self.asked if a is not None)
            return self.user.answers[given] if given < len(self.user.answers) else None
        options = "\n".join(
            f"- {o.get('label')}: {o.get('description', '')}" for o in question.get("options") or []
        )
        number = len(self.asked) + 1
        answer = self._ask(
            f"question{number}",
            _QUESTION.format(question=question.get("question", ""), options=options or "(none)"),
        )
        return None if answer is None else answer[0]

    def _ask(self, label: str, task: str) -> tuple[str, bool] | None:
        """One structured session of the simulated user; None (and `error`): no answer."""
        sessions = self.sessions
        assert sessions is not None, "a simulated user runs with its sessions"
        prompt = _PLAY.format(
            persona=self.user.persona or "an ordinary user",
            goal=self.user.goal,
            transcript=self.render(),
        )
        folder = sessions.folder
        folder.mkdir(parents=True, exist_ok=True)
        try:
            answer, record = sessions.agent().structured(
                prompt + task,
                folder,
                session_id=sessions.session_id(f"user:{self._label}:{label}"),
                timeout=sessions.timeout,
            )
        except StructuredSessionError as exc:
            self.error = str(exc)
            return None
        self.records.append(record)
        if not isinstance(answer, dict) or not isinstance(answer.get("message"), str):
            self.error = f"the simulated user answered {answer!r}, not {{message, done}}"
            return None
        return answer["message"], bool(answer.get("done"))

    def render(self) -> str:
        """The conversation as the simulated user and the reflector read it."""
        return "\n\n".join(f"[{who}]: {text}" for who, text in self.transcript)
