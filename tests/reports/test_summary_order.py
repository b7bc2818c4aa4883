"""The summary table: the same node ids and order from `pytest --atom`, with and without
xdist, and from `atom run`, so a person can compare the runs line by line."""

from __future__ import annotations

import pytest

from tests.frontends_helpers import ORDER, FrontEnds, summary


@pytest.mark.slow
def test_ids_and_order_agree_across_pytest_xdist_and_atom_run(front_ends: FrontEnds) -> None:
    """The shared project's first spec is slow, so under xdist it finishes last though it
    was collected first; file a's names are not in sort order. Every table lists the node
    ids in collection order (serially, the two shards' tables in group order)."""
    serial = [*summary(front_ends.output("shard1")), *summary(front_ends.output("shard2"))]
    assert serial == ORDER
    assert list(summary(front_ends.output("xdist"))) == ORDER
    assert list(summary(front_ends.output("atom"))) == ORDER
