"""Why a replay diverged: its divergences, led by their likely cause and the command that
fixes it (re-record, refresh for another Claude Code, re-judge)."""

from __future__ import annotations

from pytest_atom.agents.protocol import agent_kind
from pytest_atom.replay.divergence import Divergence
from pytest_atom.replay.recording import ModelSource, record_command, rejudge_command
from pytest_atom.replay.staleness import CASE_CHANGED, PROMPT_CHANGED, spec_hash
from pytest_atom.results.drift import ReplayDivergence
from pytest_atom.spec.types import Spec


def divergence_report(
    spec: Spec, source: ModelSource, cli_version: str | None
) -> list[ReplayDivergence]:
    """A replay's divergences, led by their likely cause; the first one in full detail."""
    tape = source.tape
    misses = [ReplayDivergence(miss, "mcp") for miss in source.mcp_misses()]
    if misses:
        # An MCP answer the recording lacks comes first: what the agent did next (and any
        # conversation divergence) follows from the error the stand-in gave in its place.
        head = (
            "likely cause: an MCP server was asked what the recording never saw; re-record it "
            f"with: {record_command(spec, 'all')}"
        )
        misses[0] = ReplayDivergence(misses[0].detail, "mcp", head)
    if tape is None or not tape.divergences:
        return misses
    first, *rest = tape.divergences
    causes = []
    metadata = tape.cassette.metadata
    if first.kind == "reflector" and not any(d.kind == "turn" for d in rest):
        causes.append(
            "the reflector's input changed (checks or criteria): the agent's sessions replayed, "
            f"re-judge them with: {rejudge_command(spec)}"
        )
    elif case := next((r for r in source.stale_reasons if r.startswith(CASE_CHANGED)), None):
        causes.append(f"{case}: re-record it with: {record_command(spec, 'all')}")
    elif any(r.kind == "prompt" for r in source.stale_reasons) or (
        "prompt_hash" not in metadata and metadata.get("spec_hash") not in (None, spec_hash(spec))
    ):
        causes.append(f"{PROMPT_CHANGED}: re-record it with: {record_command(spec, 'all')}")
    causes += _where_causes(spec, first, metadata.get("claude_code_version"), cli_version, causes)
    lead = "likely cause: " + "; ".join(causes) if causes else "cause unknown"
    # Claude Code retries and falls back on a failed request: one divergence, sent again.
    first_text = first.describe(limit=None)
    seen = {first_text}
    report = [ReplayDivergence(first_text, first.kind, lead)]
    for divergence in rest:
        text = divergence.describe()
        if text not in seen and divergence.describe(limit=None) != first_text:
            seen.add(text)
            report.append(ReplayDivergence(text, divergence.kind))
    return misses + report


def _where_causes(
    spec: Spec,
    first: Divergence,
    recorded: str | None,
    live: str | None,
    known: list[str],
) -> list[str]:
    """The cause that where the first divergence lies points to. Another Claude Code
    version is blamed only when nothing but Claude Code's own parts of the request differ:
    when the conversation itself differs, that is the cause, whatever the version."""
    where = first.where()
    other_version = bool(recorded and live and recorded != live)
    if where is None or where[0] == "played":
        return []
    kind, labels = where
    if kind == "system" and spec.agent is not None:
        return [
            f"{agent_kind(spec.agent.kind).noun}'s system prompt changed since recording ({spec.agent.value} sets "
            f"it; the conversation is the same): re-record it with: {record_command(spec, 'all')}"
        ]
    if kind == "machine":
        return [
            f"a machine detail differs ({', '.join(labels)}): the cassette was recorded on "
            "another machine, and pytest-atom does not mask this detail yet; the default "
            "--atom-match=conversation ignores it"
        ]
    if kind == "cli":
        if other_version:
            return [
                f"recorded with another Claude Code version ({recorded}; this run {live}), and "
                "strict matching compares Claude Code's own parts of the request too; refresh "
                f"the cassette for this CLI with: {record_command(spec, 'refresh')}"
            ]
        return [
            "Claude Code's own parts of the request differ (its settings or environment), the "
            "conversation does not; the default --atom-match=conversation ignores them"
        ]
    if known:  # the prompt or the reflector's input changed: the conversation says so
        return []
    if kind == "tool_result":
        also = (
            f", or Claude Code {live} words its own part of it unlike {recorded}"
            if other_version
            else ""
        )
        return [
            "a tool result differs from the recording: the workspace or a command's output "
            f"changed since recording{also} (--atom-match=structural ignores tool results)"
        ]
    return ["the conversation differs from the recording (below)"]
