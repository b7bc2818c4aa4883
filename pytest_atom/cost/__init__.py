"""Cost: what a run billed and may spend.

`billing` folds one Messages-API answer's usage; `prices` is what the API charges per token,
per model; `usage` splits a call's tokens and dollars by session role (and `Dollars`, the
one rule every report shows dollars by); `limits` is a spec's budgets, enforced while an
agent runs; `spend` is the session's spending limit and the `Crossing` a limit reports.

Where to add: a new budget is a key in `limits` (and the spec schema's ``limits:``).

Public: the names in `__all__`; every module here is private.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_atom.lazy import exports

#: Each public name and the module here that defines it.
_EXPORTS = {
    "Billed": "billing",
    "SpendLimit": "spend",
    "billed": "billing",
}
__all__ = sorted(_EXPORTS)


__getattr__ = exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pytest_atom.cost.billing import Billed, billed
    from pytest_atom.cost.spend import SpendLimit
