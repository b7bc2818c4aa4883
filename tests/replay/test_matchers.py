"""The match modes as classes (pytest_atom.replay.matchers): the registry by name, and what
each class decides that the replay responder used to test a mode's name for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.replay.matchers import (
    MATCHERS,
    ConversationMatcher,
    Matcher,
    StrictMatcher,
    StructuralMatcher,
    match_key,
    matcher_for,
)
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.settings.modes import DEFAULT_MATCH, MATCH_MODES


def body(result: str = "2 passed", model: str = "claude-x") -> dict[str, Any]:
    """A turn request: the task, a Bash call and its result."""
    return {
        "model": model,
        "messages": [
            {"role": "user", "content": "Fix the tests."},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": result}],
            },
        ],
    }


def interaction(request: dict[str, Any]) -> Interaction:
    return Interaction("POST", "https://api/v1/messages", request, 200, json.dumps({}), {}, {})


def test_the_registry_holds_every_mode_users_can_type_in_their_order() -> None:
    assert tuple(MATCHERS) == MATCH_MODES
    assert all(matcher.name == name for name, matcher in MATCHERS.items())
    assert isinstance(MATCHERS[DEFAULT_MATCH], ConversationMatcher)
    assert isinstance(MATCHERS["structural"], StructuralMatcher)
    assert isinstance(MATCHERS["strict"], StrictMatcher)


def test_an_unknown_mode_name_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown match mode 'loose': choose one of conversation"):
        matcher_for("loose")


def test_only_strict_is_exact() -> None:
    assert [name for name, m in MATCHERS.items() if m.exact] == ["strict"]


def test_each_mode_keys_a_changed_tool_result_as_its_table_says() -> None:
    same = {
        name: match_key("turn", body(), name) == match_key("turn", body("1 failed"), name)
        for name in MATCH_MODES
    }
    assert same == {"conversation": False, "structural": True, "strict": False}


def test_structural_alone_notes_matches_over_differing_tool_results() -> None:
    live, recorded = body("1 failed"), body()
    assert MATCHERS["structural"].results_differ("turn", live, recorded)
    assert not MATCHERS["structural"].results_differ("turn", body(), recorded)
    assert not MATCHERS["conversation"].results_differ("turn", live, recorded)
    assert not MATCHERS["structural"].results_differ("side", live, recorded)


def test_strict_compares_a_divergence_with_the_same_conversation_when_recorded() -> None:
    same = interaction(body(model="claude-old"))
    other = interaction(body("1 failed"))
    live = body()
    assert MATCHERS["strict"].closest_pool("turn", live, [other, same]) == [same]
    assert MATCHERS["strict"].closest_pool("turn", body("9 failed"), [other, same]) == [
        other,
        same,
    ]
    assert MATCHERS["conversation"].closest_pool("turn", live, [other, same]) == [other, same]


def test_structural_shows_tool_results_blanked() -> None:
    blanked: Matcher = MATCHERS["structural"]
    results = [b for t in blanked.turns(body()) for b in t["content"] if b["type"] == "tool_result"]
    assert results == [{"type": "tool_result", "content": "<TOOL_RESULT>", "is_error": False}]


def test_the_responder_takes_a_mode_by_its_name(tmp_path: Path) -> None:
    def responder(**kwargs: Any) -> CassetteResponder:
        return CassetteResponder(
            Cassette(tmp_path / "c.yaml", []), Normalizer({}), Scrubber(env={}), **kwargs
        )

    assert responder().matcher is MATCHERS[DEFAULT_MATCH]
    assert responder(match="strict").matcher is MATCHERS["strict"]
    with pytest.raises(ValueError, match="unknown match mode"):
        responder(match="loose")


def test_each_mode_class_is_registered() -> None:
    """Every mode class of `replay/matchers.py` is registered by the
    ``pytest_atom.match_modes`` entry-point group, and the group registers nothing else."""
    import inspect

    from pytest_atom.replay import matchers

    registered = {type(m) for m in matchers.MATCHERS.values()}
    defined = {
        c
        for _, c in inspect.getmembers(matchers, inspect.isclass)
        if c.__module__ == matchers.__name__ and c is not Matcher
    }
    assert defined == registered
