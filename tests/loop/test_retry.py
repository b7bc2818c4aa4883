from __future__ import annotations

from datetime import datetime

import pytest

from pytest_atom.loop import (
    DEFAULT_SESSION_LIMIT_WAIT,
    SESSION_LIMIT_BUFFER,
    RetryManager,
)

NOW = datetime(2025, 1, 15, 10, 0, 0)  # 10:00 local time
HOUR = 3600


@pytest.fixture
def messages() -> list[tuple[str, int]]:
    return []


@pytest.fixture
def manager(messages: list[tuple[str, int]]) -> RetryManager:
    return RetryManager(lambda msg, sec: messages.append((msg, sec)), clock=lambda: NOW)


def test_success_is_never_retried(manager: RetryManager, messages: list[tuple[str, int]]) -> None:
    assert manager.check("Session limit reached - resets 3pm network", 0) == (False, 0)
    assert messages == []


@pytest.mark.parametrize(
    ("stdout", "seconds"),
    [
        ("Session limit reached ∙ resets 3pm", 5 * HOUR),  # later today
        ("Session limit reached - resets 9am", 23 * HOUR),  # already past: tomorrow
        ("Session limit reached - resets 10am", 24 * HOUR),  # exactly now: tomorrow
        ("Session limit reached - resets 12am", 14 * HOUR),  # midnight
        ("Session limit reached - resets 12pm", 2 * HOUR),  # noon
        ("Session limit reached - resets 11am", 1 * HOUR),
        ("Session limit reached - RESETS 1PM", 3 * HOUR),  # case-insensitive
    ],
)
def test_session_limit_waits_until_reset(manager: RetryManager, stdout: str, seconds: int) -> None:
    assert manager.check(stdout, 1) == (True, seconds + SESSION_LIMIT_BUFFER)


def test_session_limit_uses_clock_minutes() -> None:
    clock = datetime(2025, 1, 15, 14, 30, 15)
    manager = RetryManager(lambda m, s: None, clock=lambda: clock)
    assert manager._parse_reset_time("resets 3pm") == 29 * 60 + 45 + SESSION_LIMIT_BUFFER


@pytest.mark.parametrize(
    "stdout",
    [
        "Session limit reached",
        "Session limit reached - resets 13pm",
        "Session limit reached - resets 0am",
    ],
)
def test_session_limit_without_valid_time_falls_back(manager: RetryManager, stdout: str) -> None:
    assert manager.check(stdout, 1) == (True, DEFAULT_SESSION_LIMIT_WAIT)
    assert DEFAULT_SESSION_LIMIT_WAIT == 3600


def test_session_limit_wins_over_network_keywords(manager: RetryManager) -> None:
    assert manager.check("Session limit reached (connection timeout)", 1, attempt=3) == (
        True,
        DEFAULT_SESSION_LIMIT_WAIT,
    )


def test_parse_reset_time_without_match_is_zero(manager: RetryManager) -> None:
    assert manager._parse_reset_time("no reset time here") == 0


def test_network_backoff_doubles_from_5_and_caps_at_300(manager: RetryManager) -> None:
    waits = [manager.check("network unreachable", 1, attempt=a)[1] for a in range(1, 10)]
    assert waits == [5, 10, 20, 40, 80, 160, 300, 300, 300]


def test_other_backoff_doubles_from_10_and_caps_at_600(manager: RetryManager) -> None:
    waits = [manager.check("boom", 2, attempt=a)[1] for a in range(1, 10)]
    assert waits == [10, 20, 40, 80, 160, 320, 600, 600, 600]


def test_attempt_below_one_counts_as_first(manager: RetryManager) -> None:
    assert manager.check("network", 1, attempt=0) == (True, 5)
    assert manager.check("boom", 1, attempt=-3) == (True, 10)


@pytest.mark.parametrize(
    "stdout", ["NETWORK down", "Request Timeout", "Connection refused", "TEMPORARY failure"]
)
def test_network_keywords_are_case_insensitive(manager: RetryManager, stdout: str) -> None:
    assert manager.check(stdout, 1, attempt=2) == (True, 10)


def test_session_limit_phrase_is_case_sensitive(manager: RetryManager) -> None:
    # As in cc_atoms: only Claude Code's exact phrase means a session limit.
    assert manager.check("session limit reached", 1) == (True, 10)


def test_callback_receives_message_and_seconds(
    manager: RetryManager, messages: list[tuple[str, int]]
) -> None:
    manager.check("connection reset", 1, attempt=2)
    manager.check("segfault", 139, attempt=1)
    manager.check("Session limit reached", 1)
    manager.check("Session limit reached, resets 3pm", 1)
    assert [sec for _, sec in messages] == [10, 10, 3600, 5 * HOUR + SESSION_LIMIT_BUFFER]
    assert "Network error" in messages[0][0] and "attempt 2" in messages[0][0]
    assert "code 139" in messages[1][0] and "10s" in messages[1][0]
    assert "Session limit" in messages[2][0] and "60 minutes" in messages[2][0]
    assert "until reset (305 minutes)" in messages[3][0]


def test_default_callback_writes_to_stderr_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert RetryManager().check("timeout", 1, attempt=1) == (True, 5)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Network error - waiting 5s (attempt 1)" in captured.err


def test_default_clock_is_real_time() -> None:
    wait = RetryManager(lambda m, s: None)._parse_reset_time("resets 3pm")
    assert SESSION_LIMIT_BUFFER < wait <= 24 * HOUR + SESSION_LIMIT_BUFFER
