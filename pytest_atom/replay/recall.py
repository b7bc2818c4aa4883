"""Recall: a replay answers a structured session from its cassette, without starting it.

The reflector and the planner are read-only Claude sessions whose answer depends on the
request the harness builds (prompt, model, CLI options) and the folder they read only.
Given the same request over a folder of the same content, the CLI would replay the recorded
conversation turn for turn: starting it (about a CPU-second) proves nothing. So a recording
stores, per session, a hash of each input (``metadata.recall``), and a replay whose hashes
agree takes the answer from the recorded session and marks that session played.

Everything is compared as the gateway compares it (normalized, scrubbed). The answer is read
from the recorded session, never copied, so the cassette holds one verdict.
``--atom-judge=rerun`` starts it anyway.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pytest_atom import digest
from pytest_atom.files import SKIPPED_DIRS
from pytest_atom.replay.cassette import RECALL
from pytest_atom.replay.matching import compared_turns
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.results.record import IterationRecord, Recalled
from pytest_atom.spec.types import ClaudeOptions
from pytest_atom.wire.request import Kind

A = TypeVar("A")


@dataclass(frozen=True)
class SessionInput:
    """All a structured session is given besides its folder."""

    prompt: str
    options: ClaudeOptions
    model: str | None


@dataclass(frozen=True)
class SessionKey:
    """What proves a session unchanged: its role, a hash of its input and one of its folder."""

    role: str
    kind: Kind
    inputs: str
    folder: str
    opening: list[dict[str, Any]] = field(compare=False, hash=False)  # its first turn


def folder_hash(folder: Path, paths_out: Callable[[str], str]) -> str:
    """The content of `folder` as the session sees it, run paths as placeholders
    (`paths_out`), without version-control state and caches (they differ on every run)."""
    return digest.session_hash(folder, SKIPPED_DIRS, paths_out)


class Recall:
    """One run's recall: what a replay takes from its cassette instead of a session, and
    what a recording writes down so a later replay can. `enabled` only for a plain replay
    without ``--atom-judge=rerun``; without a `tape`, every key is None."""

    def __init__(
        self,
        tape: CassetteResponder | None = None,
        *,
        enabled: bool = False,
        case: Mapping[str, Any] | None = None,
    ) -> None:
        self.tape = tape
        self.enabled = enabled
        #: The case's variables: part of every session's input hash.
        self.case = dict(case) if case else None
        recorded = tape.cassette.metadata.get(RECALL) if tape is not None else None
        self.recorded: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        self.remembered: dict[str, dict[str, Any]] = {}

    def key(self, role: str, kind: Kind, session: SessionInput, folder: Path) -> SessionKey | None:
        """The session's key, computed before it starts (it may leave files behind): its
        prompt scrubbed and normalized as the CLI's first request would be."""
        tape = self.tape
        if tape is None:
            return None
        body = {"messages": [{"role": "user", "content": session.prompt}]}
        opening = compared_turns(tape.normalizer.body(tape.scrubber.scrub_obj(body)))
        inputs = {
            "opening": opening,
            "model": session.model,
            "options": asdict(session.options),
            **({"case": self.case} if self.case else {}),
        }
        text = json.dumps(inputs, sort_keys=True, ensure_ascii=False, default=str)
        return SessionKey(
            role,
            kind,
            digest.of_text(text),
            folder_hash(folder, tape.normalizer.paths_out),
            opening[:1],
        )

    def recall(self, key: SessionKey | None) -> Recalled | None:
        """The recorded answer when the hashes of `key` equal those of a recorded session of
        its kind the cassette holds unplayed; None: run the session (always, once a replay
        diverged, so the report names the first divergence)."""
        tape = self.tape
        if key is None or tape is None or not (self.enabled and key.opening) or tape.divergences:
            return None
        # By content, not by role (a resumed run numbers attempts on); the same role first:
        # the votes of one judgement share their content, each with its own cost.
        entry = next(
            (
                e
                for role, e in sorted(self.recorded.items(), key=lambda r: r[0] != key.role)
                if isinstance(e, dict)
                and str(role).split(":")[0] == key.kind
                and e.get("inputs") == key.inputs
                and e.get("folder") == key.folder
            ),
            None,
        )
        if entry is None:
            return None
        answer = tape.recall_session(key.kind, key.opening[0])
        if answer is None:
            return None
        tokens, cost = entry.get("tokens"), entry.get("cost_usd")
        return Recalled(
            key.role,
            answer,
            tokens if isinstance(tokens, int) else 0,
            float(cost) if isinstance(cost, (int, float)) else 0.0,
        )

    def answer(
        self,
        role: str,
        kind: Kind,
        session: SessionInput,
        folder: Path,
        run: Callable[[], tuple[A, IterationRecord]],
    ) -> Recalled | tuple[A, IterationRecord]:
        """The session's recorded answer when `recall` has it, else `run`'s answer and record
        (remembered for the cassette); the key is taken before `run` starts."""
        key = self.key(role, kind, session, folder)
        recalled = self.recall(key)
        if recalled is not None:
            return recalled
        answer, record = run()
        self.remember(key, record)
        return answer, record

    def remember(self, key: SessionKey | None, record: IterationRecord) -> None:
        """A session that ran and answered: its key goes into the cassette written."""
        if key is None:
            return
        self.remembered[key.role] = {
            "inputs": key.inputs,
            "folder": key.folder,
            "tokens": record.tokens,
            "cost_usd": round(record.cost_usd, 6),
        }

    def stamp(self, metadata: dict[str, Any]) -> None:
        """Write what this run remembered into a cassette's metadata, replacing the old."""
        if self.remembered:
            metadata[RECALL] = dict(sorted(self.remembered.items()))
        else:
            metadata.pop(RECALL, None)
