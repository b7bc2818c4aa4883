"""Cassette helpers several test modules share: request bodies, recorded interactions, a
replaying gateway and a client that posts to it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from pytest_atom.gateway import Gateway
from pytest_atom.gateway.messages import message
from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber

URI = "https://api.anthropic.com/v1/messages"


TOOLS = [{"name": "Bash", "description": "run a command", "input_schema": {"type": "object"}}]


def reply_msg(text: str, n: int = 1) -> dict[str, Any]:
    return message(
        f"msg_{n:04d}",
        "claude-x",
        [{"type": "text", "text": text}],
        input_tokens=10,
        output_tokens=5,
    )


def turn_body(result: str = "2 passed", prompt: str = "Fix the tests.") -> dict[str, Any]:
    return {
        "model": "claude-x",
        "max_tokens": 1000,
        "tools": TOOLS,
        "messages": [
            {"role": "user", "content": prompt},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01ABC",
                        "name": "Bash",
                        "input": {"command": "pytest"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01ABC", "content": result}
                ],
            },
        ],
    }


def recorded(body: Any, response: dict[str, Any]) -> Interaction:
    """An interaction as a recording stores it: body normalized, response as JSON text."""
    return Interaction(
        "POST",
        URI,
        Normalizer({}).body(body),
        200,
        json.dumps(response),
        {"content-type": "application/json"},
        {"content-type": "application/json"},
    )


def replayer(interactions: list[Interaction], tmp_path: Path, **kwargs: Any) -> CassetteResponder:
    return CassetteResponder(
        Cassette(tmp_path / "c.yaml", interactions), Normalizer({}), Scrubber(env={}), **kwargs
    )


@contextmanager
def serve(responder: Any) -> Iterator[Gateway]:
    with Gateway(responder) as gateway:
        yield gateway


def post(gateway: Gateway, body: Any, **headers: str) -> httpx.Response:
    return httpx.post(gateway.url + "/v1/messages", json=body, headers=headers, timeout=30)
