"""Messages-API streams in the shapes the real API sends, for the usage fold and the transcript.

Built from the public documentation (streaming: cumulative ``message_delta`` usage;
server tools: ``server_tool_use`` and ``*_tool_result`` blocks, ``usage.server_tool_use``;
citations: ``citations_delta``; compaction: a ``compaction`` block filled by
``compaction_delta``s and a ``compaction`` step in ``usage.iterations``; the advisor tool:
``advisor_message`` steps with their own ``model``) and from what real recordings showed:
a ``message_delta`` that sends ``cache_read_input_tokens: 0`` after ``message_start``
reported 55,096. The counts are chosen so that the figures the issue quotes come out:
17,117 (the old fold), 72,213 (Claude Code's total) and 72,396 (what the API billed) for
the compaction stream; 19,496 and 22,057 for the advisor stream.
"""

from __future__ import annotations

import json
from typing import Any

MODEL = "claude-opus-5-5"
ADVISOR = "claude-fable-5"


def sse(*events: tuple[str, dict[str, Any]]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def _start(usage: dict[str, Any], model: str = MODEL) -> tuple[str, dict[str, Any]]:
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": model}
    return "message_start", {"type": "message_start", "message": {**message, "usage": usage}}


def _block(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_start", {
        "type": "content_block_start",
        "index": index,
        "content_block": block,
    }


def _delta(index: int, **delta: Any) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}


def _stop(index: int) -> tuple[str, dict[str, Any]]:
    return "content_block_stop", {"type": "content_block_stop", "index": index}


def _end(usage: dict[str, Any], reason: str = "end_turn") -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": usage},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


#: Compaction: the start reads 55,096 from the cache; the end's cumulative usage says 0 for
#: it, and lists the compaction step (183 tokens) that Claude Code leaves out.
COMPACTION = sse(
    _start(
        {
            "input_tokens": 3,
            "cache_creation_input_tokens": 16914,
            "cache_read_input_tokens": 55096,
            "output_tokens": 1,
            "service_tier": "standard",
        }
    ),
    ("ping", {"type": "ping"}),
    _block(0, {"type": "compaction", "content": ""}),
    _delta(0, type="compaction_delta", content="Summary: the user asked for a parser; "),
    _delta(0, type="compaction_delta", content="tests in tests/test_parse.py pass."),
    _stop(0),
    _block(1, {"type": "text", "text": ""}),
    _delta(1, type="text_delta", text="Continuing from the summary."),
    _stop(1),
    *_end(
        {
            "input_tokens": 3,
            "cache_creation_input_tokens": 16914,
            "cache_read_input_tokens": 0,
            "output_tokens": 200,
            "iterations": [
                {"type": "compaction", "input_tokens": 150, "output_tokens": 33},
                {
                    "type": "message",
                    "input_tokens": 3,
                    "cache_creation_input_tokens": 16914,
                    "cache_read_input_tokens": 55096,
                    "output_tokens": 200,
                },
            ],
        }
    ),
)
COMPACTION_CLI_TOKENS = 72213  # what Claude Code's totals say: the top-level usage
COMPACTION_BILLED = 72396
COMPACTION_OLD_FOLD = 17117  # the 0 wiped the 55,096

