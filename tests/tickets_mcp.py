"""A small stdio MCP server on the official SDK's FastMCP, for the MCP recording tests.

`get` answers with the ticket system's API key, as a careless server might: the recording
must scrub it. Tickets live in the process, so `get` sees what `create` filed in the session.
"""

from __future__ import annotations

import os

try:  # mcp 2 renamed FastMCP to MCPServer, with the same decorators
    from mcp.server.mcpserver import MCPServer as FastMCP
except ImportError:  # mcp 1
    from mcp.server.fastmcp import FastMCP  # type: ignore[no-redef,attr-defined]

server = FastMCP("tickets")
TICKETS: dict[str, str] = {}


@server.tool()
def create(title: str) -> str:
    """File a ticket; returns its id."""
    ticket = f"T-{len(TICKETS) + 1}"
    TICKETS[ticket] = title
    return f"filed {ticket}: {title}"


@server.tool()
def get(ticket: str) -> str:
    """A ticket's title, and the token to reach it through the API."""
    title = TICKETS.get(ticket, "no such ticket")
    return f"{ticket}: {title} (api token {os.environ.get('TICKETS_API_KEY', 'none')})"


@server.tool()
def where() -> str:
    """The folder the server works in: a run's own path, which a recording normalizes."""
    return os.getcwd()


if __name__ == "__main__":
    server.run()
