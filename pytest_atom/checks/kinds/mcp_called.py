"""``mcp_called: {server, tool}``: the agent called a tool of this MCP server (named
``mcp__<server>__<tool>``), any of its tools when ``tool`` is left out."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.params import from_value, object_schema, param, to_params
from pytest_atom.checks.trajectory import listing, times
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


@dataclass(frozen=True)
class Params:
    server: str = param(minLength=1, description="The MCP server's name, as configured.")
    tool: str | None = param(
        optional=True, minLength=1, description="One of its tools; any of them when left out."
    )


class McpCalled(BuiltinKind):
    name = "mcp_called"
    schema: Mapping[str, Any] = object_schema(
        Params,
        "The agent called a tool of this MCP server (named mcp__<server>__<tool>).",
    )
    reads_run = True

    def build(self, entry: Entry, value: dict[str, Any]) -> dict[str, Any]:
        return to_params(from_value(Params, value))

    def describe(self, params: Mapping[str, Any]) -> str:
        tool = params.get("tool")
        return f"mcp_called {params['server']}" + (f"/{tool}" if tool else "")

    def run(self, check: Check, scene: Scene) -> CheckResult:
        run = scene.agent_run
        server, tool = _mcp_name(check.params["server"]), check.params.get("tool")
        # By the whole name, not the mark's split: a server's own name may hold ``__``.
        prefix = f"mcp__{server}__"
        mcp = [c for c in run.calls if c.marked("mcp")]
        served = [c for c in mcp if c.name.startswith(prefix)]
        mine = [c for c in served if tool is None or c.name == prefix + _mcp_name(tool)]
        what = f"tool {tool} of MCP server {server}" if tool else f"MCP server {server}"
        if mine:
            return CheckResult(check, True, f"{what} was called {times(len(mine))}", listing(mine))
        evidence = f"MCP calls:\n{listing(mcp)}" if mcp else f"calls made: {run.tools()}"
        return CheckResult(check, False, f"{what} was never called", evidence)


KIND = McpCalled()


def _mcp_name(name: str) -> str:
    """A server or tool name as Claude Code writes it into ``mcp__<server>__<tool>``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)
