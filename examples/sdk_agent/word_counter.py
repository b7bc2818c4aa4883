"""A small Claude Agent SDK app: an agent with one custom, in-process tool.

`count(prompt, options)` is what a spec names (``agent: {sdk: "word_counter:count"}``).
It extends the options the harness passes (the pinned CLI, the attempt folder, the
gateway, the sandbox) with its own system prompt and its ``word_count`` tool, served by an
in-process MCP server, and runs the agent to its end. Outside pytest-atom it runs as is:
``python word_counter.py "Count the words in ..."``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from typing import Any

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ResultMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

SYSTEM_PROMPT = (
    "You count words for the user. Always count with the word_count tool, never by hand, "
    "then write the number to count.txt in the current folder."
)


@tool("word_count", "Count the words of a text (split on whitespace).", {"text": str})
async def word_count(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": str(len(args["text"].split()))}]}


SERVER = create_sdk_mcp_server("words", tools=[word_count])


async def count(prompt: str, options: ClaudeAgentOptions) -> str:
    """Run the agent on `prompt`; its final answer."""
    options = dataclasses.replace(
        options,
        system_prompt=SYSTEM_PROMPT,
        mcp_servers={"words": SERVER},
        allowed_tools=[*options.allowed_tools, "mcp__words__word_count"],
    )
    answer = ""
    async for message in query(prompt=prompt, options=options):
        if isinstance(message, ResultMessage):
            answer = message.result or ""
    return answer


if __name__ == "__main__":
    print(asyncio.run(count(" ".join(sys.argv[1:]), ClaudeAgentOptions())))
