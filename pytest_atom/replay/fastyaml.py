"""Load YAML as ``yaml.load(text, CSafeLoader)`` does, several times faster.

Loading a cassette is dominated by PyYAML's cost per node, not per byte: a 1,000-interaction
cassette has ~40,000 nodes, and ``yaml.load`` builds a node object (with two position marks)
for each, resolves its tag in Python and then constructs it through generators. Here the
same libyaml parser's events are turned into dicts, lists and strings directly.

Only what a safe load of plain block YAML yields is built this way: untagged scalars (plain
ones resolved with PyYAML's own resolver and constructors), mappings, sequences, anchors and
aliases. Anything else (an explicit tag, a merge key ``<<``, a collection as a key, several
documents, invalid YAML) is left to ``yaml.load`` itself, so the result, or the error, is
always the one ``yaml.load`` gives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceStartEvent,
)
from yaml.nodes import ScalarNode

_CLoader: type | None = getattr(yaml, "CSafeLoader", None)
_STR = "tag:yaml.org,2002:str"
_resolve: Callable[[type, str, tuple[bool, bool]], str] = yaml.resolver.Resolver().resolve
_constructor = yaml.constructor.SafeConstructor()


class _Unusual(Exception):
    """Something the fast path leaves to yaml.load."""


def load(text: str) -> Any:
    if _CLoader is None:  # PyYAML without libyaml: no events worth having
        return yaml.load(text, Loader=yaml.SafeLoader)
    try:
        return _build(text)
    except Exception:  # noqa: BLE001 - yaml.load decides: the same result, or its error
        return yaml.load(text, Loader=_CLoader)


def _scalar(event: ScalarEvent, plain: dict[str, Any]) -> Any:
    """The scalar's value; `plain` caches resolved plain scalars (keys repeat a lot)."""
    if event.tag is not None:
        raise _Unusual
    value = event.value
    if not event.implicit[0]:  # quoted or block: a string
        return value
    if value in plain:
        return plain[value]
    tag = _resolve(ScalarNode, value, (True, False))
    if tag != _STR:  # int, float, bool, null, timestamp: immutable, so safe to cache
        value = _constructor.yaml_constructors[tag](_constructor, ScalarNode(tag, value))
    plain[event.value] = value
    return value


def _build(text: str) -> Any:
    assert _CLoader is not None
    loader = _CLoader(text)
    try:
        get = loader.get_event
        get()  # StreamStartEvent
        if get().__class__ is not DocumentStartEvent:
            raise _Unusual  # an empty stream
        anchors: dict[str, Any] = {}
        plain: dict[str, Any] = {}
        # Open collections: [container, key awaiting its value] (key only for mappings).
        stack: list[list[Any]] = []
        unset, pending = object(), object()
        root: Any = unset
        while True:
            event = get()
            kind = event.__class__
            opened = kind is MappingStartEvent or kind is SequenceStartEvent
            if kind is ScalarEvent:
                value = _scalar(event, plain)
            elif opened:
                if event.tag is not None:
                    raise _Unusual
                value = {} if kind is MappingStartEvent else []
            elif kind is AliasEvent:
                if event.anchor not in anchors:
                    raise _Unusual  # an undefined alias: yaml.load's error
                value = anchors[event.anchor]
            elif kind is DocumentEndEvent:
                if root is unset or stack or get().__class__ is DocumentStartEvent:
                    raise _Unusual  # several documents: yaml.load's error
                return root
            else:  # the end of a collection
                done = stack.pop()
                if done[1] is not pending:
                    raise _Unusual
                if not stack:
                    root = done[0]
                continue
            anchor = None if kind is AliasEvent else event.anchor
            if anchor is not None:  # a collection's too, as it opens: it may contain itself
                if anchor in anchors:
                    raise _Unusual  # a duplicate anchor: yaml.load's error
                anchors[anchor] = value
            if stack:
                top = stack[-1]
                container = top[0]
                if container.__class__ is list:
                    container.append(value)
                elif top[1] is pending:
                    if opened or value.__class__ in (list, dict):
                        raise _Unusual  # a collection as a key (a merge key `<<` never gets here)
                    top[1] = value
                else:
                    container[top[1]] = value
                    top[1] = pending
            else:
                root = value
            if opened:
                stack.append([value, pending])
    finally:
        loader.dispose()
