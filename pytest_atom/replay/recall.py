"""Recall: a replay answers a structured session from its cassette, without starting it.

The reflector and the planner are read-only Claude sessions whose answer depends on two
things only: the request the harness builds (prompt, model, CLI options) and the folder
they read. When a replay gives one the same request over a folder of the same content as
when it was recorded, the CLI would send the recorded conversation turn for turn and get
the recorded answer back: starting it (about a CPU-second, the larger half of a replayed
spec) proves nothing. So a recording stores, per session, a hash of each input
(``metadata.recall`` of the cassette), and a replay whose hashes agree takes the answer
from the recorded session and marks that session played.

Everything is compared in the form the gateway compares it: paths as placeholders,
secrets scrubbed, dates masked. The answer itself is never copied into the metadata: it
is read from the recorded session, so the cassette holds one verdict, reviewed once.
A cassette recorded without these hashes replays as before, starting the session;
``--atom-judge=rerun`` starts it anyway.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_atom import digest
from pytest_atom.files import SKIPPED_DIRS
from pytest_atom.replay.cassette import RECALL
from pytest_atom.replay.matching import compared_turns
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.results.record import IterationRecord, Recalled
from pytest_atom.spec.types import ClaudeOptions
from pytest_atom.wire.request import Kind


@dataclass(frozen=True)
class SessionInput:
    """All a structured session is given besides its folder: the prompt the harness built,
    the CLI options (tools, answer schema) and the model."""

    prompt: str
    options: ClaudeOptions
    model: str | None


@dataclass(frozen=True)
class SessionKey:
    """What proves a session unchanged: its role in the run (``reflector:1``,
    ``reflector:build:2``, ``planner``), a hash of its input and one of its folder."""

    role: str
    kind: Kind
    inputs: str
    folder: str
    opening: list[dict[str, Any]] = field(compare=False, hash=False)  # its first turn


def folder_hash(folder: Path, paths_out: Callable[[str], str]) -> str:
    """The content of `folder` as the session sees it (`digest.session_hash`), run paths
    as placeholders (`paths_out`, the gateway's normalizer). Version-control state and
    caches (`SKIPPED_DIRS`) are left out: they differ on every run (an index's
    timestamps) and the diff in the prompt already says what changed."""
    return digest.session_hash(folder, SKIPPED_DIRS, paths_out)


class Recall:
    """One run's recall: what a replay takes from its cassette instead of a session, and
    what a recording (or a refresh, or a re-judge) writes down so a later replay can.

    `enabled` is false for every source but a plain replay (a refresh and a re-judge exist
    to run the sessions) and under ``--atom-judge=rerun``. Without a `tape` (a scripted
    run) there is nothing to recall or write down: every key is None.
    """

    def __init__(
        self,
        tape: CassetteResponder | None = None,
        *,
        enabled: bool = False,
        case: Mapping[str, Any] | None = None,
    ) -> None:
        self.tape = tape
        self.enabled = enabled
        #: The case's variables (`cases:`): part of every session's input hash, so a
        #: session is recalled only for the case it was recorded for.
        self.case = dict(case) if case else None
        recorded = tape.cassette.metadata.get(RECALL) if tape is not None else None
        self.recorded: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        self.remembered: dict[str, dict[str, Any]] = {}

    def key(self, role: str, kind: Kind, session: SessionInput, folder: Path) -> SessionKey | None:
        """The session's key, computed before it starts (it may leave files behind).

        Its prompt goes through the gateway's scrubbing and normalization as the CLI's
        first request would, and the conversation is taken as matching takes it.
        """
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
        its kind and the cassette holds that session unplayed; None: run the session.

        A replay that already diverged recalls nothing: its sessions replay (or diverge)
        as they would, so the report names the first divergence.
        """
        tape = self.tape
        if key is None or tape is None or not (self.enabled and key.opening) or tape.divergences:
            return None
        # By content, not by role: a resumed run numbers a step's attempts on (a02 judged
        # as a01 was), and the role is not part of the request. The same role first: the
        # votes of one judgement share their content, and each recorded its own cost.
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
        """Write what this run remembered into a cassette's metadata (replacing what an
        earlier recording said: every session of this run ran)."""
        if self.remembered:
            metadata[RECALL] = dict(sorted(self.remembered.items()))
        else:
            metadata.pop(RECALL, None)
