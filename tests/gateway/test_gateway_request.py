"""A gateway request's derived values, and the meter's sums: worked out in one place, once."""

from __future__ import annotations

import json

from pytest_atom.cost.billing import billed
from pytest_atom.cost.prices import RoleBills, cost_usd
from pytest_atom.gateway.server import Meter
from pytest_atom.wire.request import GatewayRequest

MODEL = "claude-sonnet-4-5"


def _request(body: bytes, headers: dict[str, str] | None = None) -> GatewayRequest:
    return GatewayRequest("POST", "/v1/messages?beta=true", headers or {}, body)


def test_a_request_knows_its_endpoint_json_and_role_from_the_start() -> None:
    request = _request(
        json.dumps({"model": MODEL, "tools": [{"name": "Read"}]}).encode(),
        {"x-atom-role": "reflector"},
    )
    assert request.endpoint == "/v1/messages"
    assert request.json == {"model": MODEL, "tools": [{"name": "Read"}]}
    assert request.role == "reflector"
    assert request.kind == "reflector"


def test_a_body_that_is_no_json_reads_as_none_and_an_empty_one_too() -> None:
    assert _request(b"{not json").json is None
    assert _request(b"").json is None


def test_requests_compare_by_what_was_sent_not_by_what_was_worked_out() -> None:
    body = b'{"a": 1}'
    assert _request(body) == _request(body)
    assert _request(body) != _request(b'{"a": 2}')


def test_the_meter_prices_an_answer_it_is_given_no_price_for() -> None:
    used = billed({"input_tokens": 1000, "output_tokens": 200})
    meter = Meter(frozenset({"executor"}))
    meter.add("executor", used, None, MODEL)
    meter.add("executor", used, 0.5, MODEL)
    assert meter.bills.by_role["executor"] == used + used
    assert meter.bills.usd_by_role["executor"] == cost_usd(used, MODEL) + 0.5


def test_role_bills_sum_each_role_apart_and_return_the_price() -> None:
    bills = RoleBills()
    used = billed({"input_tokens": 10, "output_tokens": 5})
    assert bills.add("reflector", used, MODEL) == cost_usd(used, MODEL)
    bills.add("executor", used, MODEL, usd=2.0)
    assert bills.usd_by_role == {"reflector": cost_usd(used, MODEL), "executor": 2.0}
    assert set(bills.by_role) == set(bills.steps) == {"reflector", "executor"}
