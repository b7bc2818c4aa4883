"""One spec mapping with ``cases:`` -> one rendered mapping per case, which the spec loader
validates and builds as it builds any spec (its arms expanded after).

A case's `marks` are added to the spec's, its `xfail` replaces the spec's, and its
`repeats`/`pass_at_least` become the rendered spec's top-level keys. A `cassette:` the spec
names becomes a folder of the cases' cassettes, ``<its path without suffix>/<case id>.yaml``.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pytest_atom.datasets.cases import Case, Origin, duplicate_ids, make_case
from pytest_atom.datasets.readers import read_cases
from pytest_atom.datasets.render import TEMPLATED, Templates, put
from pytest_atom.spec.confinement import spec_side
from pytest_atom.spec.document import Document
from pytest_atom.spec.types import Loc
from pytest_atom.spec.validation import Schema


@dataclass(frozen=True)
class Rendered:
    """One case and the spec's mapping rendered for it (without `cases:`)."""

    case: Case
    mapping: dict[str, Any]
    #: Whether the rendered values must be validated again (`Recheck`).
    recheck: bool = True


def expand_cases(
    doc: Document,
    loc: Loc,
    mapping: dict[str, Any],
    schema: Schema,
    cases: list[Case] | None = None,
    free: Collection[str] = (),
) -> list[Rendered]:
    """Every case of the spec at `loc` (its `cases:`, or `cases` read already: a trigger
    suite's prompts), rendered; SpecError names the file and row of a case that cannot be used."""
    if cases is None:
        cases = read_spec_cases(doc, loc + ("cases",), mapping["cases"])
    duplicate_ids(cases)
    templates = Templates(doc, loc, mapping, free)
    base = {k: v for k, v in mapping.items() if k != "cases"}
    recheck = Recheck(doc, loc, base, templates, schema)
    out = []
    for case in cases:
        templates.check(case)
        rendered = templates.render(base, case)
        out.append(Rendered(case, _with_case_keys(rendered, case), recheck.needed(rendered)))
    return out


class Recheck:
    """Which renderings must be validated again. The spec was validated as written, and a
    templated string's text matters only where a constraint reads it. Each template's place
    is probed once, with an empty string and with a string no pattern or enum accepts: where
    neither fails, no rendering can; where only the empty one fails, an empty rendering is
    validated again; where the other fails, every rendering is."""

    def __init__(
        self, doc: Document, loc: Loc, base: dict[str, Any], templates: Templates, schema: Schema
    ) -> None:
        self.always = False
        self.non_empty: list[Loc] = []
        for found in templates.found:
            if found.at[0] == "arms":
                continue  # an arm's rendering is validated with its arm, always
            if not _passes(doc, loc, base, found.at, "\x00", schema):
                self.always = True
            elif not _passes(doc, loc, base, found.at, "", schema):
                self.non_empty.append(found.at)

    def needed(self, rendered: dict[str, Any]) -> bool:
        return self.always or any(_at(rendered, at) == "" for at in self.non_empty)


def _passes(
    doc: Document, loc: Loc, base: dict[str, Any], at: Loc, probe: str, schema: Schema
) -> bool:
    """Whether the spec validates with the string at `at` replaced by `probe`."""
    part = copy.deepcopy(templated_part(base))
    put(part, at, probe)
    return bool(schema.validator.is_valid(case_view(doc, loc, part).data))


def _at(mapping: dict[str, Any], at: Loc) -> Any:
    value: Any = mapping
    for key in at:
        value = value[key]
    return value


def read_spec_cases(doc: Document, at: Loc, value: Any) -> list[Case]:
    """The cases written at `at`, inline or from the file beside the spec that `value` names."""
    if isinstance(value, str):
        return read_cases(spec_side(doc, at, value, "file"))
    cases = []
    for i, row in enumerate(value):
        origin = Origin(doc.path, doc.line(at + (i,)), f"case {i + 1}")
        cases.append(make_case(row, origin, i, text=False))
    return cases


def _with_case_keys(mapping: dict[str, Any], case: Case) -> dict[str, Any]:
    if case.marks:
        mapping["marks"] = [*mapping.get("marks", []), *copy.deepcopy(case.marks)]
    if case.xfail is not None:
        mapping["xfail"] = case.xfail
    if case.repeats is not None:
        mapping["repeats"] = case.repeats
    if case.pass_at_least is not None:
        mapping["pass_at_least"] = case.pass_at_least
    cassette = mapping.get("cassette")
    if isinstance(cassette, str):
        path = PurePosixPath(cassette)
        mapping["cassette"] = str(path.with_suffix("") / f"{case.id}{path.suffix or '.yaml'}")
    return mapping


def case_view(doc: Document, loc: Loc, mapping: dict[str, Any]) -> Document:
    """`doc` with the spec at `loc` replaced by its rendering for one case, errors at its lines."""
    view = copy.copy(doc)
    if loc:
        data = dict(doc.data)
        specs = list(data["specs"])
        specs[int(loc[1])] = mapping
        data["specs"] = specs
        view.data = data
    else:
        view.data = mapping
    return view


def templated_part(mapping: dict[str, Any]) -> dict[str, Any]:
    """The keys of a rendered spec templates may have changed (and its task), validated per case."""
    return {key: mapping[key] for key in TEMPLATED if key in mapping}
