"""The match modes as classes (pytest_atom.replay.matchers): the registry by name, and what
each class decides that the replay responder used to test a mode's name for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.replay.matchers import (
    ConversationMatcher,
    Matcher,
    StrictMatcher,
    StructuralMatcher,
    matcher_for,
    matchers,
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
    assert tuple(matchers()) == MATCH_MODES
    assert all(matcher.name == name for name, matcher in matchers().items())
    assert isinstance(matchers()[DEFAULT_MATCH], ConversationMatcher)
    assert isinstance(matchers()["structural"], StructuralMatcher)
    assert isinstance(matchers()["strict"], StrictMatcher)


def test_an_unknown_mode_name_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown match mode 'loose': choose one of conversation"):
        matcher_for("loose")


def test_only_strict_is_exact() -> None:
    assert [name for name, m in matchers().items() if m.exact] == ["strict"]


def test_each_mode_keys_a_changed_tool_result_as_its_table_says() -> None:
    same = {
        name: matcher_for(name).key("turn", body())
        == matcher_for(name).key("turn", body("1 failed"))
        for name in MATCH_MODES
    }
    assert same == {"conversation": False, "structural": True, "strict": False}


def test_structural_alone_notes_matches_over_differing_tool_results() -> None:
    live, recorded = body("1 failed"), body()
    assert matchers()["structural"].results_differ("turn", live, recorded)
    assert not matchers()["structural"].results_differ("turn", body(), recorded)
    assert not matchers()["conversation"].results_differ("turn", live, recorded)
    assert not matchers()["structural"].results_differ("side", live, recorded)


def test_strict_compares_a_divergence_with_the_same_conversation_when_recorded() -> None:
    same = interaction(body(model="claude-old"))
    other = interaction(body("1 failed"))
    live = body()
    assert matchers()["strict"].closest_pool("turn", live, [other, same]) == [same]
    assert matchers()["strict"].closest_pool("turn", body("9 failed"), [other, same]) == [
        other,
        same,
    ]
    assert matchers()["conversation"].closest_pool("turn", live, [other, same]) == [other, same]


def test_structural_shows_tool_results_blanked() -> None:
    blanked: Matcher = matchers()["structural"]
    results = [b for t in blanked.turns(body()) for b in t["content"] if b["type"] == "tool_result"]
    assert results == [{"type": "tool_result", "content": "<TOOL_RESULT>", "is_error": False}]


def test_the_responder_takes_a_mode_by_its_name(tmp_path: Path) -> None:
    def responder(**kwargs: Any) -> CassetteResponder:
        return CassetteResponder(
            Cassette(tmp_path / "c.yaml", []), Normalizer({}), Scrubber(env={}), **kwargs
        )

    assert responder().matcher is matchers()[DEFAULT_MATCH]
    assert responder(matcher=matcher_for("strict")).matcher is matchers()["strict"]
    with pytest.raises(ValueError, match="unknown match mode"):
        matcher_for("loose")


def test_each_mode_module_holds_one_registered_matcher() -> None:
    """A match mode is one module: every module of `replay/matchers/` but `base` defines a
    class that the ``pytest_atom.match_modes`` entry-point group registers, and the group
    registers nothing else."""
    import importlib
    import inspect
    import pkgutil

    from pytest_atom.replay import matchers

    registered = {type(m) for m in matchers.matchers().values()}
    defined = set()
    for info in pkgutil.iter_modules(matchers.__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{matchers.__name__}.{info.name}")
        classes = [
            c
            for _, c in inspect.getmembers(module, inspect.isclass)
            if c.__module__ == module.__name__
        ]
        assert len(classes) == 1, f"{info.name}: one Matcher class a module"
        defined.update(classes)
    assert defined == registered
