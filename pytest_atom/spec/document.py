"""A spec file's YAML as plain data plus the node of every value and key, so every
later error can name the line and column of what it is about."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from pytest_atom import yamldoc
from pytest_atom.errors import SpecError, YamlDocError
from pytest_atom.spec.types import Loc


class _Loader(yaml.SafeLoader):
    """SafeLoader without implicit timestamps, so `description: 2024-01-01` stays a string
    and ``Spec.raw`` stays JSON-serialisable for hashing."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class Document:
    """Plain data of one YAML file, plus the node of every value and key by location."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.values: dict[Loc, yaml.Node] = {}
        self.keys: dict[Loc, yaml.Node] = {}
        try:  # compose refuses alias bombs and loops before `_build` walks them
            _, self.data = yamldoc.load(
                text, _Loader, lambda loader, node: self._build(loader, node, ())
            )
        except YamlDocError as exc:
            raise SpecError(exc.message, path, exc.line, exc.column) from None

    def _build(self, loader: yaml.SafeLoader, node: yaml.Node, loc: Loc) -> Any:
        self.values[loc] = node
        if isinstance(node, yaml.SequenceNode):
            return [self._build(loader, item, loc + (i,)) for i, item in enumerate(node.value)]
        if not isinstance(node, yaml.MappingNode):
            return loader.construct_object(node, deep=True)
        own = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
        loader.flatten_mapping(node)  # `<<: *anchor` pairs come first; own keys may override
        merged = len(node.value) - own
        out: dict[str, Any] = {}
        own_keys: set[str] = set()
        for i, (key_node, value_node) in enumerate(node.value):
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise self.error(f"keys must be strings, got {show_value(key)}", key_node)
            if i >= merged:
                if key in own_keys:  # YAML would silently keep the last one
                    raise self.error(f"duplicate key {key!r}", key_node)
                own_keys.add(key)
            self.keys[loc + (key,)] = key_node
            out[key] = self._build(loader, value_node, loc + (key,))
        return out

    def error(
        self, message: str, at: Loc | yaml.Node, key: bool = False, suggestion: str | None = None
    ) -> SpecError:
        """A SpecError pointing at a node, or at the nearest known node of a location."""
        if isinstance(at, yaml.Node):
            node: yaml.Node | None = at
        else:
            node = self.keys.get(at) if key else None
            while node is None and at:
                node, at = self.values.get(at), at[:-1]
            node = node or self.values.get(())
        mark = node.start_mark if node is not None else None
        return SpecError(message, self.path, *mark_position(mark), suggestion=suggestion)

    def line(self, loc: Loc) -> int:
        return self.values[loc].start_mark.line + 1

    def arm_view(self, spec: Loc, arm: Loc, merged: dict[str, Any]) -> Document:
        """This document with the spec at `spec` replaced by `merged` (an arm's overlay at
        `arm` over it): a key the arm set is found at the arm's node, so an error in it
        names the arm's line; the rest still names the spec's own."""
        view = copy.copy(self)
        view.values, view.keys = dict(self.values), dict(self.keys)
        for table, own in ((view.values, self.values), (view.keys, self.keys)):
            for at, node in own.items():
                if at[: len(arm)] == arm and len(at) > len(arm):
                    table[spec + at[len(arm) :]] = node
        if spec:
            view.data = copy.deepcopy(self.data)
            view.data["specs"][spec[1]] = merged
        else:
            view.data = merged
        return view


def show_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, (dict, list)):
        noun = "mapping" if isinstance(value, dict) else "list"
        return f"a {noun}" if value else f"an empty {noun}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def mark_position(mark: yaml.Mark | None) -> tuple[int | None, int | None]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
