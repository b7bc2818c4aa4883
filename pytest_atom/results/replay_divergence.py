"""A replay divergence as a spec's result carries it: a `str` (the trace, HTML and JUnit
take the text as it is) whose `kind` and `cause` the reports read instead of parsing it.
"""

from __future__ import annotations


class ReplayDivergence(str):
    """One request a replay could not match: `detail` describes it, `kind` is the kind of
    request (``turn``, ``reflector``, ``planner``, … or ``mcp`` for an MCP request the tape
    lacks), and `cause` the likely cause, given on the first one only."""

    kind: str
    cause: str | None
    detail: str

    def __new__(cls, detail: str, kind: str = "turn", cause: str | None = None) -> ReplayDivergence:
        text = f"{cause}\n{detail}" if cause else detail
        divergence = super().__new__(cls, text)
        divergence.kind, divergence.cause, divergence.detail = kind, cause, detail
        return divergence

    @property
    def headline(self) -> str:
        """The first line: the cause where there is one, else the request that diverged."""
        return self.cause or self.detail.partition("\n")[0]

    @property
    def agents(self) -> bool:
        """Whether the agent's own session diverged (an MCP request counts), not only the
        reflector's input."""
        return self.kind != "reflector"
