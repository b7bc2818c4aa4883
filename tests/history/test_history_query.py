"""The history's statistics: the trend's Fisher test is the gate's, computed without scipy."""

from __future__ import annotations

import itertools

import pytest

from pytest_atom.baseline import stats
from pytest_atom.history.query import fisher_drop


def test_the_trends_fisher_test_gives_the_gates_p_values() -> None:
    pytest.importorskip("scipy")
    for c1, n1, c2, n2 in itertools.product(range(9), range(1, 9), range(9), range(1, 9)):
        if c1 <= n1 and c2 <= n2:
            assert fisher_drop((c1, n1), (c2, n2)) == pytest.approx(
                stats.fisher_drop((c1, n1), (c2, n2)), abs=1e-12
            ), (c1, n1, c2, n2)


def test_a_drop_from_all_to_none_over_ten_runs_is_beyond_noise_and_one_failure_is_not() -> None:
    assert fisher_drop((10, 10), (0, 10)) < 1e-4
    assert fisher_drop((10, 10), (9, 10)) == pytest.approx(0.5)
    assert fisher_drop((0, 10), (10, 10)) == 1.0
