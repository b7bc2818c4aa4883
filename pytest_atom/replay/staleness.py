"""Whether a cassette still fits its spec: the hashes a recording stores, and what they say.

A recording stores hashes of what the user wrote (the prompt, the script, each piece of
the ``claude:`` configuration). A replay compares them with the spec as it is now: a changed
script or configuration makes the cassette stale (its answers are the old ones, so the
replay is refused); a changed prompt only explains why a replay diverges.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pytest_atom import digest, yamldoc
from pytest_atom.agents.claude_code.configuration import config_hashes, workspace_config_hashes
from pytest_atom.errors import ScriptError, YamlDocError
from pytest_atom.gateway import Script
from pytest_atom.gateway.messages import read_reply
from pytest_atom.paths import display_path
from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.spec.types import Spec
from pytest_atom.wire.request import request_kind


def spec_hash(spec: Spec) -> str:
    return digest.of_value(spec.raw)


def prompt_hash(spec: Spec) -> str:
    """The hash of the prompt the user wrote: in planner mode the request (the planner
    wrote the steps a planned run's `prompt` lists)."""
    text = spec.request if spec.request is not None else spec.prompt
    return digest.of_text(text)


def case_hash(spec: Spec) -> str:
    """The hash of the case's variables (`cases:`): a changed value is a changed spec even
    where no rendered field shows it."""
    return digest.of_value(dict(spec.case_vars))


def script_hash(spec: Spec) -> str | None:
    """The hash of what the script says, None without one (or one that cannot be read).
    The parsed YAML is hashed, not the bytes: a comment or a checkout's line endings do not
    make its cassette stale."""
    try:
        text = spec.script.read_text(encoding="utf-8") if spec.script is not None else None
    except (OSError, UnicodeDecodeError):
        return None  # Script.load reports the unreadable file when the script is played
    if text is None:
        return None
    try:
        content = json.dumps(yamldoc.safe_load(text), sort_keys=True, default=str)
    except YamlDocError:
        content = text.replace("\r\n", "\n")  # as broken as before: Script.load will say so
    return digest.of_text(content)


#: The first words of a staleness reason, which a divergence report can lead with.
SCRIPT_CHANGED = "script changed since recording"
PROMPT_CHANGED = "spec changed since recording"
CASE_CHANGED = "case changed since recording"


StaleKind = Literal["script", "prompt", "config"]


class StaleReason(str):
    """One reason a cassette no longer fits its spec: the sentence a person reads, and its
    `kind`, which decides what a replay does without reading the sentence."""

    kind: StaleKind

    def __new__(cls, text: str, kind: StaleKind) -> StaleReason:
        reason = super().__new__(cls, text)
        reason.kind = kind
        return reason

    @property
    def refused(self) -> bool:
        """A replay refuses the cassette for this reason (another script or configuration)."""
        return self.kind in ("script", "config")


def staleness(spec: Spec, cassette: Cassette) -> list[StaleReason]:
    """Why the cassette no longer fits the spec, from the hashes stored when it was recorded."""
    reasons = []
    metadata = cassette.metadata
    if metadata.get("script_hash") and spec.script is not None:
        if script_hash(spec) != metadata["script_hash"]:
            where = display_path(spec.script)
            text = f"{where} is not the script the cassette was recorded from"
            reasons.append(StaleReason(f"{SCRIPT_CHANGED}: {text}", "script"))
    if metadata.get("prompt_hash") and prompt_hash(spec) != metadata["prompt_hash"]:
        text = "its prompt is not the one the cassette was recorded with"
        reasons.append(StaleReason(f"{PROMPT_CHANGED}: {text}", "prompt"))
    if metadata.get("case_hash") and spec.case is not None:
        if case_hash(spec) != metadata["case_hash"]:
            text = f"case {spec.case!r}'s variables are not the ones the cassette was recorded with"
            reasons.append(StaleReason(f"{CASE_CHANGED}: {text}", "prompt"))
    return reasons + config_staleness(spec, cassette)


#: How a configuration staleness reason ends (``skill release-notes changed since recording``).
CONFIG_CHANGED = " since recording"


def config_staleness(spec: Spec, cassette: Cassette) -> list[StaleReason]:
    """The pieces of the spec's `claude:` configuration that differ from the recording's,
    each named (``skill release-notes changed since recording``): the configuration reaches
    the model only in part (a skill once invoked), so a changed piece may replay unnoticed."""
    recorded = cassette.metadata.get("config_hashes")
    if not isinstance(recorded, dict):
        if not cassette.metadata.get("prompt_hash"):
            return []
        recorded = {}
    now = config_hashes(spec.claude)
    reasons = []
    for label in sorted(recorded.keys() | now.keys()):
        if label not in now:
            reasons.append(StaleReason(f"{label} removed{CONFIG_CHANGED}", "config"))
        elif label not in recorded:
            reasons.append(StaleReason(f"{label} added{CONFIG_CHANGED}", "config"))
        elif recorded[label] != now[label]:
            reasons.append(StaleReason(f"{label} changed{CONFIG_CHANGED}", "config"))
    return reasons


def workspace_config(spec: Spec) -> dict[str, str] | None:
    """The hashes of the workspace's own Claude Code configuration (its `.claude/`,
    CLAUDE.md, .mcp.json), None when the spec has no workspace folder to read."""
    if spec.workspace is None or spec.workspace_ref is not None or not spec.workspace.is_dir():
        return None
    return workspace_config_hashes(spec.workspace)


def workspace_config_changes(spec: Spec, cassette: Cassette) -> list[str]:
    """The workspace's own configuration files that changed since `cassette` was recorded."""
    recorded = cassette.metadata.get("workspace_config")
    now = workspace_config(spec)
    if not isinstance(recorded, dict) or now is None:
        return []
    return sorted(k for k in recorded.keys() | now.keys() if recorded.get(k) != now.get(k))


def stamp_hashes(spec: Spec, cassette: Cassette) -> dict[str, str]:
    """The hashes a recording of `spec` stores now: what `atom cassette stamp` writes."""
    hashes: dict[str, Any] = {"prompt_hash": prompt_hash(spec)}
    if spec.case is not None:
        hashes["case_hash"] = case_hash(spec)
    script = script_hash(spec) if recorded_from_script(cassette) else None
    if script is not None:
        hashes["script_hash"] = script
    config = config_hashes(spec.claude)
    if config:
        hashes["config_hashes"] = config
    return hashes


def recorded_from_script(cassette: Cassette) -> bool:
    return str(cassette.metadata.get("upstream") or "").startswith("scripted://")


def missing_hashes(cassette: Cassette) -> list[str]:
    """The hashes a cassette lacks to tell when it is stale (recorded before they existed)."""
    wanted = ["prompt_hash"] + (["script_hash"] if recorded_from_script(cassette) else [])
    return [name for name in wanted if not cassette.metadata.get(name)]


def script_misfit(spec: Spec, cassette: Cassette) -> str | None:
    """Why the answers a cassette recorded from a script are not what the spec's script
    answers now (a replay never reads it); None when they are. Each lane is compared in
    order; a script may hold turns the recording never used."""
    if not recorded_from_script(cassette) or spec.script is None:
        return None
    try:
        script = Script.load(spec.script)
    except ScriptError as exc:
        return str(exc)
    if script.stochastic:
        picks = cassette.metadata.get("script_picks")
        played = script.replay(picks) if isinstance(picks, list) else None
        if played is None:
            return (
                f"the cassette does not say which of {display_path(spec.script)}'s choices it "
                "recorded, or they are no longer there"
            )
        script = played
    lanes = {
        "turn": script.turns,
        "reflector": script.reflector,
        "planner": script.planner,
        "user": script.user,
    }
    used = dict.fromkeys(lanes, 0)
    where = display_path(spec.script)
    for number, interaction in enumerate(cassette.interactions, 1):
        lane = interaction_kind(interaction)
        if lane not in lanes:
            continue
        index, used[lane] = used[lane], used[lane] + 1
        name = "agent" if lane == "turn" else lane
        if index >= len(lanes[lane]):
            return f"interaction {number} is {name} answer {index + 1}; {where} has {index}"
        turn = lanes[lane][index]
        expected = ([{"type": "text", "text": turn.text}] if turn.text else []) + [
            {"type": "tool_use", "name": use.name, "input": dict(use.input)}
            for use in turn.tool_use
        ]
        answer = read_reply(interaction.response, interaction.status)
        recorded = [
            {"type": "text", "text": b.get("text")}
            if b.get("type") == "text"
            else {"type": "tool_use", "name": b.get("name"), "input": b.get("input")}
            for b in answer.blocks
            if b.get("type") in ("text", "tool_use")
        ]
        if recorded != expected:
            return (
                f"interaction {number} ({name} answer {index + 1}) is not what {where} "
                f"line {turn.line} answers now"
            )
    return None


def interaction_kind(interaction: Interaction) -> str:
    return request_kind(
        interaction.method, interaction.endpoint, interaction.body, interaction.role
    )
