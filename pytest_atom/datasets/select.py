"""What front ends do with cases: which run (`atom run --case ID`; pytest selects cases
with ``-k``, by item name), and the property that tells a result's case, which the pooled
statistics (`pytest_atom.baseline.measure.case_lines`) group by."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from pytest_atom.spec.types import Spec


def select_cases(specs: Sequence[Spec], ids: Sequence[str]) -> tuple[list[Spec], str | None]:
    """The specs of the cases `ids` names (all when none), and what is wrong with an unknown id."""
    if not ids:
        return list(specs), None
    known = list(dict.fromkeys(s.case for s in specs if s.case is not None))
    unknown = [i for i in ids if i not in known]
    if unknown:
        if not known:
            return [], f"--case {unknown[0]}: no spec here has cases (`cases:`)"
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f" — did you mean {close[0]!r}?" if close else ""
        shown = ", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
        return [], f"--case {unknown[0]} is no case of these specs (cases: {shown}){hint}"
    return [s for s in specs if s.case in ids], None


def case_properties(spec: Spec) -> dict[str, str]:
    """``atom_case`` of a case's run, which the statistics pool a spec's cases by."""
    return {} if spec.case is None else {"atom_case": spec.case}
