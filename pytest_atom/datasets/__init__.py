"""datasets: one spec, many cases.

A spec's ``cases:`` (inline, or a ``.csv``, ``.jsonl``, ``.yaml`` or ``.json`` file beside it)
are read here, and each case's variables render the spec's text fields through Jinja2 (strict
undefined), before the spec loader builds one spec per case.

Where to add: a new case-file format is a reader for its suffix; a new templated field is a key
in the list of fields rendered.

Public: the names in `__all__` (a case, a case file read, cases selected by id); every
module here is private.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_atom.lazy import exports

#: Each public name and the module here that defines it.
_EXPORTS = {
    "Case": "cases",
    "Origin": "cases",
    "read_cases": "readers",
    "select_cases": "select",
}
__all__ = sorted(_EXPORTS)


__getattr__ = exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pytest_atom.datasets.cases import Case, Origin
    from pytest_atom.datasets.readers import read_cases
    from pytest_atom.datasets.select import select_cases
