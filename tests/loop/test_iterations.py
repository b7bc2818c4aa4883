from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from pytest_atom.loop import IterationHistory

T0 = datetime(2025, 1, 15, 10, 0, 0, tzinfo=UTC)


def test_entries_keep_order_number_timestamp_and_fields() -> None:
    times = iter([T0, T0 + timedelta(seconds=90)])
    history = IterationHistory(clock=lambda: next(times))
    history.add_iteration(1, {"stdout": "first", "returncode": 0})
    history.add_iteration(2, {"stdout": "second", "returncode": 1, "duration": 1.5})
    assert history.get_all_iterations() == [
        {
            "iteration": 1,
            "timestamp": "2025-01-15T10:00:00+00:00",
            "stdout": "first",
            "returncode": 0,
        },
        {
            "iteration": 2,
            "timestamp": "2025-01-15T10:01:30+00:00",
            "stdout": "second",
            "returncode": 1,
            "duration": 1.5,
        },
    ]
    assert len(history) == 2


def test_missing_fields_get_defaults_and_own_keys_win() -> None:
    history = IterationHistory(clock=lambda: T0)
    history.add_iteration(3, {"iteration": 99, "timestamp": "forged"})
    (entry,) = history.get_all_iterations()
    assert entry == {
        "iteration": 3,
        "timestamp": "2025-01-15T10:00:00+00:00",
        "stdout": "",
        "returncode": -1,
    }


def test_timestamps_are_converted_to_utc() -> None:
    paris = timezone(timedelta(hours=1))
    history = IterationHistory(clock=lambda: datetime(2025, 1, 15, 11, 0, tzinfo=paris))
    history.add_iteration(1, {})
    naive = IterationHistory(clock=lambda: datetime(2025, 1, 15, 10, 0))
    naive.add_iteration(1, {})
    expected = "2025-01-15T10:00:00+00:00"
    assert history.get_all_iterations()[0]["timestamp"] == expected
    assert naive.get_all_iterations()[0]["timestamp"] == expected


@pytest.mark.skipif(not hasattr(time, "tzset"), reason="needs time.tzset (POSIX)")
def test_naive_clock_means_utc_not_local_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        history = IterationHistory(clock=lambda: datetime(2025, 1, 15, 10, 0))
        history.add_iteration(1, {})
    finally:
        monkeypatch.undo()
        time.tzset()
    assert history.get_all_iterations()[0]["timestamp"] == "2025-01-15T10:00:00+00:00"


def test_default_clock_is_aware_utc_now() -> None:
    before = datetime.now(UTC)
    history = IterationHistory()
    history.add_iteration(1, {"stdout": "x", "returncode": 0})
    stamp = datetime.fromisoformat(history.get_all_iterations()[0]["timestamp"])
    assert stamp.utcoffset() == timedelta(0)
    assert before <= stamp <= datetime.now(UTC)


def test_get_all_iterations_returns_a_copy() -> None:
    history = IterationHistory(clock=lambda: T0)
    result = {"stdout": "out", "returncode": 0}
    history.add_iteration(1, result)
    result["stdout"] = "changed by caller"
    copy = history.get_all_iterations()
    copy[0]["stdout"] = "mutated"
    copy.append({"iteration": 2})
    assert history.get_all_iterations()[0]["stdout"] == "out"
    assert len(history) == 1


def test_summary_counts_iterations() -> None:
    history = IterationHistory(clock=lambda: T0)
    assert history.get_summary() == "0 iterations completed"
    assert len(history) == 0
    for i in range(1, 4):
        history.add_iteration(i, {"stdout": "", "returncode": 0})
    assert history.get_summary() == "3 iterations completed"
