"""What re-recording a cassette would cost: its answers' usage at today's prices.

A cassette holds every answer of a recording with the usage the API reported, priced here by
the model each request asked for: ``atom cassette cost`` prints it before anything is spent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_atom.cost.billing import Billed
from pytest_atom.cost.prices import cost_usd
from pytest_atom.gateway.messages import answer_billed
from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.replay.transcript import is_messages


@dataclass
class Estimate:
    """A cassette's answers: how many, what they billed (by role), what they cost today."""

    answers: int = 0
    used: Billed = field(default_factory=Billed)
    usd: float = 0.0
    usd_by_role: dict[str, float] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return self.used.tokens


def interaction_billed(interaction: Interaction) -> tuple[Billed, str | None] | None:
    """What one recorded Messages-API answer billed, and the model it is priced as (the
    request's, else the answer's); None for anything that bills nothing."""
    if not is_messages(interaction) or interaction.status >= 400:
        return None
    body = interaction.body if isinstance(interaction.body, dict) else {}
    return answer_billed(interaction.response, body.get("model"))


def estimate(cassette: Cassette) -> Estimate:
    """What the cassette's answers cost at today's prices."""
    found = Estimate()
    for interaction in cassette.interactions:
        answer = interaction_billed(interaction)
        if answer is None:
            continue
        used, model = answer
        usd = cost_usd(used, model)
        role = interaction.role or "executor"
        found.answers += 1
        found.used += used
        found.usd += usd
        found.usd_by_role[role] = found.usd_by_role.get(role, 0.0) + usd
    return found