#: The advisor: a server tool call, its advice, and the advisor model's own step.
ADVISOR_STREAM = sse(
    _start(
        {
            "input_tokens": 5,
            "cache_creation_input_tokens": 1200,
            "cache_read_input_tokens": 18000,
            "output_tokens": 1,
        }
    ),
    _block(0, {"type": "server_tool_use", "id": "srvtoolu_01", "name": "advisor", "input": {}}),
    _delta(0, type="input_json_delta", partial_json=""),
    _stop(0),
    _block(
        1,
        {
            "type": "advisor_tool_result",
            "tool_use_id": "srvtoolu_01",
            "content": {"type": "advisor_result", "text": "Write the failing test first."},
        },
    ),
    _stop(1),
    _block(2, {"type": "text", "text": ""}),
    _delta(2, type="text_delta", text="Following the advice."),
    _stop(2),
    *_end(
        {
            "input_tokens": 5,
            "cache_creation_input_tokens": 1200,
            "cache_read_input_tokens": 18000,
            "output_tokens": 291,
            "iterations": [
                {"type": "message", "input_tokens": 2, "output_tokens": 85},
                {
                    "type": "advisor_message",
                    "model": ADVISOR,
                    "input_tokens": 2100,
                    "output_tokens": 461,
                },
                {
                    "type": "message",
                    "input_tokens": 3,
                    "cache_creation_input_tokens": 1200,
                    "cache_read_input_tokens": 18000,
                    "output_tokens": 206,
                },
            ],
        }
    ),
)
ADVISOR_MESSAGE_TOKENS = 19496
ADVISOR_BILLED = 22057

#: A web search, its hits, a fetched page, code execution, and an answer that cites a hit.
SEARCH_STREAM = sse(
    _start({"input_tokens": 2679, "cache_read_input_tokens": 0, "output_tokens": 3}),
    _block(0, {"type": "server_tool_use", "id": "srvtoolu_s", "name": "web_search", "input": {}}),
    _delta(0, type="input_json_delta", partial_json='{"query": "pytest'),
    _delta(0, type="input_json_delta", partial_json=' fixtures"}'),
    _stop(0),
    _block(
        1,
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_s",
            "content": [
                {
                    "type": "web_search_result",
                    "title": "How to use fixtures",
                    "url": "https://docs.pytest.org/en/stable/how-to/fixtures.html",
                    "encrypted_content": "EqgfCioIARgBIiQ3",
                    "page_age": "April 30, 2025",
                }
            ],
        },
    ),
    _stop(1),
    _block(2, {"type": "server_tool_use", "id": "srvtoolu_f", "name": "web_fetch", "input": {}}),
    _delta(2, type="input_json_delta", partial_json='{"url": "https://example.com/a"}'),
    _stop(2),
    _block(
        3,
        {
            "type": "web_fetch_tool_result",
            "tool_use_id": "srvtoolu_f",
            "content": {
                "type": "web_fetch_result",
                "url": "https://example.com/a",
                "content": {
                    "type": "document",
                    "source": {
                        "type": "text",
                        "media_type": "text/plain",
                        "data": "Fetched page text.",
                    },
                    "title": "Example A",
                },
                "retrieved_at": "2025-08-25T10:30:00Z",
            },
        },
    ),
    _stop(3),
    _block(
        4,
        {"type": "server_tool_use", "id": "srvtoolu_c", "name": "bash_code_execution", "input": {}},
    ),
    _delta(4, type="input_json_delta", partial_json='{"command": "python -c \\"print(6*7)\\""}'),
    _stop(4),
    _block(
        5,
        {
            "type": "bash_code_execution_tool_result",
            "tool_use_id": "srvtoolu_c",
            "content": {
                "type": "bash_code_execution_result",
                "stdout": "42\n",
                "stderr": "",
                "return_code": 0,
            },
        },
    ),
    _stop(5),
    _block(6, {"type": "text", "text": "", "citations": []}),
    _delta(
        6,
        type="citations_delta",
        citation={
            "type": "web_search_result_location",
            "url": "https://docs.pytest.org/en/stable/how-to/fixtures.html",
            "title": "How to use fixtures",
            "encrypted_index": "Eo8BCioIAhgBIiQy",
            "cited_text": "Fixtures are requested by test functions by declaring them as arguments.",
        },
    ),
    _delta(6, type="text_delta", text="Declare the fixture as an argument."),
    _stop(6),
    *_end(
        {
            "input_tokens": 10682,
            "cache_read_input_tokens": 0,
            "output_tokens": 510,
            "server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 1},
        }
    ),
)
SEARCH_BILLED = 10682 + 510
