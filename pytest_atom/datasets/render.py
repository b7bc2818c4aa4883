"""The spec's templates: its text fields that hold ``{{ name }}``, compiled once per spec by
Jinja2 (a sandboxed environment, strict undefined) and rendered once per case.

Only the fields in `TEMPLATED` are read, at any depth; a string without ``{{``, ``{%`` or
``{#`` is left as it is. What each template uses is found before any case renders, so a case
missing a variable, or holding one no template uses, is refused with its own row or line.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_atom.datasets.cases import Case
from pytest_atom.spec.document import Document
from pytest_atom.spec.types import Loc
from pytest_atom.spec.validation import label

if TYPE_CHECKING:
    from jinja2 import Template

#: The spec's keys whose strings are templates.
TEMPLATED = (
    "prompt",
    "description",
    "request",
    "workspace",
    "setup",
    "accept",
    "criteria",
    "env",
    "script",
    "steps",
    "user",
)
_MARKERS = ("{{", "{%", "{#")


@dataclass(frozen=True)
class Found:
    """One template: where it sits and the variables it reads; `pieces` when it is only text
    and ``{{ name }}`` (most are), which render by joining, without a Jinja2 context."""

    at: Loc
    template: Template
    variables: frozenset[str]
    pieces: tuple[tuple[bool, str], ...] | None = None  # (is a variable, its name or text)

    def render(self, values: Mapping[str, Any]) -> str:
        if self.pieces is None:
            return self.template.render(values)
        return "".join(str(values[part]) if name else part for name, part in self.pieces)


class Templates:
    """Every template of one spec mapping (its arms' overlays included), compiled."""

    def __init__(
        self, doc: Document, loc: Loc, mapping: Mapping[str, Any], free: Collection[str] = ()
    ) -> None:
        """`free`: variables a case may hold though no template reads them (a trigger label)."""
        from jinja2 import StrictUndefined, TemplateSyntaxError, meta
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(
            undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False
        )
        self.doc, self.loc, self.env, self.free = doc, loc, env, frozenset(free)
        self.found: list[Found] = []
        self.used: dict[str, Loc] = {}  # each variable, and the first template reading it
        for at, text in _strings(mapping):
            # Parsing finds a broken tag; compiling finds an unknown filter or test (a
            # TemplateAssertionError): either is the spec's mistake, at its line.
            try:
                tree = env.parse(text)
                template = env.from_string(tree)
            except TemplateSyntaxError as exc:  # TemplateAssertionError among them
                raise doc.error(
                    f"{label(loc + at)!r} is not a valid template: {exc.message} (template "
                    f"line {exc.lineno}); write {{{{ name }}}} for a case's variable, "
                    "{{ name | filter }} with one of Jinja2's built-in filters",
                    loc + at,
                    suggestion=_close_name(exc.message or "", env),
                ) from None
            names = frozenset(meta.find_undeclared_variables(tree))
            self.found.append(Found(at, template, names, _pieces(tree)))
            for name in sorted(names):
                self.used.setdefault(name, at)

    def check(self, case: Case) -> None:
        """Refuse a case that lacks a variable a template reads, or holds one none reads."""
        have = {*case.variables, "id"}
        for name, at in self.used.items():
            if name not in have:
                close = difflib.get_close_matches(name, list(case.variables), n=1)
                raise case.origin.error(
                    f"case {case.id!r} lacks variable {name!r}, which the template in "
                    f"{label(self.loc + at)!r} (line {self._line(at)} of "
                    f"{self.doc.path.name}) reads: give every case a {name!r} value (a "
                    f"column of the CSV), or remove {{{{ {name} }}}} from the spec",
                    suggestion=close[0] if close else None,
                )
        for name in case.variables:
            if name not in self.used and name not in self.free:
                close = difflib.get_close_matches(name, list(self.used), n=1)
                raise case.origin.error(
                    f"case {case.id!r} holds {name!r}, which no template reads: remove it "
                    f"from the cases, or use {{{{ {name} }}}} in the spec's "
                    f"{', '.join(TEMPLATED)}",
                    suggestion=close[0] if close else None,
                )

    def render(self, mapping: Mapping[str, Any], case: Case) -> dict[str, Any]:
        """`mapping` with each template rendered for `case` (copied where it changes)."""
        from jinja2 import TemplateError

        out = dict(mapping)
        for key in {str(f.at[0]) for f in self.found}:
            out[key] = copy.deepcopy(mapping[key])
        values = {**case.variables, "id": case.id}
        for found in self.found:
            try:
                text = found.render(values)
            except Exception as exc:  # noqa: BLE001 - whatever a case's template raises (an
                # undefined name, the sandbox's SecurityError) is that case's mistake
                raise case.origin.error(
                    f"case {case.id!r} cannot render {label(self.loc + found.at)!r} (line "
                    f"{self._line(found.at)} of {self.doc.path.name}): "
                    f"{exc if isinstance(exc, TemplateError) else f'{type(exc).__name__}: {exc}'}",
                    suggestion=_close_name(str(exc), self.env),
                ) from None
            put(out, found.at, text)
        return out

    def _line(self, at: Loc) -> int | str:
        node = self.doc.values.get(self.loc + at)
        return node.start_mark.line + 1 if node is not None else "?"


def _close_name(message: str, env: Any) -> str | None:
    """For "No filter named 'lowr'." (or test): the built-in one meant, if one is close."""
    match = re.match(r"No (filter|test) named '([^']+)'", message)
    if match is None:
        return None
    known = env.filters if match[1] == "filter" else env.tests
    close = difflib.get_close_matches(match[2], list(known), n=1)
    return close[0] if close else None


def _pieces(tree: Any) -> tuple[tuple[bool, str], ...] | None:
    """A template's text and plain ``{{ name }}`` parts; None when Jinja2 must render it."""
    from jinja2 import nodes

    pieces: list[tuple[bool, str]] = []
    for node in tree.body:
        if not isinstance(node, nodes.Output):
            return None
        for part in node.nodes:
            if isinstance(part, nodes.TemplateData):
                pieces.append((False, part.data))
            elif isinstance(part, nodes.Name) and part.ctx == "load":
                pieces.append((True, part.name))
            else:
                return None
    return tuple(pieces)


def _strings(mapping: Mapping[str, Any]) -> Iterator[tuple[Loc, str]]:
    """Every templated string of the spec and of its arms' overlays, with its place."""
    for key in TEMPLATED:
        if key in mapping:
            yield from _walk((key,), mapping[key])
    arms = mapping.get("arms")
    if isinstance(arms, dict):
        for arm, overlay in arms.items():
            if isinstance(overlay, dict):
                for key in TEMPLATED:
                    if key in overlay:
                        yield from _walk(("arms", arm, key), overlay[key])


def _walk(at: Loc, value: Any) -> Iterator[tuple[Loc, str]]:
    if isinstance(value, str):
        if any(marker in value for marker in _MARKERS):
            yield at, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(at + (key,), item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(at + (i,), item)


def put(root: dict[str, Any], at: Loc, value: str) -> None:
    target: Any = root
    for part in at[:-1]:
        target = target[part]
    target[at[-1]] = value
